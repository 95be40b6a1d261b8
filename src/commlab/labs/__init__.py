"""The labs' "your turn" cells: the reader's code kept as a module, or the reference solution in CI.

A lab notebook is committed with cells for the reader to fill in. In a lab::

    from commlab.labs import reader_or_solution

    @reader_or_solution("build_your_own_ring")
    def reduce_scatter_steps(buffer, tracer, first_step=0):
        ...  # the reader's code

Running such a cell keeps it in ``labs/mine/<lab>.py`` (:mod:`commlab.labs.mine`: never a skeleton over the
reader's code, every earlier version kept), which the lab's script (``labs/scripts/<lab>.py``) and
``commlab labs check`` import (:mod:`commlab.labs.code`). CI runs the same notebooks with
``COMMLAB_LAB_SOLUTIONS=1``: every function the reader writes is then replaced by the reference solution from
``commlab.labs.solutions.<lab>``, so the lab is checked end to end without a second, hand-copied notebook.
:mod:`commlab.labs.registry` lists every lab's tasks and :mod:`commlab.labs.checks` judges them.

The solutions live in the package (not next to the notebook) so that spawned ranks and torchrun scripts can
import them like any other module.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from commlab.errors import CommlabError

ENV_VAR = "COMMLAB_LAB_SOLUTIONS"


def solutions_enabled() -> bool:
    """True when COMMLAB_LAB_SOLUTIONS is 1/true/yes (CI and `make test` set it)."""
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def solution(lab: str, name: str) -> Callable:
    """The reference solution ``name`` of ``lab`` (commlab.labs.solutions.<lab>.<name>)."""
    try:
        module = importlib.import_module(f"commlab.labs.solutions.{lab}")
    except ModuleNotFoundError:
        raise CommlabError(f"no solutions for lab {lab!r} (expected commlab/labs/solutions/{lab}.py)") from None
    if not hasattr(module, name):
        known = ", ".join(n for n in dir(module) if not n.startswith("_"))
        raise CommlabError(f"lab {lab!r} has no solution named {name!r}; it has: {known}")
    return getattr(module, name)


def reader_or_solution(lab: str) -> Callable[[Callable], Callable]:
    """Decorator: keep the reader's function (and, in a notebook, the cell in labs/mine/<lab>.py), or swap in
    the solution of the same name when solutions are on."""

    def decorate(fn: Callable) -> Callable:
        _keep(lab, fn)
        if not solutions_enabled():
            return fn
        chosen = solution(lab, fn.__name__)
        print(f"{ENV_VAR}=1: using the reference solution for {fn.__name__}()")
        return chosen

    return decorate


def _keep(lab: str, fn: Callable) -> None:
    """Save the cell that defines ``fn`` (commlab.labs.mine); a failure to save is said, never raised."""
    from commlab.labs import mine

    try:
        mine.save_from_function(lab, fn)
    except Exception as exc:  # noqa: BLE001 - saving must never break the reader's cell
        print(f"commlab.labs: could not keep this cell in labs/mine/{lab}.py: {type(exc).__name__}: {exc}")


def restore(lab: str, task: str) -> str:
    """Put the saved code of ``task`` back into the current notebook cell (see commlab.labs.mine.restore)."""
    from commlab.labs import mine

    return mine.restore(lab, task)
