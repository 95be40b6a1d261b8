"""PAT-style all-gather and reduce-scatter in ceil(log2 N) steps, for any N (chapter 06).

NCCL 2.23 added PAT, "Parallel Aggregated Trees", for all-gather and reduce-scatter with one GPU per node
(NVIDIA's NCCL 2.23 announcement, https://developer.nvidia.com/blog/new-scaling-algorithm-and-initialization-with-nvidia-collective-communications-library-2-23/;
``ncclPatEnable`` in NCCL's ``src/graph/tuning.cc`` turns it off when a node has more than one GPU). Its author
describes it as a variation of Bruck's algorithm with the dimensions taken in reverse order, far ranks first,
so that the long-distance steps carry little data, and with the aggregation bounded so that internal buffers
stay logarithmic in size (S. Jeaugey, "PAT: a new algorithm for all-gather and reduce-scatter operations at
scale", arXiv 2506.20252, 2025; Bruck et al., IEEE TPDS 8(11), 1997).

This module builds that logical schedule, without NCCL's buffer bounds and pipelining. Let D = ceil(log2 N).
Every rank's chunk spreads along a binomial tree of offsets: in step k (bit b = D-1-k, distance d = 2^b),
a rank that holds chunk c at offset o = (rank - c) mod N, where o is a multiple of 2d, forwards it to rank + d
if o + d < N. Every offset below N is reached exactly once, so each rank receives the N-1 chunks it lacks,
(N-1)/N S in all, the same bytes as the ring in D steps instead of N-1; the far steps send 1, 2, 4, ... chunks
and the last, nearest step the most.

The reduce-scatter is the all-gather run backwards (:func:`commlab.schedules.halving_doubling.transpose`):
partial sums flow down the same trees to the rank that owns the chunk, nearest ranks first.

>>> [(t.src, t.dst, t.chunk) for t in pat_all_gather_transfers(8) if t.step == 0][:3]    # distance 4 first
[(0, 4, 0), (1, 5, 1), (2, 6, 2)]
>>> [sum(1 for t in pat_all_gather_transfers(8) if t.step == k and t.src == 0) for k in range(3)]
[1, 2, 4]
"""
from __future__ import annotations

import math

from commlab.schedules.halving_doubling import transpose
from commlab.schedules.model import Transfer


def n_steps(n_ranks: int) -> int:
    """ceil(log2 N): 0 for one rank."""
    return math.ceil(math.log2(n_ranks)) if n_ranks > 1 else 0


def pat_all_gather_transfers(n_ranks: int) -> list[Transfer]:
    """The all-gather, rank r starting with chunk r; far distances first."""
    n, depth = n_ranks, n_steps(n_ranks)
    out = []
    for k in range(depth):
        d = 1 << (depth - 1 - k)
        offsets = range(0, n - d, 2 * d)                          # multiples of 2d with o + d < N
        out += [Transfer(k, r, (r + d) % n, (r - o) % n, False) for r in range(n) for o in offsets]
    return out


def pat_reduce_scatter_transfers(n_ranks: int) -> list[Transfer]:
    """The reduce-scatter: the all-gather's trees run backwards; rank r ends with the sum of chunk r."""
    return transpose(pat_all_gather_transfers(n_ranks))
