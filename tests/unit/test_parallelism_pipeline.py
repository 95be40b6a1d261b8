"""The pipeline bubble against hand values and a GPipe schedule simulated here from its dependencies."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commlab.errors import CommlabError
from commlab.parallelism import bubble_fraction, bubble_ratio, pipeline_step_s


def _gpipe_step_s(p: int, m: int, t_f: float, t_b: float) -> float:
    """All forwards, then all backwards; a stage works on one micro-batch at a time."""
    fwd = np.zeros((p, m))
    for s in range(p):
        for j in range(m):
            fwd[s, j] = max(fwd[s - 1, j] if s else 0.0, fwd[s, j - 1] if j else 0.0) + t_f
    bwd = np.zeros((p, m))
    for s in reversed(range(p)):
        for j in range(m):
            after = max(bwd[s + 1, j] if s < p - 1 else 0.0, bwd[s, j - 1] if j else 0.0, fwd[s, m - 1])
            bwd[s, j] = after + t_b
    return float(bwd[0, m - 1])


def test_hand_values():
    assert bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert bubble_fraction(4, 8, v=2) == pytest.approx(3 / 19)
    assert bubble_ratio(4, 8) == pytest.approx(3 / 8)
    assert bubble_ratio(4, 8, v=3) == pytest.approx(3 / 24)
    assert bubble_fraction(1, 5) == 0.0
    assert pipeline_step_s(4, 8, 1.0, 2.0) == pytest.approx(11 * 3.0)


def test_vectorised_over_micro_batches():
    m = np.array([1, 2, 4, 8, 64])
    frac = bubble_fraction(8, m)
    np.testing.assert_allclose(frac, 7 / (m + 7))
    assert np.all(np.diff(frac) < 0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 16), st.floats(0.1, 5.0), st.floats(0.1, 5.0))
def test_fraction_matches_a_simulated_gpipe_schedule(p, m, t_f, t_b):
    step = _gpipe_step_s(p, m, t_f, t_b)
    idle = 1 - m * (t_f + t_b) / step
    assert bubble_fraction(p, m) == pytest.approx(idle, abs=1e-12)
    assert pipeline_step_s(p, m, t_f, t_b) == pytest.approx(step)
    assert bubble_ratio(p, m) == pytest.approx((step - m * (t_f + t_b)) / (m * (t_f + t_b)), abs=1e-12)


def test_interleaving_shrinks_the_bubble_by_v_relative_to_ideal_time():
    for v in (1, 2, 4):
        assert bubble_ratio(8, 16, v=v) == pytest.approx(bubble_ratio(8, 16) / v)
    assert bubble_fraction(8, 16, v=4) < bubble_fraction(8, 16, v=2) < bubble_fraction(8, 16)


@pytest.mark.parametrize("args, match", [((0, 4), "p"), ((4, 0), "m"), ((4, 4, 0), "v"), ((4, 2.5), "m")])
def test_bad_input_names_the_value(args, match):
    with pytest.raises(CommlabError, match=match):
        bubble_fraction(*args)
