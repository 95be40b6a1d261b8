"""Pipeline bubbles: the share of a step a stage sits idle (chapter 09), as a formula and as a laid-out schedule.

With p stages and m micro-batches, GPipe and 1F1B both idle for p-1 micro-batch slots of forward and backward
at the start and end of a step: bubble time t_pb = (p-1)(t_f + t_b) against ideal time t_id = m (t_f + t_b).
Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC21,
sec. 2.2.1, call t_pb / t_id = (p-1)/m the bubble time fraction; with the interleaved schedule (v model
chunks per stage, sec. 2.2.2) the bubble shrinks by v: (p-1)/(v m).

As a share of the whole step (bubble + useful work), which is what the chapter's explorer shows:

    bubble_fraction = t_pb / (t_pb + t_id) = (p-1) / (v m + p - 1)

>>> bubble_fraction(4, 8), bubble_fraction(4, 8, v=2)
(0.2727272727272727, 0.15789473684210525)
>>> bubble_ratio(4, 8)
0.375

:func:`pipeline_schedule` lays out a GPipe or (interleaved) 1F1B step interval by interval, the picture the
chapter's bubble explorer draws; its :func:`idle_share` is the same (p-1) / (v m + p - 1).

>>> spans = pipeline_schedule(4, 8, kind="1F1B")
>>> round(idle_share(spans), 12) == round(bubble_fraction(4, 8), 12), peak_in_flight(spans)
(True, 4)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commlab.errors import CommlabError


def _check(p, m, v) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arrays = [np.asarray(x) for x in (p, m, v)]
    for name, arr, given in zip(("p (stages)", "m (micro-batches)", "v (chunks per stage)"), arrays, (p, m, v)):
        if arr.dtype.kind not in "iu" or np.any(arr < 1):
            raise CommlabError(f"{name} must be whole numbers >= 1, got {given!r}")
    return tuple(arr.astype(float) for arr in arrays)  # type: ignore[return-value]


def _result(value: np.ndarray):
    return float(value) if np.ndim(value) == 0 else value


def bubble_fraction(p, m, v=1):
    """(p-1) / (v m + p - 1): idle share of a step; vectorised over arrays of p, m, v."""
    p_, m_, v_ = _check(p, m, v)
    return _result((p_ - 1) / (v_ * m_ + p_ - 1))


def bubble_ratio(p, m, v=1):
    """(p-1) / (v m): bubble time over ideal time, the paper's "bubble time fraction"."""
    p_, m_, v_ = _check(p, m, v)
    return _result((p_ - 1) / (v_ * m_))


def pipeline_step_s(p, m, t_forward_s: float, t_backward_s: float, v=1):
    """Step time of one stage: (v m + p - 1) (t_f + t_b) / v, with t_f, t_b one micro-batch on a whole stage."""
    p_, m_, v_ = _check(p, m, v)
    if t_forward_s < 0 or t_backward_s < 0:
        raise CommlabError(f"t_forward_s and t_backward_s must be >= 0, got {t_forward_s!r}, {t_backward_s!r}")
    return _result((v_ * m_ + p_ - 1) * (t_forward_s + t_backward_s) / v_)


KINDS = ("1F1B", "GPipe")


@dataclass(frozen=True)
class Interval:
    """One piece of work on one pipeline stage: a forward ("F") or backward ("B") of one model chunk on one
    micro-batch, from ``start`` to ``end`` (in the unit of ``t_f`` and ``t_b``). The chunk's place in the
    model (its virtual stage) is ``chunk * p + stage``, Megatron-LM's interleaved layout."""

    stage: int
    phase: str
    chunk: int
    micro_batch: int
    start: float
    end: float


def _whole(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise CommlabError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def _check_schedule(p, m, v, kind, t_f, t_b) -> tuple[int, int, int, str]:
    p, m, v = _whole("p (stages)", p), _whole("m (micro-batches)", m), _whole("v (chunks per stage)", v)
    canonical = {k.casefold(): k for k in KINDS}.get(str(kind).casefold())
    if canonical is None:
        raise CommlabError(f"unknown pipeline schedule {kind!r}; expected one of: {', '.join(KINDS)}")
    if v > 1 and m % p:
        raise CommlabError(f"the interleaved schedule (v={v}) needs m to be a multiple of p (Megatron-LM's rule), "
                           f"got m={m}, p={p}")
    for name, t in (("t_f", t_f), ("t_b", t_b)):
        if isinstance(t, bool) or not isinstance(t, (int, float, np.number)) or not 0 < float(t) < np.inf:
            raise CommlabError(f"{name} must be a finite time > 0, got {t!r}")
    return p, m, v, canonical


def _stage_order(stage: int, p: int, m: int, v: int, kind: str) -> list[tuple[str, int, int]]:
    """The (phase, virtual stage, micro-batch) a stage runs, in its running order.

    Micro-batches go in groups of p; within a group every chunk runs forward in chunk order and backward in
    reverse chunk order (Megatron-LM). GPipe runs all forwards, then all backwards. 1F1B runs a warm-up of
    forwards (p - stage - 1; interleaved: 2 (p - stage - 1) + (v - 1) p), then alternates one forward and
    one backward, then drains the backwards.
    """
    groups = [range(g, min(g + p, m)) for g in range(0, m, p)]
    fwd = [("F", stage + c * p, j) for grp in groups for c in range(v) for j in grp]
    bwd = [("B", stage + (v - 1 - c) * p, j) for grp in groups for c in range(v) for j in grp]
    if kind == "GPipe":
        return fwd + bwd
    warm = min(len(fwd), p - stage - 1 if v == 1 else 2 * (p - stage - 1) + (v - 1) * p)
    order, rest = fwd[:warm], fwd[warm:]
    for k in range(max(len(rest), len(bwd))):
        order += rest[k:k + 1] + bwd[k:k + 1]
    return order


def _dependency(phase: str, vstage: int, micro_batch: int, last: int) -> tuple[str, int, int] | None:
    """The piece whose end this one waits for: the previous virtual stage's forward, the next one's backward,
    or (last virtual stage) its own forward."""
    if phase == "F":
        return ("F", vstage - 1, micro_batch) if vstage else None
    return ("B", vstage + 1, micro_batch) if vstage < last else ("F", vstage, micro_batch)


def pipeline_schedule(p: int, m: int, v: int = 1, kind: str = "1F1B", t_f: float = 1.0,
                      t_b: float = 2.0) -> tuple[Interval, ...]:
    """Lay out one training step of a pipeline: every stage's forwards and backwards as :class:`Interval`.

    p stages (GPUs), m micro-batches, v model chunks per stage (interleaving, m a multiple of p); t_f and t_b
    are the forward and backward time of one micro-batch on a whole stage, so one chunk takes t_f / v and
    t_b / v. Each stage runs its pieces in a fixed order (:func:`_stage_order`) and starts each one as soon as
    the stage is free and the piece it depends on has ended (list scheduling).

    Schedules: GPipe (Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
    Parallelism", NeurIPS 2019): all forwards, then all backwards; a stage holds all m micro-batches'
    activations. 1F1B (PipeDream-Flush, Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN Training",
    ICML 2021; Megatron-LM, Narayanan et al., SC21, sec. 2.2.1): one forward, one backward once the pipe is
    full; the same bubble, at most p micro-batches held. Interleaved 1F1B (SC21, sec. 2.2.2) with v chunks
    per stage. The idle share of the result is (p-1) / (v m + p - 1), :func:`bubble_fraction`.

    Returns the intervals sorted by stage, then start time.
    """
    p, m, v, kind = _check_schedule(p, m, v, kind, t_f, t_b)
    orders = [_stage_order(s, p, m, v, kind) for s in range(p)]
    last, nxt, free = p * v - 1, [0] * p, [0.0] * p
    ends: dict[tuple[str, int, int], float] = {}
    out: list[Interval] = []
    while any(nxt[s] < len(orders[s]) for s in range(p)):
        progressed = False
        for s in (s for s in range(p) if nxt[s] < len(orders[s])):
            phase, vstage, j = orders[s][nxt[s]]
            dep = _dependency(phase, vstage, j, last)
            if dep is not None and dep not in ends:
                continue
            start = max(free[s], ends[dep] if dep else 0.0)
            ends[(phase, vstage, j)] = free[s] = start + (t_f if phase == "F" else t_b) / v
            out.append(Interval(s, phase, vstage // p, j, start, free[s]))
            nxt[s], progressed = nxt[s] + 1, True
        if not progressed:
            raise RuntimeError(f"the {kind} order deadlocks for p={p}, m={m}, v={v}")
    return tuple(sorted(out, key=lambda i: (i.stage, i.start)))


def idle_share(intervals) -> float:
    """1 - busy time / (step time x stages): the bubble a laid-out schedule shows (step time = last end)."""
    spans = tuple(intervals)
    if not spans:
        raise CommlabError("idle_share needs at least one interval, got none")
    step = max(i.end for i in spans)
    n_stages = len({i.stage for i in spans})
    return 1.0 - sum(i.end - i.start for i in spans) / (step * n_stages)


def peak_in_flight(intervals) -> int:
    """Most activations one stage holds at once: forwards started minus backwards ended, in running order
    (micro-batches for v = 1, chunk activations when interleaved)."""
    peak = 0
    held: dict[int, int] = {}
    for i in sorted(intervals, key=lambda i: (i.stage, i.start)):
        held[i.stage] = held.get(i.stage, 0) + (1 if i.phase == "F" else -1)
        peak = max(peak, held[i.stage])
    return peak
