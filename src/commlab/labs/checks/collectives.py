"""Checks of the collectives lab (labs/collectives.ipynb): the predicted table against
:mod:`commlab.collectives` (the assertion names the first entry missed without giving its value away), every
collective run through the learner's ``run_collective`` on 4 ranks against the numpy reference, and the
all-reduce rebuilt from reduce-scatter and all-gather against ``dist.all_reduce``. When a class is graded, the
live checks also run on cases drawn from the seed (``drawn_<task>``): 2 to 4 ranks, another root, lengths and
inputs drawn, so that code which returns the public cases' answers instead of communicating fails.

``my_predictions`` has no drawn cases: it takes no input (its table is the one the notebook asks for, N = 4
ranks of 8 elements), so there is nothing to draw.
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


# --- cases drawn when a class is graded (commlab labs check --seed) -------------------------------------------

def _drawn(seed: int, task: str) -> tuple[int, int, int]:
    """(ranks from 2 to 4, chunks per rank from 1 to 6, a seed for the inputs) drawn from ``seed``."""
    import numpy as np

    rng = np.random.default_rng([seed, sum(task.encode())])
    return int(rng.integers(2, N_RANKS + 1)), int(rng.integers(1, 7)), int(rng.integers(2**31))


def drawn_run_collective(fn, seed: int, timeout_s: float = 60.0) -> Outcome:
    """Every collective on 2 to 4 ranks, a root other than 0 where there are ranks for it, drawn inputs."""
    import numpy as np

    from commlab.labs.solutions import collectives as lab

    n_ranks, per_rank, inputs_seed = _drawn(seed, "run_collective")
    root = int(np.random.default_rng(inputs_seed).integers(1, n_ranks))
    return lab.check_collectives(fn, n_ranks, n_ranks * per_rank, timeout_s=timeout_s, root=root, seed=inputs_seed)


def drawn_all_reduce_by_halves(fn, seed: int, timeout_s: float = 30.0) -> Outcome:
    """2 to 4 ranks, a length of up to 6000 elements (a multiple of the ranks), inputs drawn from ``seed``."""
    from commlab.labs.solutions import collectives as lab

    n_ranks, per_rank, inputs_seed = _drawn(seed, "all_reduce_by_halves")
    return lab.check_all_reduce_by_halves(fn, n_ranks, n_ranks * per_rank * 250, timeout_s=timeout_s,
                                          seed=inputs_seed)
