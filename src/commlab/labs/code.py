"""Whose code a lab script or a grader runs: the learner's ``labs/mine/<lab>.py``, or the reference solution.

>>> code = Code("ring_vs_tree", None, "--reference")
>>> code.notice()
'ring_vs_tree: running the reference solution (commlab.labs.solutions.ring_vs_tree): --reference'
>>> code.function("predict_crossover_nbytes")(4, 1e-6, 1e9)
800.0
"""
from __future__ import annotations

import importlib
from pathlib import Path

from commlab.errors import CommlabError
from commlab.labs import mine


class Code:
    """The functions of one lab, from the learner's module (``path``) or from the reference (``path`` None,
    ``why`` says why). Plain data: it travels to spawned ranks, which load the module themselves."""

    def __init__(self, lab: str, path: Path | None, why: str = ""):
        self.lab, self.path, self.why = lab, path, why

    def __repr__(self) -> str:
        return f"Code({self.lab!r}, {self.path!r}, {self.why!r})"

    @property
    def mine(self) -> bool:
        return self.path is not None

    def notice(self) -> str:
        """The first line a lab script prints: whose code runs, and why."""
        if self.path is not None:
            return f"{self.lab}: running your code from {mine.shown(self.path)}"
        return f"{self.lab}: running the reference solution (commlab.labs.solutions.{self.lab}): {self.why}"

    def module(self):
        """The learner's module (imported afresh) or ``commlab.labs.solutions.<lab>``."""
        if self.path is not None:
            return mine.load_module(self.path, self.lab)
        return importlib.import_module(f"commlab.labs.solutions.{self.lab}")

    def function(self, name: str):
        """The function ``name``; one that is missing from the learner's module raises NotImplementedError when
        called, so that the check says it is not written yet."""
        found = getattr(self.module(), name, None)
        if found is not None:
            return found
        where = mine.shown(self.path) if self.path is not None else f"commlab.labs.solutions.{self.lab}"

        def missing(*args, **kwargs):
            raise NotImplementedError(f"{name} is missing from {where}")

        missing.__name__ = name
        return missing


def choose(lab: str, reference: bool = False, folder: str | Path | None = None) -> Code:
    """The learner's module when it exists, else the reference; ``reference`` (``--reference``) or
    ``COMMLAB_LAB_SOLUTIONS=1`` force the reference."""
    from commlab.labs import ENV_VAR, solutions_enabled

    if reference:
        return Code(lab, None, "--reference")
    if solutions_enabled():
        return Code(lab, None, f"{ENV_VAR}=1")
    try:
        path = mine.module_path(lab, folder)
    except CommlabError as exc:
        return Code(lab, None, str(exc))
    if path.exists():
        return Code(lab, path)
    return Code(lab, None, f"there is no {mine.shown(path)} yet (the notebook writes it when you run its "
                           "'your turn' cells)")
