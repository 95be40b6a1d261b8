"""Alpha-beta time models of the all-reduce algorithms and the other collectives (chapters 02, 05, 06).

A message of S bytes over one link costs alpha + S/B: alpha the latency of one hop (s), B the link's one-way
bandwidth (bytes/s) (Hockney, 1994). Every function takes numpy arrays or scalars and broadcasts them, so
a curve over 10^5 sizes is one call. N is the number of ranks; D = ceil(log2 N) the depth of a binary tree.

| algorithm | time | source |
| --- | --- | --- |
| ring all-reduce | 2(N-1)(alpha + S/(N B)) | Patarasuk and Yuan, JPDC 2009; Thakur et al., IJHPCA 2005 |
| ring reduce-scatter / all-gather | (N-1)(alpha + S/(N B)), S the whole buffer | same |
| binary tree all-reduce | 2 D (alpha + S/B): reduce up, broadcast down, whole buffer each hop | textbook |
| pipelined binary tree, k pieces | (2D + k - 1)(alpha + 3 S/(k B)) | see below |
| double binary tree, k pieces | (2D + k - 1)(alpha + 2 S/(k B)) | Sanders, Speck, Traeff 2009; NCCL 2.4 |
| naive (through rank 0) | 2(N-1)(alpha + S/B) | every message crosses rank 0's link |
| recursive doubling | log2(p)(alpha + S/B), p = 2^floor(log2 N), plus 2(alpha + S/B) when N != p | Thakur et al. 2005 |

Pipelining cuts the buffer into k pieces so that all levels of the tree work at once: 2D + k - 1 stages. In
the steady state an inner rank of a binary tree takes in 3 pieces per stage (two from its children on the way
up, one from its parent on the way down): hence 3 S/(k B), whose limit 3S/B is why a plain binary tree wastes
bandwidth. In NCCL's double binary tree each rank is an inner node in one tree and a leaf in the other, and
each tree carries half the data: 2 S/(k B) per stage, whose limit 2S/B matches the ring's 2(N-1)/N * S/B as N
grows. When ``n_chunks`` is None the number of pieces minimising the time is used:
k* = sqrt((2D - 1) c S / (alpha B)), giving (sqrt((2D - 1) alpha) + sqrt(c S / B))^2.

>>> float(ring_all_reduce_time_s(14e9, 8, 0.0, 450e9))   # 7B FP16 gradients on NVLink 4: chapter 09
0.05444444444444444
"""
from __future__ import annotations

import numpy as np

from commlab.errors import CommlabError, check_choice

ALL_REDUCE_ALGOS = ("ring", "tree", "pipelined-tree", "double-tree", "naive", "recursive-doubling")


def checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps):
    s, n = np.asarray(nbytes, dtype=float), np.asarray(n_ranks, dtype=float)
    a, b = np.asarray(alpha_s, dtype=float), np.asarray(bw_Bps, dtype=float)
    if np.any(s < 0) or np.any(n < 1) or np.any(a < 0) or np.any(b <= 0):
        raise CommlabError(f"need nbytes >= 0, n_ranks >= 1, alpha_s >= 0 and bw_Bps > 0; got nbytes={nbytes!r}, "
                           f"n_ranks={n_ranks!r}, alpha_s={alpha_s!r}, bw_Bps={bw_Bps!r}")
    return s, n, a, b


def p2p_time_s(nbytes, alpha_s, bw_Bps):
    """One message: alpha + S/B (Hockney). The half-bandwidth size, where both terms are equal, is alpha * B.

    >>> round(float(p2p_time_s(1e6, 1e-6, 50e9)) * 1e6, 6)   # us
    21.0
    """
    s, _, a, b = checked_inputs(nbytes, 2, alpha_s, bw_Bps)
    return a + s / b


def tree_depth(n_ranks):
    """D = ceil(log2 N), 0 for one rank."""
    n = np.asarray(n_ranks, dtype=float)
    return np.ceil(np.log2(np.maximum(n, 1.0)))


def ring_all_reduce_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """2(N-1)(alpha + S/(N B))."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    return 2 * (n - 1) * (a + s / (n * b))


def ring_reduce_scatter_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """(N-1)(alpha + S/(N B)), S the whole input buffer."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    return (n - 1) * (a + s / (n * b))


def ring_all_gather_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """(N-1)(alpha + S/(N B)), S the whole gathered buffer."""
    return ring_reduce_scatter_time_s(nbytes, n_ranks, alpha_s, bw_Bps)


def tree_all_reduce_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """2 ceil(log2 N)(alpha + S/B): the whole buffer crosses every level twice."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    return 2 * tree_depth(n) * (a + s / b)


def _pipelined(s, n, a, b, pieces_per_stage, n_chunks):
    stages_extra = np.maximum(2 * tree_depth(n) - 1, 0)
    c = pieces_per_stage
    if n_chunks is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.sqrt(stages_extra * c * s / (a * b))
        k = np.where(np.isfinite(k), np.maximum(k, 1.0), np.inf)
    else:
        if np.any(np.asarray(n_chunks) < 1):
            raise CommlabError(f"n_chunks must be at least 1, got {n_chunks!r}")
        k = np.asarray(n_chunks, dtype=float)
    with np.errstate(invalid="ignore"):
        t = np.where(np.isinf(k), c * s / b, (stages_extra + k) * (a + c * s / (k * b)))
    return np.where(n <= 1, 0.0, t)


def pipelined_tree_all_reduce_time_s(nbytes, n_ranks, alpha_s, bw_Bps, n_chunks=None):
    """(2D + k - 1)(alpha + 3S/(k B)), k the number of pieces (optimal when None)."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    return _pipelined(s, n, a, b, 3.0, n_chunks)


def double_tree_all_reduce_time_s(nbytes, n_ranks, alpha_s, bw_Bps, n_chunks=None):
    """(2D + k - 1)(alpha + 2S/(k B)), k the number of pieces (optimal when None)."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    return _pipelined(s, n, a, b, 2.0, n_chunks)


def naive_all_reduce_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """2(N-1)(alpha + S/B): N-1 buffers into rank 0, N-1 copies out, one at a time."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    return 2 * (n - 1) * (a + s / b)


def recursive_doubling_all_reduce_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """log2(p)(alpha + S/B) with p the largest power of two <= N, plus 2(alpha + S/B) when N != p."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    log_p = np.floor(np.log2(n))
    steps = log_p + np.where(2.0**log_p < n, 2.0, 0.0)
    return steps * (a + s / b)


def all_reduce_time_s(algo: str, nbytes, n_ranks, alpha_s, bw_Bps):
    """Dispatch by algorithm name (one of ALL_REDUCE_ALGOS)."""
    check_choice("all-reduce algorithm", algo, ALL_REDUCE_ALGOS)
    table = {"ring": ring_all_reduce_time_s, "tree": tree_all_reduce_time_s,
             "pipelined-tree": pipelined_tree_all_reduce_time_s, "double-tree": double_tree_all_reduce_time_s,
             "naive": naive_all_reduce_time_s, "recursive-doubling": recursive_doubling_all_reduce_time_s}
    return table[algo](nbytes, n_ranks, alpha_s, bw_Bps)
