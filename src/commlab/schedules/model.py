"""The data of a schedule: transfers grouped into steps, and how a buffer is cut into chunks.

A transfer ``(step, src, dst, chunk, reduce)`` moves chunk ``chunk`` of ``src``'s buffer to ``dst``, which
adds it to its own copy of that chunk (``reduce=True``) or stores it (``reduce=False``). All transfers of one
step happen at once: each reads the buffers as they were before the step (chapter 05).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from commlab.errors import CommlabError

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather")


class Transfer(NamedTuple):
    """One message of one step (a named tuple: cheap to build by the million, ordered, hashable)."""

    step: int
    src: int
    dst: int
    chunk: int
    reduce: bool


@dataclass(frozen=True)
class Schedule:
    """An algorithm for ``n_ranks`` ranks as explicit steps of transfers."""

    algorithm: str
    """One of commlab.schedules.ALGORITHMS."""
    collective: str
    """What it computes: all_reduce, reduce_scatter or all_gather."""
    n_ranks: int
    n_chunks: int
    """How many pieces the buffer is cut into (N for rings, 1 for a plain tree, 2 for the double tree)."""
    steps: tuple[tuple[Transfer, ...], ...]

    def __post_init__(self) -> None:
        if self.collective not in COLLECTIVES:
            raise CommlabError(f"collective must be one of {COLLECTIVES}, got {self.collective!r}")
        flat = [t for step in self.steps for t in step]
        if not flat:
            return
        table = np.array(flat, dtype=np.int64)                      # [n_transfers, 5]: step src dst chunk reduce
        step_of = np.repeat(np.arange(len(self.steps)), [len(step) for step in self.steps])
        bad = ((table[:, 0] != step_of) | (table[:, 1] < 0) | (table[:, 1] >= self.n_ranks) | (table[:, 2] < 0)
               | (table[:, 2] >= self.n_ranks) | (table[:, 1] == table[:, 2]) | (table[:, 3] < 0)
               | (table[:, 3] >= self.n_chunks))
        if bad.any():
            t = flat[int(np.argmax(bad))]
            raise CommlabError(f"transfer {t} is not a message between two of {self.n_ranks} ranks, of one of "
                               f"{self.n_chunks} chunks, in step {t.step}")

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def transfers(self) -> tuple[Transfer, ...]:
        """Every transfer, in step order."""
        return tuple(t for step in self.steps for t in step)


def chunk_bounds(length: int, n_chunks: int) -> np.ndarray:
    """Offsets of ``n_chunks`` nearly equal chunks of a buffer of ``length``, in ``np.array_split`` order.

    The first ``length % n_chunks`` chunks are one element longer, so lengths that do not divide (and zero)
    work. Returns ``n_chunks + 1`` offsets.

    >>> chunk_bounds(10, 4).tolist(), chunk_bounds(0, 3).tolist()
    ([0, 3, 6, 8, 10], [0, 0, 0, 0])
    """
    if length < 0 or n_chunks < 1:
        raise CommlabError(f"need length >= 0 and n_chunks >= 1, got length={length}, n_chunks={n_chunks}")
    base, extra = divmod(int(length), int(n_chunks))
    sizes = np.full(n_chunks, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


def steps_from(transfers: list[Transfer]) -> tuple[tuple[Transfer, ...], ...]:
    """Group transfers into steps 0..max, sorted within a step."""
    if not transfers:
        return ()
    n_steps = max(t.step for t in transfers) + 1
    grouped: list[list[Transfer]] = [[] for _ in range(n_steps)]
    for t in transfers:
        grouped[t.step].append(t)
    return tuple(tuple(sorted(step)) for step in grouped)
