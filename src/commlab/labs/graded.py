"""The rows a grading run reports (:class:`Graded`, the keys of ``labs check --json``) and how a class is
graded (:class:`Options`, the flags of ``labs check``); both importable from :mod:`commlab.labs.grade`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commlab.errors import CommlabError

#: The longest one lab's checks may take, seconds (the ring's checks take about 15 s on 2 cores).
DEFAULT_TIMEOUT_S = 600.0
#: The longest all of one student's labs may take together, seconds.
DEFAULT_STUDENT_TIMEOUT_S = 1800.0
#: The most bytes of a student's folder copied into their sandbox (their own files only).

STATUSES = ("pass", "fail", "skipped", "error")


@dataclass(frozen=True)
class Graded:
    """One task (or a drawn or hidden case) of one lab for one learner; the keys of ``labs check --json``."""

    learner: str | None
    lab: str
    task: str
    passed: bool
    problem: str
    seconds: float
    module: str
    status: str = "pass"
    """pass, fail, skipped (not handed in) or error (the grader failed, not the student)."""
    kind: str = "public"
    """public (the notebook's check), drawn (cases drawn from the seed) or hidden (the instructor's)."""
    points: float = 0.0
    points_possible: float = 0.0


@dataclass(frozen=True)
class Options:
    """How a class is graded (``commlab labs check`` flags)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    student_timeout_s: float = DEFAULT_STUDENT_TIMEOUT_S
    jobs: int = 1
    seed: int | None = None
    checks_dir: str | None = None
    logs_dir: str | None = None
    limits: Any = None               # commlab.labs.sandbox.Limits (default limits when None)

    def __post_init__(self):
        for name in ("timeout_s", "student_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise CommlabError(f"{name} must be a number of seconds > 0, got {value!r}")
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise CommlabError(f"jobs must be a whole number >= 1, got {self.jobs!r}")
        if self.checks_dir is not None and not Path(self.checks_dir).is_dir():
            raise CommlabError(f"checks_dir {self.checks_dir!r} is not a folder")
