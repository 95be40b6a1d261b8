"""Checks of the build-your-own-ring lab (labs/build_your_own_ring.ipynb): each phase of the learner's ring,
and the all-reduce made of them, against torch.distributed's own collectives for N = 2..8 ranks and lengths
that do not divide evenly, and their recorded sends against the ring schedule step by step
(:func:`commlab.p2p.check_ring`); a failure in the words of
:func:`commlab.labs.solutions.build_your_own_ring.in_words`.

The notebook wraps each phase into a collective with torch's meaning (rank r returns chunk r of the sum, the
whole buffer); :func:`reduce_scatter_of` and :func:`all_gather_of` are those wrappers for any phase function.
"""
from __future__ import annotations

import functools

from commlab.labs.checking import Outcome

N_RANKS_CHECKED = range(2, 9)
LENGTHS = (0, 1, 5, 17, 64, 1000)


def _reduce_scatter(steps, x, tracer):
    buffer = x.clone()
    steps(buffer, tracer)
    return tracer.chunk(buffer, tracer.rank).clone()


def _all_gather(steps, chunk, tracer):
    buffer = chunk.new_zeros(tracer.length)
    tracer.chunk(buffer, tracer.rank).copy_(chunk)
    steps(buffer, tracer)
    return buffer


def reduce_scatter_of(steps):
    """The reduce-scatter ``(x, tracer) -> this rank's chunk of the sum`` made of the phase ``steps``."""
    wrapped = functools.partial(_reduce_scatter, steps)
    wrapped.__name__ = "ring_reduce_scatter"  # type: ignore[attr-defined]  # a partial takes attributes
    return wrapped


def all_gather_of(steps):
    """The all-gather ``(chunk, tracer) -> the whole buffer`` made of the phase ``steps``."""
    wrapped = functools.partial(_all_gather, steps)
    wrapped.__name__ = "ring_all_gather"  # type: ignore[attr-defined]  # a partial takes attributes
    return wrapped


def _check(fn, kind: str, n_ranks, lengths, timeout_s: float, seed: int = 0) -> Outcome:
    from commlab import p2p
    from commlab.labs.solutions import build_your_own_ring as lab

    report = p2p.check_ring(fn, kind, n_ranks, lengths, timeout_s=timeout_s, seed=seed)
    return Outcome(problem=lab.in_words(report), details={"report": report})


_KINDS = {"reduce_scatter_steps": "reduce_scatter", "all_gather_steps": "all_gather", "ring_all_reduce": "all_reduce"}
_WRAPS = {"reduce_scatter_steps": reduce_scatter_of, "all_gather_steps": all_gather_of}


def _together(fns: dict, n_ranks, lengths, timeout_s: float, seed: int = 0) -> dict[str, Outcome] | None:
    """The outcomes of the tasks in ``fns`` (task -> its functions), with one launch per N for all of them
    (:func:`commlab.p2p.check_rings`): the same outcomes as each task's check, or None where a launch failed
    (each task is then checked alone, so that the crash is told of the task it came from)."""
    from commlab.p2p.check import check_rings
    from commlab.labs.solutions import build_your_own_ring as lab

    tasks = [t for t in _KINDS if t in fns]
    pairs = [(_WRAPS.get(t, lambda f: f)(fns[t][0]), _KINDS[t]) for t in tasks]
    reports = check_rings(pairs, n_ranks, lengths, timeout_s=timeout_s, seed=seed)
    if reports is None:
        return None
    return {t: Outcome(problem=lab.in_words(r), details={"report": r}) for t, r in zip(tasks, reports)}


#: A launch of the three tasks at once that takes longer than this is left to each task's own check (whose
#: launches have 30 s each): an honest ring takes about a second at N = 8, and a deadlock then costs 15 s more,
#: not 30.
TOGETHER_TIMEOUT_S = 15.0


def check_together(fns: dict, timeout_s: float = TOGETHER_TIMEOUT_S) -> dict[str, Outcome] | None:
    """The grader's way to run the public checks of the three tasks at once (:func:`_together`)."""
    return _together(fns, N_RANKS_CHECKED, LENGTHS, timeout_s)


def check_reduce_scatter_steps(fn, n_ranks=N_RANKS_CHECKED, lengths=LENGTHS, timeout_s: float = 30.0) -> Outcome:
    return _check(reduce_scatter_of(fn), "reduce_scatter", n_ranks, lengths, timeout_s)


def check_all_gather_steps(fn, n_ranks=N_RANKS_CHECKED, lengths=LENGTHS, timeout_s: float = 30.0) -> Outcome:
    return _check(all_gather_of(fn), "all_gather", n_ranks, lengths, timeout_s)


def check_ring_all_reduce(fn, n_ranks=N_RANKS_CHECKED, lengths=LENGTHS, timeout_s: float = 30.0) -> Outcome:
    return _check(fn, "all_reduce", n_ranks, lengths, timeout_s)


# --- cases drawn when a class is graded (commlab labs check --seed) -------------------------------------------

def _drawn(seed: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two rank counts (3 to 8) and three lengths (0 to 4099) drawn from ``seed``; the inputs come from it too."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_ranks = tuple(sorted({int(n) for n in rng.choice(np.arange(3, 9), size=2, replace=False)}))
    return n_ranks, tuple(int(v) for v in rng.integers(0, 4100, size=3))


def drawn_reduce_scatter_steps(fn, seed: int, timeout_s: float = 30.0) -> Outcome:
    n_ranks, lengths = _drawn(seed)
    return _check(reduce_scatter_of(fn), "reduce_scatter", n_ranks, lengths, timeout_s, seed)


def drawn_all_gather_steps(fn, seed: int, timeout_s: float = 30.0) -> Outcome:
    n_ranks, lengths = _drawn(seed)
    return _check(all_gather_of(fn), "all_gather", n_ranks, lengths, timeout_s, seed)


def drawn_together(fns: dict, seed: int, timeout_s: float = TOGETHER_TIMEOUT_S) -> dict[str, Outcome] | None:
    """The drawn cases of the three tasks at once (:func:`_together`; the same rank counts and lengths)."""
    n_ranks, lengths = _drawn(seed)
    return _together(fns, n_ranks, lengths, timeout_s, seed)


def drawn_ring_all_reduce(fn, seed: int, timeout_s: float = 30.0) -> Outcome:
    n_ranks, lengths = _drawn(seed)
    return _check(fn, "all_reduce", n_ranks, lengths, timeout_s, seed)
