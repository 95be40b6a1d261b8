"""Algorithms as explicit schedules of transfers, run on numpy buffers (chapters 05 and 06).

Rings (:mod:`~commlab.schedules.ring`), binary and double binary trees (:mod:`~commlab.schedules.tree`), the
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

ALGORITHMS = ("ring-reduce-scatter", "ring-all-gather", "ring-all-reduce", "tree-all-reduce",
              "double-tree-all-reduce", "naive-all-reduce", "recursive-doubling-all-reduce",
              "halving-doubling-all-reduce", "pat-reduce-scatter", "pat-all-gather")

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


def build(algorithm: str, n_ranks: int) -> Schedule:
    """The schedule of ``algorithm`` (one of ALGORITHMS) for ``n_ranks`` ranks (1 to 4096)."""
    check_choice("algorithm", algorithm, ALGORITHMS)
    n = check_n_ranks(n_ranks, 1, 4096)
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


__all__ += ["check_algorithm", "CommlabError"]
