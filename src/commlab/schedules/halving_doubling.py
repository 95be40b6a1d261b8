"""Rabenseifner's all-reduce: recursive halving, then recursive doubling (chapter 06).

Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1),
2005, sec. 4.5: MPICH uses it for long all-reduces. For p ranks, p a power of two, the buffer is cut into p
chunks.

* Reduce-scatter by recursive halving, distances p/2, p/4, ..., 1: rank r pairs with r XOR d and sends the
  half of its current block that its partner keeps (the aligned block of d chunks that contains the partner),
  adding what it receives; after log2 p steps rank r holds the sum of chunk r.
* All-gather by recursive doubling, distances 1, 2, ..., p/2: rank r sends the aligned block of d chunks it
  holds to r XOR d; after log2 p steps everyone has everything.

Each rank sends (p-1)/p S in each half, 2(p-1)/p S in all: the ring's volume, the least an all-reduce can move,
in 2 log2 p steps instead of the ring's 2(p-1). With N not a power of two, the N - p ranks above the largest
power of two p first fold their whole buffer into rank r - p and get the result back at the end (two more steps
of S bytes), as :mod:`commlab.schedules.central` does for recursive doubling.

Halving is the transpose of doubling: read the all-gather's transfers backwards in time, with sender and
receiver swapped and adding instead of storing, and you have the reduce-scatter (:func:`transpose`). That holds
for any all-gather in which every rank receives each chunk it lacks exactly once: a broadcast tree per chunk,
run backwards, is a reduction tree. :mod:`commlab.schedules.pat` uses it too.

>>> [(t.src, t.dst, t.chunk) for t in doubling_all_gather_transfers(4) if t.step == 1 and t.src == 0]
[(0, 2, 0), (0, 2, 1)]
>>> [(t.src, t.dst, t.chunk) for t in halving_reduce_scatter_transfers(4) if t.step == 0 and t.src == 0]
[(0, 2, 2), (0, 2, 3)]
"""
from __future__ import annotations

from commlab.schedules.model import Transfer


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def largest_power_of_two(n: int) -> int:
    """The largest p = 2^k <= n."""
    return 1 << (n.bit_length() - 1)


def doubling_all_gather_transfers(p: int, first_step: int = 0) -> list[Transfer]:
    """Recursive doubling among ranks 0..p-1 (p a power of two), rank r starting with chunk r complete."""
    assert _is_power_of_two(p), p
    out, d, step = [], 1, first_step
    while d < p:
        for r in range(p):
            base = r & ~(d - 1)                                   # the aligned block of d chunks r holds
            out += [Transfer(step, r, r ^ d, c, False) for c in range(base, base + d)]
        d, step = d * 2, step + 1
    return out


def transpose(transfers: list[Transfer], first_step: int = 0) -> list[Transfer]:
    """The reduction that mirrors an all-gather: steps reversed, src and dst swapped, data added."""
    if not transfers:
        return []
    last = max(t.step for t in transfers)
    return [Transfer(first_step + last - t.step, t.dst, t.src, t.chunk, True) for t in transfers]


def halving_reduce_scatter_transfers(p: int, first_step: int = 0) -> list[Transfer]:
    """Recursive halving among ranks 0..p-1: rank r ends with the sum of chunk r."""
    return transpose(doubling_all_gather_transfers(p), first_step)


def rabenseifner_transfers(n_ranks: int) -> tuple[int, list[Transfer]]:
    """(number of chunks, transfers) of the all-reduce for any N: fold, halve, double, unfold."""
    p = largest_power_of_two(n_ranks)
    extra, chunks = n_ranks - p, range(p)
    out: list[Transfer] = []
    step = 0
    if extra:
        out += [Transfer(0, p + r, r, c, True) for r in range(extra) for c in chunks]
        step = 1
    halving = halving_reduce_scatter_transfers(p, first_step=step)
    out += halving
    step += (p.bit_length() - 1)
    out += doubling_all_gather_transfers(p, first_step=step)
    step += (p.bit_length() - 1)
    if extra:
        out += [Transfer(step, r, p + r, c, False) for r in range(extra) for c in chunks]
    return p, out
