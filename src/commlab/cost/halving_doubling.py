"""Alpha-beta times of Rabenseifner's halving-doubling all-reduce and of log-step (PAT-style) all-gather and
reduce-scatter (chapter 06). The schedules are :mod:`commlab.schedules.halving_doubling` and
:mod:`commlab.schedules.pat`.

| algorithm | time | source |
| --- | --- | --- |
| halving-doubling all-reduce, p = 2^floor(log2 N) | 2 log2(p) alpha + 2 (p-1)/p S/B, + 2(alpha + S/B) if N != p | [1] |
| log-step all-gather / reduce-scatter (Bruck; PAT) | ceil(log2 N) alpha + (N-1)/N S/B, S the gathered buffer | [2] |

[1] Thakur, Rabenseifner, Gropp, IJHPCA 2005, sec. 4.5. [2] Bruck et al. 1997; Jeaugey, arXiv 2506.20252.

Halving step k sends S/2^(k+1) bytes, so the steps add up to (p-1)/p S each way: the ring's bandwidth term with
log2 p latency terms instead of p - 1. In this model, on a network where every pair of ranks has the full
link to itself, halving-doubling matches the ring's bandwidth term when N is a power of two and has fewer
latency terms; when N is not, the fold step first sends the N - p extra ranks' whole S (and the unfold sends it
back), 2 S/B more, so at large sizes it is slower than the ring by (2 (p-1)/p + 2) / (2 (N-1)/N): 2.25x at
N = 3, about 2.05x at N = 12 (the doctest below). Rings also win on real machines because
each ring hop joins neighbours (one NVLink, one rail of the fabric), while halving-doubling's partners N/2
apart share the links in between. NCCL's own tuner gives PAT a latency of log2(nodes) x (network latency / 3.5) plus a
still-linear 2.8 us per rank (``tuning.cc``, NCCL 2.23 onwards): its aggregation keeps buffers bounded at the
price of more, smaller steps for large messages.

>>> round(float(rabenseifner_all_reduce_time_s(14e9, 8, 0.0, 450e9)) * 1e3, 2)   # = ring's 54.44 ms at alpha 0
54.44
>>> float(rabenseifner_all_reduce_time_s(8, 1024, 1e-6, 50e9)) * 1e6 < 21      # 20 latency terms, not 2046
True
>>> from commlab.cost.alpha_beta import ring_all_reduce_time_s
>>> [round(float(rabenseifner_all_reduce_time_s(1e9, n, 0.0, 50e9) / ring_all_reduce_time_s(1e9, n, 0.0, 50e9)), 2)
...  for n in (3, 4, 12, 16)]                                                  # the fold step when N != 2^k
[2.25, 1.0, 2.05, 1.0]
"""
from __future__ import annotations

import numpy as np

from commlab.cost.alpha_beta import checked_inputs  # the same checked inputs as every alpha-beta model


def rabenseifner_all_reduce_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """2 log2(p)(alpha) + 2 (p-1)/p S/B, + 2 (alpha + S/B) when N is not a power of two p."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    log_p = np.floor(np.log2(n))
    p = 2.0**log_p
    core = 2 * log_p * a + 2 * (p - 1) / p * s / b
    return core + np.where(p < n, 2 * (a + s / b), 0.0)


def log_step_all_gather_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """ceil(log2 N) alpha + (N-1)/N S/B (Bruck's all-gather, the logical schedule of PAT)."""
    s, n, a, b = checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    return np.ceil(np.log2(n)) * a + (n - 1) / n * s / b


def log_step_reduce_scatter_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """The same as the all-gather, run backwards: ceil(log2 N) alpha + (N-1)/N S/B."""
    return log_step_all_gather_time_s(nbytes, n_ranks, alpha_s, bw_Bps)
