"""Words for a step, and comparing a recorded trace of real send/recv code with the reference schedule.

The build-your-own-ring lab records the transfers a reader's code makes (commlab.p2p) and the animation plays
them; :func:`compare_trace` names the first step where they depart from the schedule: a wrong chunk, a wrong
peer, a missing reduce, a missing or an unexpected message.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.schedules.model import Schedule, Transfer, steps_from


def describe_transfer(t: Transfer) -> str:
    """'rank 2 sends chunk 0 to rank 3, which adds it'."""
    verb = "adds it" if t.reduce else "stores it"
    return f"rank {t.src} sends chunk {t.chunk} to rank {t.dst}, which {verb}"


def describe_step(schedule: Schedule, step: int) -> str:
    """All transfers of step ``step`` (0-based) in words, joined with '; '.

    >>> from commlab.schedules import build
    >>> describe_step(build("ring-reduce-scatter", 2), 0)
    'rank 0 sends chunk 1 to rank 1, which adds it; rank 1 sends chunk 0 to rank 0, which adds it'
    """
    if not 0 <= step < schedule.n_steps:
        raise CommlabError(f"step must be from 0 to {schedule.n_steps - 1} for {schedule.algorithm} on "
                           f"{schedule.n_ranks} ranks, got {step!r}")
    return "; ".join(describe_transfer(t) for t in schedule.steps[step])


@dataclass(frozen=True)
class Departure:
    """Where a recorded trace first differs from the schedule."""

    step: int
    kind: str
    """wrong chunk, wrong peer, missing reduce, unexpected reduce, missing transfer, unexpected transfer."""
    expected: Transfer | None
    got: Transfer | None

    def message(self) -> str:
        exp = describe_transfer(self.expected) if self.expected else "nothing"
        got = describe_transfer(self.got) if self.got else "nothing"
        return f"step {self.step}: {self.kind}: expected {exp}; got {got}"


def _classify(expected: Transfer, got: Transfer) -> str | None:
    if (expected.src, expected.dst, expected.chunk) == (got.src, got.dst, got.chunk):
        if expected.reduce == got.reduce:
            return None
        return "missing reduce" if expected.reduce else "unexpected reduce"
    if (expected.src, expected.dst) == (got.src, got.dst):
        return "wrong chunk"
    if (expected.src, expected.chunk) == (got.src, got.chunk):
        return "wrong peer"
    return "wrong peer and chunk"


def _step_departure(index: int, want: tuple[Transfer, ...], have: tuple[Transfer, ...]) -> Departure | None:
    """Compare one step: pair transfers by sender, then report the first difference."""
    want_by_src = {t.src: t for t in want}
    have_by_src: dict[int, Transfer] = {}
    for t in have:
        if t.src in have_by_src or t.src not in want_by_src:
            return Departure(index, "unexpected transfer", None, t)
        have_by_src[t.src] = t
    for src in sorted(want_by_src):
        if src not in have_by_src:
            return Departure(index, "missing transfer", want_by_src[src], None)
        kind = _classify(want_by_src[src], have_by_src[src])
        if kind:
            return Departure(index, kind, want_by_src[src], have_by_src[src])
    return None


def compare_trace(schedule: Schedule, trace: Iterable[Transfer]) -> Departure | None:
    """The first departure of ``trace`` from ``schedule``, or None when they agree step for step.

    Schedules whose steps have several messages from one sender are compared as sets.
    """
    got = steps_from([t if isinstance(t, Transfer) else Transfer(*t) for t in trace])
    for t in (t for step in got for t in step):
        if not (0 <= t.src < schedule.n_ranks and 0 <= t.dst < schedule.n_ranks):
            raise CommlabError(f"trace has a transfer between ranks outside 0..{schedule.n_ranks - 1}: {t}; "
                               f"was it recorded with another number of ranks?")
    for index in range(max(len(got), schedule.n_steps)):
        want = schedule.steps[index] if index < schedule.n_steps else ()
        have = got[index] if index < len(got) else ()
        if len({t.src for t in want}) != len(want):
            if set(want) != set(have):
                missing = sorted(set(want) - set(have))
                extra = sorted(set(have) - set(want))
                kind = "missing transfer" if missing else "unexpected transfer"
                return Departure(index, kind, missing[0] if missing else None, extra[0] if extra else None)
            continue
        departure = _step_departure(index, want, have)
        if departure:
            return departure
    return None
