"""Reference solutions of the ring vs tree lab (labs/ring_vs_tree.ipynb, labs/scripts/ring_vs_tree.py).

The reader writes the two alpha-beta models of chapter 06 and solves them for the size where they meet:

* ring all-reduce, ``2(N-1)(alpha + S/(N B))`` (Patarasuk and Yuan, JPDC 2009);
* binary-tree all-reduce, ``2 D (alpha + S/B)`` with ``D = ceil(log2 N)``: reduce up, broadcast down, the whole
  buffer on every hop;
* their crossover ``S* = (N-1-D) alpha B / (D - (N-1)/N)``: below it the tree's fewer latency terms win,
  above it the ring's smaller volume.

Numpy only; :mod:`commlab.cost` holds the same models, which the lab's checks compare against.
"""
from __future__ import annotations

import math

import numpy as np


def tree_depth(n_ranks: int) -> int:
    """D = ceil(log2 N): the levels of a binary tree over N ranks."""
    return math.ceil(math.log2(n_ranks)) if n_ranks > 1 else 0


def ring_time_s(nbytes, n_ranks: int, alpha_s: float, bw_Bps: float):
    """2(N-1)(alpha + S/(N B)): 2(N-1) steps, each sending a chunk of S/N bytes.

    >>> float(ring_time_s(4e6, 4, 1e-5, 1e9))            # 6 * (10 us + 1 ms)
    0.00606
    """
    s = np.asarray(nbytes, dtype=float)
    return 2 * (n_ranks - 1) * (alpha_s + s / (n_ranks * bw_Bps))


def tree_time_s(nbytes, n_ranks: int, alpha_s: float, bw_Bps: float):
    """2 ceil(log2 N)(alpha + S/B): up the tree and back down, the whole buffer on every hop.

    >>> float(tree_time_s(4e6, 4, 1e-5, 1e9))            # 4 * (10 us + 4 ms)
    0.01604
    """
    s = np.asarray(nbytes, dtype=float)
    return 2 * tree_depth(n_ranks) * (alpha_s + s / bw_Bps)


def predict_crossover_nbytes(n_ranks: int, alpha_s: float, bw_Bps: float) -> float:
    """The size where ring and plain tree all-reduce take equal time; nan when they never cross.

    Equal times: 2(N-1)(alpha + S/(N B)) = 2D(alpha + S/B), so S* = (N-1-D) alpha B / (D - (N-1)/N). The
    denominator is positive for N >= 2; when N-1 <= D (N = 2 or 3) the ring is never slower, so nan.

    >>> predict_crossover_nbytes(4, 1e-6, 1e9)            # (4-1-2) * 1e3 / (2 - 3/4) = 800 bytes
    800.0
    """
    depth = tree_depth(n_ranks)
    if n_ranks - 1 - depth <= 0:
        return float("nan")
    return (n_ranks - 1 - depth) * alpha_s * bw_Bps / (depth - (n_ranks - 1) / n_ranks)


def faster_algorithm(nbytes: float, n_ranks: int, alpha_s: float, bw_Bps: float) -> str:
    """'tree' when the plain tree's model time is below the ring's at this size, else 'ring' (a tie too).

    >>> faster_algorithm(799.0, 4, 1e-6, 1e9), faster_algorithm(801.0, 4, 1e-6, 1e9), faster_algorithm(0, 2, 1e-6, 1e9)
    ('tree', 'ring', 'ring')
    """
    tree = float(tree_time_s(nbytes, n_ranks, alpha_s, bw_Bps))
    return "tree" if tree < float(ring_time_s(nbytes, n_ranks, alpha_s, bw_Bps)) else "ring"
