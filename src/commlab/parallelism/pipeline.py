"""Pipeline bubbles: the share of a step a stage sits idle (chapter 09).

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
"""
from __future__ import annotations

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
