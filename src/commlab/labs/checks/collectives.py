"""Checks of the collectives lab (labs/collectives.ipynb): the predicted table against
:mod:`commlab.collectives` (the assertion names the first entry missed without giving its value away), every
collective run through the learner's ``run_collective`` on 4 ranks against the numpy reference, and the
all-reduce rebuilt from reduce-scatter and all-gather against ``dist.all_reduce``.
"""
from __future__ import annotations

from commlab.labs.checking import Outcome
from commlab.labs.checks import call

N_RANKS, LENGTH = 4, 8


def check_my_predictions(fn, n_ranks: int = N_RANKS, length: int = LENGTH) -> Outcome:
    """27 entries (n_out, last, sent_nbytes for nine collectives); ``details["rows"]`` for the notebook's table."""
    from commlab.labs.solutions import collectives as lab

    predicted, failed = call("my_predictions", fn)
    if failed:
        return failed
    rows, problems = lab.grade_predictions(predicted, n_ranks, length)
    if not problems:
        return Outcome(details={"rows": rows})
    missed = [f"{op} {field}" for op, field, got, want, right in rows if not right]
    return Outcome(problem=f"{len(problems)} entries differ from commlab.collectives (marked ✗ in the table), first "
                           f"{missed[0] if missed else problems[0]}: think again about that one and run the cell again",
                   details={"rows": rows})


def check_run_collective(fn, n_ranks: int = N_RANKS, length: int = LENGTH, timeout_s: float = 60.0) -> Outcome:
    """Every collective on ``n_ranks`` ranks; ``details["verdicts"]`` per collective."""
    from commlab.labs.solutions import collectives as lab

    return lab.check_collectives(fn, n_ranks, length, timeout_s=timeout_s)


def check_all_reduce_by_halves(fn, n_ranks: int = N_RANKS, length: int = 4096, timeout_s: float = 30.0) -> Outcome:
    from commlab.labs.solutions import collectives as lab

    return lab.check_all_reduce_by_halves(fn, n_ranks, length, timeout_s=timeout_s)
