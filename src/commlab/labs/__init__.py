"""The labs' switch between the reader's code and the reference solution.

A lab notebook is committed with cells for the reader to fill in. CI runs the same notebook with
``COMMLAB_LAB_SOLUTIONS=1``: every function the reader writes is then replaced by the reference solution from
``commlab.labs.solutions.<lab>``, so the lab is checked end to end without a second, hand-copied notebook.

In a lab::

    from commlab.labs import reader_or_solution

    @reader_or_solution("build_your_own_ring")
    def ring_reduce_scatter(rank, n_ranks, tensor, tracer):
        ...  # the reader's code

The solutions live in the package (not next to the notebook) so that spawned ranks and torchrun scripts can
import them like any other module.
"""
from __future__ import annotations

import importlib
import os
from typing import Callable

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
    """Decorator: keep the reader's function, or swap in the solution of the same name when solutions are on."""

    def decorate(fn: Callable) -> Callable:
        if not solutions_enabled():
            return fn
        chosen = solution(lab, fn.__name__)
        print(f"{ENV_VAR}=1: using the reference solution for {fn.__name__}()")
        return chosen

    return decorate
