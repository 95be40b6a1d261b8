"""Algorithms as explicit schedules of transfers, run on numpy buffers (chapters 05 and 06).

Rings (:mod:`~commlab.schedules.ring`: one way, and the bidirectional pair), binary and double binary trees
(:mod:`~commlab.schedules.tree`), the
naive central reduce and recursive doubling (:mod:`~commlab.schedules.central`), Rabenseifner's halving and
doubling (:mod:`~commlab.schedules.halving_doubling`) and NCCL's PAT-style log-step all-gather and
reduce-scatter (:mod:`~commlab.schedules.pat`).

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
from commlab.schedules import central, halving_doubling, pat, ring, tree
from commlab.schedules.execute import Run, bytes_sent_per_rank, expected, run
from commlab.schedules.model import Schedule, Transfer, chunk_bounds, steps_from
from commlab.schedules.trace import Departure, compare_trace, describe_step, describe_transfer

ALGORITHMS = ("ring-reduce-scatter", "ring-all-gather", "ring-all-reduce", "bidir-ring-all-reduce", "tree-all-reduce",
              "double-tree-all-reduce", "naive-all-reduce", "recursive-doubling-all-reduce",
              "halving-doubling-all-reduce", "pat-reduce-scatter", "pat-all-gather")
#: The most ranks a schedule is built for.
MAX_RANKS = 4096
#: The most transfers a schedule is built with: every transfer is a Python object (about 150 bytes with its
#: share of the steps), so a ring all-reduce on 1024 ranks (2,095,104 transfers) takes a few seconds and a few
#: hundred MB, and one on 4096 ranks (33.5 million) would not fit in memory.
MAX_TRANSFERS = 2_100_000
#: Transfers per rank pair of the rings: N - 1 steps of N transfers per pass (reduce-scatter, all-gather).
_RING_PASSES = {"ring-reduce-scatter": 1, "ring-all-gather": 1, "ring-all-reduce": 2, "bidir-ring-all-reduce": 4}

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


def quadratic_transfers(algorithm: str, n_ranks: int) -> int | None:
    """How many transfers a schedule whose transfers grow as N squared holds, without building it; None for
    the others (trees, naive, recursive doubling: O(N log N) transfers at most, cheap at any N up to MAX_RANKS).

    A transfer moves one chunk. Rings: passes x (N - 1) steps x N (the bidirectional ring: 2 rings x 2 passes).
    PAT all-gather / reduce-scatter: every rank
    sends each of the N - 1 other chunks once, N(N - 1). Rabenseifner's halving-doubling on p = 2^floor(log2 N)
    ranks: 2p(p - 1) (each rank sends p/2 + p/4 + ... + 1 = p - 1 chunks in each half), plus the N - p extra
    ranks' p chunks folded in before and handed back after, 2(N - p)p.

    >>> quadratic_transfers("ring-all-reduce", 1024), quadratic_transfers("tree-all-reduce", 1024)
    (2095104, None)
    >>> quadratic_transfers("halving-doubling-all-reduce", 33), quadratic_transfers("pat-all-gather", 8)
    (2048, 56)
    """
    n = n_ranks
    passes = _RING_PASSES.get(algorithm)
    if passes is not None:
        return passes * (n - 1) * n
    if algorithm in ("pat-all-gather", "pat-reduce-scatter"):
        return n * (n - 1)
    if algorithm == "halving-doubling-all-reduce":
        p = 1 << (n.bit_length() - 1)
        return 2 * p * (p - 1) + 2 * (n - p) * p
    return None


def max_quadratic_ranks(algorithm: str, max_transfers: int) -> int:
    """The most ranks whose schedule stays within ``max_transfers`` transfers (MAX_RANKS for the algorithms
    whose transfers do not grow as N squared).

    >>> max_quadratic_ranks("ring-all-reduce", MAX_TRANSFERS), max_quadratic_ranks("naive-all-reduce", 10)
    (1025, 4096)
    """
    n = MAX_RANKS
    if quadratic_transfers(algorithm, n) is None:
        return n
    lo, hi = 1, n  # the count grows with N: bisect for the largest N within the budget
    while lo < hi:
        mid = (lo + hi + 1) // 2
        count = quadratic_transfers(algorithm, mid)
        lo, hi = (mid, hi) if count is not None and count <= max_transfers else (lo, mid - 1)
    return lo


def build(algorithm: str, n_ranks: int) -> Schedule:
    """The schedule of ``algorithm`` (one of ALGORITHMS) for ``n_ranks`` ranks (1 to MAX_RANKS; rings, PAT and
    halving-doubling, whose transfers grow as N squared, to ``max_quadratic_ranks(algorithm, MAX_TRANSFERS)``)."""
    check_choice("algorithm", algorithm, ALGORITHMS)
    n = check_n_ranks(n_ranks, 1, MAX_RANKS)
    count = quadratic_transfers(algorithm, n)
    if count is not None and count > MAX_TRANSFERS:
        raise CommlabError(
            f"{algorithm} on {n} ranks has {count:,} transfers (they grow as N squared); at most "
            f"{MAX_TRANSFERS:,} are built, which allows up to {max_quadratic_ranks(algorithm, MAX_TRANSFERS)} ranks")
    if algorithm == "ring-reduce-scatter":
        return Schedule(algorithm, "reduce_scatter", n, n, tuple(ring.reduce_scatter_steps(n)))
    if algorithm == "ring-all-gather":
        return Schedule(algorithm, "all_gather", n, n, tuple(ring.all_gather_steps(n)))
    if algorithm == "ring-all-reduce":
        return Schedule(algorithm, "all_reduce", n, n, tuple(ring.all_reduce_steps(n)))
    if algorithm == "bidir-ring-all-reduce":
        return Schedule(algorithm, "all_reduce", n, 2 * n, tuple(ring.bidirectional_all_reduce_steps(n)))
    if algorithm in ("tree-all-reduce", "double-tree-all-reduce"):
        if algorithm == "double-tree-all-reduce" and n == 1:
            return Schedule(algorithm, "all_reduce", 1, 2, ())
        return _tree_schedule(algorithm, n)
    if algorithm == "naive-all-reduce":
        return Schedule(algorithm, "all_reduce", n, 1, steps_from(central.naive_transfers(n)))
    if algorithm == "halving-doubling-all-reduce":
        n_chunks, transfers = halving_doubling.rabenseifner_transfers(n)
        return Schedule(algorithm, "all_reduce", n, n_chunks, steps_from(transfers))
    if algorithm == "pat-reduce-scatter":
        return Schedule(algorithm, "reduce_scatter", n, n, steps_from(pat.pat_reduce_scatter_transfers(n)))
    if algorithm == "pat-all-gather":
        return Schedule(algorithm, "all_gather", n, n, steps_from(pat.pat_all_gather_transfers(n)))
    return Schedule(algorithm, "all_reduce", n, 1, steps_from(central.recursive_doubling_transfers(n)))


def check_algorithm(algorithm: str) -> str:
    """Return the algorithm name or raise CommlabError listing ALGORITHMS."""
    check_choice("algorithm", algorithm, ALGORITHMS)
    return algorithm


__all__ += ["check_algorithm", "CommlabError", "MAX_RANKS", "MAX_TRANSFERS", "max_quadratic_ranks",
            "quadratic_transfers"]
