"""Time of any collective on a catalogue link, and nccl-tests' algbw and busbw (chapters 04 and 08).

algbw = S / t and busbw = algbw * F(N) (nccl-tests ``doc/PERFORMANCE.md``), S the `size` column
(commlab.collectives), in GB/s = 1e9 bytes/s.
"""
from __future__ import annotations

import numpy as np

from commlab import collectives
from commlab.cost import alpha_beta as ab
from commlab.errors import CommlabError
from commlab.hardware import Link, link as find_link
from commlab.units import GB


def algbw_GBps(nbytes, t_s):
    """S / t in 1e9 bytes per second."""
    t = np.asarray(t_s, dtype=float)
    if np.any(t <= 0):
        raise CommlabError(f"time must be positive, got {t_s!r}")
    return np.asarray(nbytes, dtype=float) / t / GB


def busbw_GBps(op: str, nbytes, t_s, n_ranks: int):
    """algbw * F(N): the number to hold against a link's one-way bandwidth."""
    return algbw_GBps(nbytes, t_s) * collectives.busbw_factor(op, n_ranks)


def _chain_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    """Pipelined chain (broadcast, reduce): (N-1) alpha + S/B when the pieces are small enough."""
    s, n, a, b = ab.checked_inputs(nbytes, n_ranks, alpha_s, bw_Bps)
    return np.where(n <= 1, 0.0, (n - 1) * a + s / b)


def _p2p_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    n = np.asarray(n_ranks, dtype=float)
    return np.where(n <= 1, 0.0, ab.p2p_time_s(nbytes, alpha_s, bw_Bps))


def collective_time_s(op: str, nbytes, n_ranks, link: Link | str, algo: str = "ring"):
    """Alpha-beta time of ``op`` on ``link`` (its latency_s and one-way bandwidth), S = the `size` column.

    all_reduce uses ``algo``; reduce_scatter, all_gather, all_to_all, gather and scatter move (N-1)/N * S
    through each rank's link in N-1 steps; broadcast and reduce run as a pipelined chain; sendrecv is one message.

    >>> round(float(collective_time_s("all_reduce", 14e9, 8, "nvlink4")) * 1e3, 1)
    54.5
    """
    item = find_link(link)
    a, b = item.latency_s, item.unidir_Bps
    name = collectives.canonical(op)
    if name == "all_reduce":
        return ab.all_reduce_time_s(algo, nbytes, n_ranks, a, b)
    if name in ("reduce_scatter", "all_gather", "all_to_all", "gather", "scatter"):
        return ab.ring_reduce_scatter_time_s(nbytes, n_ranks, a, b)
    if name in ("broadcast", "reduce"):
        return _chain_time_s(nbytes, n_ranks, a, b)
    return _p2p_time_s(nbytes, n_ranks, a, b)
