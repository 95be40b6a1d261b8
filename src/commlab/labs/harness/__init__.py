"""Harnesses: the grader's code that runs a learner's training step inside the learner's sandbox.

Some labs hand the learner's function a live model, hooks and asynchronous handles, which no wire between
two processes can carry. For those the grader does not call the learner's function itself: it asks the
learner's sandbox (:mod:`commlab.labs.sandboxed`) to run one of the harnesses named here on the learner's
function, with a model *spec*, data and settings sent as plain values. The harness builds the model, trains,
and returns plain values only (parameters, gradients); every collective the learner's code makes goes through
the grader's relay (:mod:`commlab.labs.remote`), which keeps its own record of the traffic. The harness is
the grader's code but runs beside the learner's, so nothing it reports is trusted for a verdict that the
traffic can give (:mod:`commlab.labs.checks.ddp_zero` says which is which).

>>> sorted(HARNESSES)[:2]
['ddp_zero.accumulate', 'ddp_zero.ddp']
"""
from __future__ import annotations

from collections.abc import Callable

from commlab.errors import CommlabError

#: name -> "module:function"; a harness is called as ``harness(learner_fn, *args, **kwargs)``.
HARNESSES = {
    "ddp_zero.ddp": "commlab.labs.harness.ddp_zero:train_ddp",
    "ddp_zero.accumulate": "commlab.labs.harness.ddp_zero:accumulate",
    "ddp_zero.zero1": "commlab.labs.harness.ddp_zero:train_zero1",
}


def bind(name: str, fn: Callable) -> Callable:
    """``fn`` run through the harness ``name``: a callable taking the harness's arguments."""
    import importlib

    if name not in HARNESSES:
        raise CommlabError(f"unknown harness {name!r}; expected one of: {', '.join(sorted(HARNESSES))}")
    module, _, function = HARNESSES[name].partition(":")
    harness = getattr(importlib.import_module(module), function)

    def run(*args, **kwargs):
        return harness(fn, *args, **kwargs)

    run.__name__ = getattr(fn, "__name__", name)
    return run
