"""What an exercise is: its fixed description, and one learner's instance of it.

An :class:`Exercise` is registered once under a stable id (``ch05.ring-volume``). Its ``make`` function
receives a numpy ``Generator`` (seeded per learner, see :mod:`commlab.exercises.seeding`) and returns a
:class:`Worked`: the question with this learner's numbers, the expected answer computed by commlab's own
models (never typed in), the worked solution, and the likely mistakes for these numbers.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from commlab.errors import CommlabError

_ID_RE = re.compile(r"^ch(\d\d)\.[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Mistake:
    """A slip that multiplies the answer by ``factor`` (the learner's answer divided by the right one)."""

    factor: float
    """Learner's answer / expected answer when this slip is made (an answer off the other way matches too)."""
    name: str
    """Short name, reported as ``Feedback.mistake``: "bits vs bytes"."""
    explain: str
    """One sentence: what probably went wrong and how to fix it."""

    def __post_init__(self) -> None:
        if not (isinstance(self.factor, (int, float)) and math.isfinite(self.factor) and self.factor > 0):
            raise CommlabError(f"mistake {self.name!r}: factor must be a finite number > 0, got {self.factor!r}")
        if not self.name or not self.explain:
            raise CommlabError(f"mistake with factor {self.factor}: name and explain must not be empty")


@dataclass(frozen=True)
class Worked:
    """One learner's instance of an exercise: everything that depends on the seed."""

    question: str
    """The question with this learner's numbers (plain text; $...$ LaTeX allowed)."""
    expected: float
    """The right answer, in the exercise's unit, computed by commlab."""
    solution: str
    """The worked solution with this learner's numbers."""
    mistakes: tuple[Mistake, ...] = ()
    """This exercise's likely slips for these numbers, most likely first."""
    n_ranks: int | None = None
    """Ranks in the question, if any: adds the ring factors and N to the slips looked for."""
    params: dict = field(default_factory=dict)
    """The drawn parameters (for the answer key and tests)."""

    def __post_init__(self) -> None:
        value = float(self.expected)
        if not math.isfinite(value) or value <= 0:
            raise CommlabError(f"expected answer must be a finite number > 0, got {self.expected!r}")
        object.__setattr__(self, "expected", value)


@dataclass(frozen=True)
class Exercise:
    """A registered exercise: what stays the same for every learner."""

    id: str
    """Stable id, ``chNN.short-name``."""
    title: str
    """A few words for lists."""
    unit: str
    """Unit of the expected answer (see ``commlab.exercises.answers.UNITS``)."""
    tolerance: float
    """Relative tolerance: 0.02 accepts answers within 2%. 0 means an exact whole number."""
    hint: str
    """Points to the formula and the chapter, without giving the number away."""
    make: Callable[[np.random.Generator], Worked]
    """Draws the parameters and computes the question, answer, solution and slips."""

    def __post_init__(self) -> None:
        from commlab.exercises.answers import UNITS

        if not _ID_RE.match(self.id):
            raise CommlabError(f"exercise id {self.id!r} must look like 'ch05.ring-volume'")
        if self.unit not in UNITS:
            raise CommlabError(f"exercise {self.id}: unknown unit {self.unit!r}; expected one of {sorted(UNITS)}")
        if not 0 <= self.tolerance <= 0.1:
            raise CommlabError(f"exercise {self.id}: tolerance must be from 0 to 0.1, got {self.tolerance!r}")

    @property
    def chapter(self) -> str:
        """The chapter number as two digits: "05"."""
        return self.id[2:4]                 # __post_init__ checked the id against _ID_RE: "ch05.<name>"

    @property
    def integer(self) -> bool:
        """An exact whole-number answer (a count of links, steps, messages)."""
        return self.tolerance == 0
