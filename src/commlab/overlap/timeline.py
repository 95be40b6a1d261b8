"""A timeline of two streams, compute and communication, and what it costs (chapter 07).

The simulators in :mod:`commlab.overlap` (DDP buckets, FSDP prefetching) return a :class:`Timeline`; the
views in ``commlab.viz`` draw it. The numbers the chapter talks about are properties of the timeline:

* ``step_s``: the end of the last interval on either stream;
* ``compute_s``: the sum of compute intervals (the step if communication cost nothing);
* ``exposed_comm_s = step_s - compute_s``: communication the compute stream could not hide;
* ``overlap_fraction = 1 - exposed_comm_s / comm_s``: the share of communication hidden behind compute
  (1 when there is no communication at all: nothing is left exposed).

>>> t = Timeline(compute=(ComputeInterval(0, 0.0, 2.0),), comm=(CommInterval(0, 1.0, 3.0, 100, (0,)),))
>>> t.step_s, t.compute_s, t.comm_s, t.exposed_comm_s, t.overlap_fraction
(3.0, 2.0, 2.0, 1.0, 0.5)
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.errors import CommlabError


@dataclass(frozen=True)
class ComputeInterval:
    """One layer's compute on the compute stream."""

    layer: int        # index in forward order
    start_s: float
    end_s: float
    name: str = ""

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class CommInterval:
    """One collective on the (single) communication stream."""

    bucket: int                # DDP bucket index, or the FSDP layer whose parameters are gathered
    start_s: float
    end_s: float
    nbytes: int                # the collective's buffer size
    layers: tuple[int, ...]    # layers whose gradients (or parameters) it carries, in the order they were added
    op: str = "all_reduce"

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def _check_intervals(intervals, what: str) -> None:
    for iv in intervals:
        if not (0.0 <= iv.start_s <= iv.end_s):
            raise CommlabError(f"a {what} interval must have 0 <= start_s <= end_s, got {iv!r}")


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Merge overlapping (start, end) spans into disjoint ones, sorted."""
    merged: list[list[float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


@dataclass(frozen=True)
class Timeline:
    """Compute and communication intervals of one step, with the derived costs as properties."""

    compute: tuple[ComputeInterval, ...]
    comm: tuple[CommInterval, ...]
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "compute", tuple(self.compute))
        object.__setattr__(self, "comm", tuple(self.comm))
        _check_intervals(self.compute, "compute")
        _check_intervals(self.comm, "communication")

    @property
    def step_s(self) -> float:
        """End of the last all-reduce (or all-gather) or of the last compute, whichever is later."""
        intervals: tuple[ComputeInterval | CommInterval, ...] = (*self.compute, *self.comm)
        return max((iv.end_s for iv in intervals), default=0.0)

    @property
    def compute_s(self) -> float:
        """Compute-only time: what the step would take if communication were free."""
        return sum(iv.duration_s for iv in self.compute)

    @property
    def comm_s(self) -> float:
        """Total time the communication stream is busy."""
        return sum(iv.duration_s for iv in self.comm)

    @property
    def exposed_comm_s(self) -> float:
        """Communication not hidden behind compute: step time - compute time."""
        return max(self.step_s - self.compute_s, 0.0)

    def exposed_intervals(self) -> tuple[tuple[float, float], ...]:
        """Spans (start_s, end_s) where communication runs and no compute hides it (chapter 07's red bands).

        In the simulators compute only ever waits for communication, so the spans add up to exposed_comm_s.
        """
        busy = _union([(iv.start_s, iv.end_s) for iv in self.compute])
        spans = []
        for start, end in _union([(iv.start_s, iv.end_s) for iv in self.comm]):
            cursor = start
            for b_start, b_end in busy:
                if b_end <= cursor or b_start >= end:
                    continue
                if b_start > cursor:
                    spans.append((cursor, b_start))
                cursor = max(cursor, b_end)
            if cursor < end:
                spans.append((cursor, end))
        return tuple(spans)

    @property
    def overlap_fraction(self) -> float:
        """Share of communication hidden behind compute, in [0, 1]; 1.0 when there is none."""
        if self.comm_s <= 0.0:
            return 1.0
        return min(max(1.0 - self.exposed_comm_s / self.comm_s, 0.0), 1.0)

    @property
    def n_collectives(self) -> int:
        return len(self.comm)

    def summary(self) -> dict[str, float]:
        """The headline numbers, for a table or a widget's caption."""
        return {"step_s": self.step_s, "compute_s": self.compute_s, "comm_s": self.comm_s,
                "exposed_comm_s": self.exposed_comm_s, "overlap_fraction": self.overlap_fraction,
                "n_collectives": self.n_collectives}
