"""Size sweeps and best-of-k timing, shared by every measurement in :mod:`commlab.measure`.

Sizes grow geometrically like nccl-tests' ``-b``/``-e``/``-f`` flags. Each size is timed ``repeats`` times after
``warmup`` untimed runs and the fastest run is kept: other processes on a shared machine only ever add time,
so the minimum is the best estimate of what the hardware itself does (the topology lab discusses this).

>>> SweepConfig(min_nbytes=1024, max_nbytes=16384, factor=4).sizes()
[1024, 4096, 16384]
>>> ticks = iter([0.0, 3.0, 10.0, 12.0, 20.0, 25.0])
>>> best_time_s(lambda: None, repeats=3, warmup=0, timer=lambda: next(ticks))
2.0
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.units import MiB


@dataclass(frozen=True)
class SweepConfig:
    """Which buffer sizes to time and how often."""

    min_nbytes: int = 1 * MiB
    """Smallest buffer in bytes."""
    max_nbytes: int = 256 * MiB
    """Largest buffer in bytes (included when the factor lands on it)."""
    factor: int = 4
    """Each size is the previous one times this."""
    repeats: int = 5
    """Timed runs per size; the fastest is kept."""
    warmup: int = 1
    """Untimed runs per size first (page faults, clocks ramping up, lazy allocation)."""

    def __post_init__(self) -> None:
        if not (isinstance(self.min_nbytes, int) and 1 <= self.min_nbytes <= self.max_nbytes):
            raise CommlabError(f"sweep sizes need 1 <= min_nbytes <= max_nbytes; got min_nbytes="
                               f"{self.min_nbytes!r}, max_nbytes={self.max_nbytes!r}")
        if not (isinstance(self.factor, int) and self.factor >= 2):
            raise CommlabError(f"sweep factor must be a whole number >= 2, got {self.factor!r}")
        if not (isinstance(self.repeats, int) and self.repeats >= 1):
            raise CommlabError(f"repeats must be a whole number >= 1, got {self.repeats!r}")
        if not (isinstance(self.warmup, int) and self.warmup >= 0):
            raise CommlabError(f"warmup must be a whole number >= 0, got {self.warmup!r}")

    def sizes(self) -> list[int]:
        """min, min*factor, ... up to max."""
        out, nbytes = [], self.min_nbytes
        while nbytes <= self.max_nbytes:
            out.append(nbytes)
            nbytes *= self.factor
        return out


#: A quick sweep for ``commlab doctor`` (well under a second of copying on a laptop).
QUICK = SweepConfig(min_nbytes=4 * MiB, max_nbytes=64 * MiB, factor=4, repeats=3, warmup=1)


def best_time_s(fn: Callable[[], object], repeats: int, warmup: int,
                timer: Callable[[], float] = time.perf_counter) -> float:
    """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times; the shortest time in seconds."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = timer()
        fn()
        best = min(best, timer() - start)
    return best
