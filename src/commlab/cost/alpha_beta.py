"""Alpha-beta time models of the all-reduce algorithms and the other collectives (chapters 02, 05, 06).

A message of S bytes over one link costs alpha + S/B: alpha the latency of one hop (s), B the link's one-way
bandwidth (bytes/s) (Hockney, 1994). Every function takes numpy arrays or scalars and broadcasts them, so
a curve over 10^5 sizes is one call. N is the number of ranks; D = ceil(log2 N) the depth of a binary tree.

| algorithm | time | source |
| --- | --- | --- |
| ring all-reduce | 2(N-1)(alpha + S/(N B)) | Patarasuk and Yuan, JPDC 2009; Thakur et al., IJHPCA 2005 |
| ring reduce-scatter / all-gather | (N-1)(alpha + S/(N B)), S the whole buffer | same |
| bidirectional ring all-reduce | 2(N-1)(alpha + S/(N min(2B, B_port))): two rings of S/2, one each way | see below |
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

A bidirectional ring runs two rings on the two halves of the buffer, one in each direction, so each step every
rank sends S/(2N) to each neighbour: with a full-duplex point-to-point link of B each way to each neighbour
(a torus, a chain of bridged cards) both directions of every link work and the step's bandwidth term halves.
A rank whose sends all leave through one port of B_port (a GPU behind a switch) sends S/N a step whatever the
direction, so it gains only where 2B exceeds B_port: the step costs alpha + S/(N min(2B, B_port)). With N = 2
both neighbours are one rank and one link: no gain (Patarasuk and Yuan 2009 bound every all-reduce by
2(N-1)/N S / (bandwidth out of a rank); the two rings reach it with both links).

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


def bidirectional_ring_all_reduce_time_s(nbytes, n_ranks, alpha_s, bw_Bps, port_Bps=None):
    """2(N-1)(alpha + S/(N min(2B, B_port))): two rings, one each way, on S/2 each (chapter 05). ``bw_Bps`` is
    one direction of the link to each neighbour; ``port_Bps`` caps what a rank sends in all (None: no cap, every
    neighbour has its own link). With N <= 2 both rings share the one link: the one-way ring's time.

    >>> round(float(bidirectional_ring_all_reduce_time_s(14e9, 8, 0.0, 450e9)) * 1e3, 2)    # ms, own links
    27.22
    >>> round(float(bidirectional_ring_all_reduce_time_s(14e9, 8, 0.0, 450e9, port_Bps=450e9)) * 1e3, 2)
    54.44
    """
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    if port_Bps is not None and not (isinstance(port_Bps, (int, float)) and port_Bps > 0):
        raise CommlabError(f"port_Bps must be a number > 0 (or None for a link per neighbour), got {port_Bps!r}")
    out = 2 * b if port_Bps is None else np.minimum(2 * b, float(port_Bps))
    out = np.where(n > 2, out, b)
    return 2 * (n - 1) * (a + s / (n * out))


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
