"""Ring reduce-scatter, all-gather and all-reduce (chapter 05).

Rings run forwards: in every step rank r sends to rank (r + 1) mod N.

* Reduce-scatter, step s = 0..N-2: rank r sends chunk (r - s - 1) mod N, and the receiver adds it to its own.
  After N-1 steps rank r holds the full sum of chunk r, which is what ``dist.reduce_scatter`` gives rank r.
* All-gather, step s = 0..N-2: rank r sends chunk (r - s) mod N, which it holds complete, and the receiver
  stores it. At step 0 each rank sends its own chunk; after N-1 steps every rank holds every chunk.
* All-reduce is reduce-scatter followed by all-gather: 2(N-1) steps, each rank sending one chunk of S/N per
  step, 2(N-1)/N * S in total, which is the lower bound for all-reduce (Patarasuk and Yuan, 2009), hence
  "bandwidth-optimal".
* Bidirectional all-reduce: the buffer is cut into 2N chunks; chunks 0..N-1 run the forward ring above, chunks
  N..2N-1 the mirror ring (rank r sends to r - 1, chunk N + ((r + s + 1) mod N) in reduce-scatter step s, then
  N + ((r + s) mod N) in the all-gather). Each step every rank sends one chunk of S/(2N) to each neighbour, so
  every link carries traffic both ways; per rank the volume is still 2(N-1)/N * S (chapter 05, "two rings at
  once"). With N = 2 both neighbours are the same rank and the two halves share its link.

>>> [(t.src, t.dst, t.chunk) for t in reduce_scatter_steps(4)[0]]
[(0, 1, 3), (1, 2, 0), (2, 3, 1), (3, 0, 2)]
"""
from __future__ import annotations

from commlab.schedules.model import Transfer


def reduce_scatter_steps(n_ranks: int, first_step: int = 0) -> list[tuple[Transfer, ...]]:
    """The N-1 steps of a ring reduce-scatter."""
    n = n_ranks
    return [tuple(Transfer(first_step + s, r, (r + 1) % n, (r - s - 1) % n, True) for r in range(n))
            for s in range(n - 1)]


def all_gather_steps(n_ranks: int, first_step: int = 0, owner_offset: int = 0) -> list[tuple[Transfer, ...]]:
    """The N-1 steps of a ring all-gather; rank r starts with chunk (r + owner_offset) mod N complete."""
    n = n_ranks
    return [tuple(Transfer(first_step + s, r, (r + 1) % n, (r - s + owner_offset) % n, False) for r in range(n))
            for s in range(n - 1)]


def all_reduce_steps(n_ranks: int) -> list[tuple[Transfer, ...]]:
    """Reduce-scatter, then all-gather of the reduced chunks: 2(N-1) steps."""
    return reduce_scatter_steps(n_ranks) + all_gather_steps(n_ranks, first_step=n_ranks - 1)


def _mirror_reduce_scatter_steps(n_ranks: int, offset: int, first_step: int = 0) -> list[tuple[Transfer, ...]]:
    """The backward ring's reduce-scatter on chunks offset..offset+N-1: rank r sends to r - 1; after N-1 steps
    rank r holds the full sum of chunk offset + r."""
    n = n_ranks
    return [tuple(Transfer(first_step + s, r, (r - 1) % n, offset + (r + s + 1) % n, True) for r in range(n))
            for s in range(n - 1)]


def _mirror_all_gather_steps(n_ranks: int, offset: int, first_step: int = 0) -> list[tuple[Transfer, ...]]:
    """The backward ring's all-gather: rank r starts with chunk offset + r complete and sends to r - 1."""
    n = n_ranks
    return [tuple(Transfer(first_step + s, r, (r - 1) % n, offset + (r + s) % n, False) for r in range(n))
            for s in range(n - 1)]


def bidirectional_all_reduce_steps(n_ranks: int) -> list[tuple[Transfer, ...]]:
    """Two rings at once on 2N chunks, one each way: 2(N-1) steps of 2N transfers (see the module docstring).

    >>> [(t.src, t.dst, t.chunk) for t in bidirectional_all_reduce_steps(3)[0]]
    [(0, 1, 2), (1, 2, 0), (2, 0, 1), (0, 2, 4), (1, 0, 5), (2, 1, 3)]
    """
    n = n_ranks
    forward = all_reduce_steps(n)
    backward = (_mirror_reduce_scatter_steps(n, n) + _mirror_all_gather_steps(n, n, first_step=n - 1))
    return [f + b for f, b in zip(forward, backward)]
