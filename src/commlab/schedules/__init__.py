"""Algorithms as explicit schedules of transfers, run on numpy buffers (chapters 05 and 06).

>>> s = build("ring-all-reduce", 4)
>>> s.n_steps, len(s.steps[0])
(6, 4)
>>> import numpy as np
>>> inputs = [np.arange(10.0) * (r + 1) for r in range(4)]
>>> out = run(s, inputs).outputs
>>> bool(np.allclose(out[2], np.sum(inputs, axis=0)))
True
"""
from __future__ import annotations

from commlab.errors import CommlabError, check_choice, check_n_ranks
from commlab.schedules import central, ring, tree
from commlab.schedules.execute import Run, bytes_sent_per_rank, expected, run
from commlab.schedules.model import Schedule, Transfer, chunk_bounds, steps_from
from commlab.schedules.trace import Departure, compare_trace, describe_step, describe_transfer

ALGORITHMS = ("ring-reduce-scatter", "ring-all-gather", "ring-all-reduce", "tree-all-reduce",
              "double-tree-all-reduce", "naive-all-reduce", "recursive-doubling-all-reduce")
#: The most ranks a schedule is built for.
MAX_RANKS = 4096
#: The most transfers a schedule is built with: every transfer is a Python object (about 150 bytes with its
#: share of the steps), so a ring all-reduce on 1024 ranks (2,095,104 transfers) takes a few seconds and a few
#: hundred MB, and one on 4096 ranks (33.5 million) would not fit in memory.
MAX_TRANSFERS = 2_100_000
#: Transfers per rank pair of the rings: N - 1 steps of N transfers per pass (reduce-scatter, all-gather).
_RING_PASSES = {"ring-reduce-scatter": 1, "ring-all-gather": 1, "ring-all-reduce": 2}

__all__ = ["ALGORITHMS", "Departure", "Run", "Schedule", "Transfer", "build", "bytes_sent_per_rank",
           "chunk_bounds", "compare_trace", "describe_step", "describe_transfer", "expected", "run"]


def _tree_schedule(algorithm: str, n: int) -> Schedule:
    levels = tree.depth(n)
    transfers = tree.all_reduce_transfers(tree.tree_parents(n), 0, levels)
    n_chunks = 1
    if algorithm == "double-tree-all-reduce":
        transfers += tree.all_reduce_transfers(tree.tree_parents(n, mirrored=True), 1, levels)
        n_chunks = 2
    return Schedule(algorithm, "all_reduce", n, n_chunks, steps_from(transfers))


def ring_transfers(algorithm: str, n_ranks: int) -> int | None:
    """How many transfers a ring schedule holds, without building it: passes x (N - 1) steps x N; None for
    the other algorithms (O(N log N) transfers at most, cheap at any N up to MAX_RANKS).

    >>> ring_transfers("ring-all-reduce", 1024), ring_transfers("tree-all-reduce", 1024)
    (2095104, None)
    """
    passes = _RING_PASSES.get(algorithm)
    return None if passes is None else passes * (n_ranks - 1) * n_ranks


def max_ring_ranks(algorithm: str, max_transfers: int) -> int:
    """The most ranks whose ring schedule stays within ``max_transfers`` transfers (MAX_RANKS otherwise).

    >>> max_ring_ranks("ring-all-reduce", MAX_TRANSFERS), max_ring_ranks("naive-all-reduce", 10)
    (1025, 4096)
    """
    n = MAX_RANKS
    while n > 1 and (ring_transfers(algorithm, n) or 0) > max_transfers:
        n -= 1
    return n


def build(algorithm: str, n_ranks: int) -> Schedule:
    """The schedule of ``algorithm`` (one of ALGORITHMS) for ``n_ranks`` ranks (1 to MAX_RANKS; rings to
    ``max_ring_ranks(algorithm, MAX_TRANSFERS)``, whose transfers grow as N squared)."""
    check_choice("algorithm", algorithm, ALGORITHMS)
    n = check_n_ranks(n_ranks, 1, MAX_RANKS)
    count = ring_transfers(algorithm, n)
    if count is not None and count > MAX_TRANSFERS:
        raise CommlabError(
            f"{algorithm} on {n} ranks has {count:,} transfers (N - 1 steps of N each); at most "
            f"{MAX_TRANSFERS:,} are built, which allows up to {max_ring_ranks(algorithm, MAX_TRANSFERS)} ranks")
    if algorithm == "ring-reduce-scatter":
        return Schedule(algorithm, "reduce_scatter", n, n, tuple(ring.reduce_scatter_steps(n)))
    if algorithm == "ring-all-gather":
        return Schedule(algorithm, "all_gather", n, n, tuple(ring.all_gather_steps(n)))
    if algorithm == "ring-all-reduce":
        return Schedule(algorithm, "all_reduce", n, n, tuple(ring.all_reduce_steps(n)))
    if algorithm in ("tree-all-reduce", "double-tree-all-reduce"):
        if algorithm == "double-tree-all-reduce" and n == 1:
            return Schedule(algorithm, "all_reduce", 1, 2, ())
        return _tree_schedule(algorithm, n)
    if algorithm == "naive-all-reduce":
        return Schedule(algorithm, "all_reduce", n, 1, steps_from(central.naive_transfers(n)))
    return Schedule(algorithm, "all_reduce", n, 1, steps_from(central.recursive_doubling_transfers(n)))


def check_algorithm(algorithm: str) -> str:
    """Return the algorithm name or raise CommlabError listing ALGORITHMS."""
    check_choice("algorithm", algorithm, ALGORITHMS)
    return algorithm


__all__ += ["check_algorithm", "CommlabError", "MAX_RANKS", "MAX_TRANSFERS", "max_ring_ranks", "ring_transfers"]
