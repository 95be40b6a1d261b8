"""Naive central all-reduce and recursive doubling (chapters 05 and 06).

Naive: every rank sends its whole buffer to rank 0, one at a time, which adds it; then rank 0 sends the sum
back to each rank, one at a time. 2(N-1) steps of S bytes all through rank 0's link: time 2(N-1)(alpha + S/B),
the bottleneck that motivates the ring.

Recursive doubling: in step k rank r exchanges its whole buffer with rank r XOR 2^k and both add; log2 N
steps for a power of two. Other N: the ranks above the largest power of two p first fold their buffer into
rank r - p, and get the result back at the end (two extra steps).
"""
from __future__ import annotations

from commlab.schedules.model import Transfer


def naive_transfers(n_ranks: int) -> list[Transfer]:
    inbound = [Transfer(k, k + 1, 0, 0, True) for k in range(n_ranks - 1)]
    outbound = [Transfer(n_ranks - 1 + k, 0, k + 1, 0, False) for k in range(n_ranks - 1)]
    return inbound + outbound


def recursive_doubling_transfers(n_ranks: int) -> list[Transfer]:
    p = 1
    while p * 2 <= n_ranks:
        p *= 2
    extra = n_ranks - p
    out: list[Transfer] = []
    step = 0
    if extra:
        out += [Transfer(0, p + r, r, 0, True) for r in range(extra)]
        step = 1
    bit = 1
    while bit < p:
        out += [Transfer(step, r, r ^ bit, 0, True) for r in range(p)]
        bit, step = bit * 2, step + 1
    if extra:
        out += [Transfer(step, r, p + r, 0, False) for r in range(extra)]
    return out
