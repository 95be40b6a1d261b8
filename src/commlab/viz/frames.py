"""What an animation shows at each frame, asked of :mod:`commlab.schedules` (this module computes nothing).

Frame k (0..n_steps) is the state after k steps: ``Run.holds[k]`` colours the chunks, the transfers of step
k-1 (0-based) are the arrows that led there, and ``describe_step`` gives the words. Frame 0 is the input.
A frame is a pure function of (schedule or trace, k), so stepping back redraws exactly what was shown before.

A reader's trace (the transfers their own send/recv code made, recorded by commlab.p2p) is played the same way:
its transfers are grouped into steps and run, and ``compare_trace`` against the reference schedule names the
first step where it departs; that frame is marked.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from commlab import schedules
from commlab.errors import CommlabError, check_n_ranks
from commlab.schedules import Departure, Schedule, Transfer

#: The ranks the animations draw (a 16-rank ring is the most a laptop screen shows legibly).
MIN_RANKS, MAX_RANKS = 2, 16
#: The reference schedule a trace of each collective is compared with.
REFERENCE_FOR = MappingProxyType({"all_reduce": "ring-all-reduce", "reduce_scatter": "ring-reduce-scatter",
                                  "all_gather": "ring-all-gather"})


def _inputs(schedule: Schedule) -> list[np.ndarray]:
    """Input buffers in the collective's convention: one element per chunk (all_gather: each rank's piece)."""
    length = 1 if schedule.collective == "all_gather" else schedule.n_chunks
    return [np.full(length, float(rank + 1)) for rank in range(schedule.n_ranks)]


@dataclass(frozen=True)
class Playback:
    """A schedule (or a recorded trace) and what every rank holds after each of its steps."""

    schedule: Schedule
    """What is played: the reference schedule, or the trace grouped into steps."""
    holds: np.ndarray
    """bool [n_steps + 1, n_ranks, n_chunks, n_ranks], from schedules.run."""
    reference: Schedule | None = None
    """For a trace: the schedule it should follow."""
    departure: Departure | None = None
    """For a trace: where it first departs from ``reference`` (None when it follows it)."""

    @property
    def n_steps(self) -> int:
        return self.schedule.n_steps

    @property
    def title(self) -> str:
        if self.reference is None:
            return f"{self.schedule.algorithm}, {self.schedule.n_ranks} ranks"
        return f"your {self.reference.collective} trace vs {self.reference.algorithm}, {self.schedule.n_ranks} ranks"

    @property
    def departure_frame(self) -> int | None:
        """The frame that shows the departure (its step, or the last frame when the trace stops early)."""
        return None if self.departure is None else min(self.departure.step + 1, self.n_steps)

    def check_frame(self, k: object) -> int:
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k <= self.n_steps:
            raise CommlabError(f"step must be a whole number from 0 to {self.n_steps} for {self.title}, got {k!r}")
        return int(k)

    def transfers(self, k: int) -> tuple[Transfer, ...]:
        """The transfers that lead to frame k (step k-1); none for frame 0."""
        return self.schedule.steps[k - 1] if k >= 1 else ()

    def alarm(self, k: int) -> tuple[tuple[Transfer, ...], tuple[Transfer, ...]]:
        """(transfers to draw in red, expected transfers that are missing, drawn as red ghosts) at frame k."""
        if self.departure is None or k != self.departure_frame:
            return (), ()
        got = (self.departure.got,) if self.departure.got is not None else ()
        ghost = (self.departure.expected,) if self.departure.got is None and self.departure.expected else ()
        return got, ghost

    def caption(self, k: int) -> str:
        """Frame k in words: 'step 3 of 6: rank 2 sends chunk 0 to rank 3, which adds it; ...', then any
        departure of a trace."""
        alert = self.departure_words(k)
        return self.step_words(k) + (f". {alert}" if alert else "")

    def step_words(self, k: int) -> str:
        """The transfers that lead to frame k, in words (describe_step)."""
        k = self.check_frame(k)
        if k == 0:
            return f"start (step 0 of {self.n_steps}): {self._start_words()}"
        return f"step {k} of {self.n_steps}: {schedules.describe_step(self.schedule, k - 1)}"

    def _start_words(self) -> str:
        if self.schedule.collective == "all_gather":
            return "each rank r holds only its own chunk r"
        return "each rank holds only its own data, in every chunk"

    def departure_words(self, k: int) -> str:
        """For a trace: at the departure frame what was expected and what came, later a reminder; else ""."""
        d, reference, frame = self.departure, self.reference, self.departure_frame
        if d is None or reference is None or frame is None or k < frame:
            return ""
        if k > frame:
            return f"(this trace departed from {reference.algorithm} at step {d.step + 1})"
        expected = schedules.describe_transfer(d.expected) if d.expected else "nothing"
        got = schedules.describe_transfer(d.got) if d.got else "nothing"
        where = "here" if d.step < self.n_steps else f"after its last step, at step {d.step + 1}"
        return f"DEPARTS from {reference.algorithm} {where} ({d.kind}): expected {expected}; got {got}"


def playback(algorithm: str, n_ranks: int) -> Playback:
    """The reference schedule of ``algorithm`` on ``n_ranks`` ranks (2 to 16), run for its holds."""
    n = check_n_ranks(n_ranks, MIN_RANKS, MAX_RANKS)
    schedule = schedules.build(schedules.check_algorithm(algorithm), n)
    return Playback(schedule, _holds(schedule))


def trace_playback(trace: Iterable[Transfer], n_ranks: int, collective: str = "all_reduce",
                   algorithm: str | None = None) -> Playback:
    """A reader's recorded trace on ``n_ranks`` ranks, compared with the reference for ``collective``."""
    n = check_n_ranks(n_ranks, MIN_RANKS, MAX_RANKS)
    if algorithm is None:
        if collective not in REFERENCE_FOR:
            raise CommlabError(f"unknown collective {collective!r} for a trace; expected one of: "
                               f"{', '.join(REFERENCE_FOR)}")
        algorithm = REFERENCE_FOR[collective]
    reference = schedules.build(schedules.check_algorithm(algorithm), n)
    transfers = [t if isinstance(t, Transfer) else Transfer(*t) for t in trace]
    departure = schedules.compare_trace(reference, transfers)  # raises for ranks outside 0..n-1
    played = Schedule("trace", reference.collective, n, reference.n_chunks, schedules.steps_from(transfers))
    return Playback(played, _holds(played), reference, departure)


def _holds(schedule: Schedule) -> np.ndarray:
    """What every rank holds after each step of ``schedule`` (:func:`commlab.schedules.run`, recording)."""
    holds = schedules.run(schedule, _inputs(schedule), record=True).holds
    if holds is None:
        raise RuntimeError(f"schedules.run recorded no holds for {schedule.algorithm}")
    return holds
