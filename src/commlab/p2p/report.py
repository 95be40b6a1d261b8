"""The verdict of :func:`commlab.p2p.check_ring`, in words a learner can act on."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CaseResult:
    """One rank's result for one (N, length) against torch's collective."""

    n_ranks: int
    length: int
    rank: int
    max_error: float | None
    """Largest absolute difference from torch's result; None when the shape or type was wrong."""
    note: str = ""
    """What was wrong, in words (empty when right)."""

    @property
    def ok(self) -> bool:
        return self.max_error == 0.0


@dataclass(frozen=True, repr=False)
class CheckReport:
    """Every case checked, the trace departures found, and the first failure in words (or None)."""

    kind: str
    algorithm: str
    cases: tuple[CaseResult, ...]
    departures: tuple = ()
    """``(n_ranks, length, commlab.schedules.Departure)`` for each traced case that left the schedule."""
    traced: tuple = ()
    """``(n_ranks, length)`` of the cases whose sends were recorded on the tracer."""
    crash: str | None = None
    """A launch that failed: an exception on some rank, a rank that died, or a timeout (a deadlock?)."""

    @property
    def failure(self) -> str | None:
        """The first failure in words: a crash, a wrong result, or a trace that departs from the schedule."""
        if self.crash is not None:
            return self.crash
        wrong = [c for c in self.cases if not c.ok]
        if wrong:
            c = min(wrong, key=lambda c: (c.n_ranks, c.length, c.rank))
            error = "" if c.max_error is None else f"max error {c.max_error:g}; "
            return (f"{self.kind} is wrong with n_ranks={c.n_ranks}, length={c.length} on rank {c.rank}: "
                    f"{error}{c.note}")
        if self.departures:
            n, length, departure = self.departures[0]
            return (f"the results are right, but with n_ranks={n}, length={length} the recorded sends depart "
                    f"from {self.algorithm}: {departure.message()}")
        return None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def __repr__(self) -> str:
        return f"<CheckReport of {self.kind}: {self}>"

    def __str__(self) -> str:
        if not self.ok:
            return f"FAILED: {self.failure}"
        n_values = sorted({c.n_ranks for c in self.cases})
        lengths = sorted({c.length for c in self.cases})
        text = (f"passed: {self.kind} equals torch.distributed's on {len(self.cases)} (N, length, rank) cases, "
                f"N in {n_values}, lengths {lengths}")
        if self.traced:
            text += f"; the recorded sends follow {self.algorithm} step for step"
        else:
            text += "; no sends were recorded on the tracer, so the schedule was not checked"
        return text


def describe_crash(kind: str, n_ranks: int, exc, timeout_s: float) -> str:
    """A failed launch (a :class:`commlab.launch.RankError`) in a learner's words."""
    if exc.timed_out or "Timed out waiting" in str(exc):
        return (f"{kind} with n_ranks={n_ranks} did not finish within {timeout_s:g} s: a deadlock? (two ranks "
                f"that both wait to receive, or a blocking send with no matching receive)\n{exc}")
    return f"{kind} with n_ranks={n_ranks} failed on rank {exc.rank}:\n{exc}"
