"""GPipe and 1F1B schedules laid out interval by interval, against the closed-form bubble and the schedules'
dependency and resource rules."""
from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commlab.errors import CommlabError
from commlab.parallelism import (
    Interval, bubble_fraction, idle_share, peak_in_flight, pipeline_schedule, pipeline_step_s,
)

TIMES = st.floats(0.1, 5.0, allow_nan=False)


@st.composite
def layouts(draw):
    """(p, m, v, kind, t_f, t_b) with interleaving only where m is a multiple of p."""
    p, v = draw(st.integers(1, 8)), draw(st.integers(1, 4))
    m = draw(st.integers(1, 4)) * p if v > 1 else draw(st.integers(1, 16))
    return p, m, v, draw(st.sampled_from(["1F1B", "GPipe"])), draw(TIMES), draw(TIMES)


def by_piece(spans, p):
    """{(phase, virtual stage, micro-batch): interval}; virtual stage = chunk * p + stage."""
    return {(i.phase, i.chunk * p + i.stage, i.micro_batch): i for i in spans}


@settings(max_examples=150, deadline=None)
@given(layouts())
def test_idle_share_is_the_closed_form_bubble(layout):
    p, m, v, kind, t_f, t_b = layout
    assert idle_share(pipeline_schedule(p, m, v, kind, t_f, t_b)) == pytest.approx(
        (p - 1) / (v * m + p - 1), abs=1e-9)


@pytest.mark.parametrize("kind", ["1F1B", "GPipe"])
def test_every_small_layout_matches_bubble_fraction(kind):
    for p in range(1, 9):
        for m in range(1, 17):
            for v in (1, 2, 3):
                if v == 1 or m % p == 0:
                    share = idle_share(pipeline_schedule(p, m, v, kind))
                    assert math.isclose(share, bubble_fraction(p, m, v), abs_tol=1e-9), (kind, p, m, v)


@settings(max_examples=80, deadline=None)
@given(layouts())
def test_every_piece_runs_once_for_its_time(layout):
    p, m, v, kind, t_f, t_b = layout
    spans = pipeline_schedule(p, m, v, kind, t_f, t_b)
    assert all(isinstance(i, Interval) for i in spans)
    pieces = Counter((i.stage, i.phase, i.chunk, i.micro_batch) for i in spans)
    assert len(pieces) == len(spans) == 2 * p * m * v and set(pieces.values()) == {1}
    for i in spans:
        assert 0 <= i.stage < p and 0 <= i.chunk < v and 0 <= i.micro_batch < m and i.start >= 0
        assert i.end - i.start == pytest.approx((t_f if i.phase == "F" else t_b) / v)


@settings(max_examples=80, deadline=None)
@given(layouts())
def test_no_stage_runs_two_things_at_once(layout):
    p, m, v, kind, t_f, t_b = layout
    spans = pipeline_schedule(p, m, v, kind, t_f, t_b)
    for stage in range(p):
        mine = sorted((i for i in spans if i.stage == stage), key=lambda i: i.start)
        assert all(a.end <= b.start + 1e-12 for a, b in zip(mine, mine[1:]))


@settings(max_examples=80, deadline=None)
@given(layouts())
def test_forward_flows_down_and_backward_flows_up(layout):
    p, m, v, kind, t_f, t_b = layout
    pieces, last = by_piece(pipeline_schedule(p, m, v, kind, t_f, t_b), p), p * v - 1
    for (phase, vstage, j), i in pieces.items():
        if phase == "F" and vstage > 0:
            assert i.start >= pieces[("F", vstage - 1, j)].end - 1e-12
        if phase == "B":
            before = pieces[("B", vstage + 1, j)] if vstage < last else pieces[("F", last, j)]
            assert i.start >= before.end - 1e-12
            assert i.start >= pieces[("F", vstage, j)].end - 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 16), TIMES, TIMES)
def test_gpipe_step_time_is_the_closed_form(p, m, t_f, t_b):
    spans = pipeline_schedule(p, m, kind="GPipe", t_f=t_f, t_b=t_b)
    assert max(i.end for i in spans) == pytest.approx((m + p - 1) * (t_f + t_b))
    assert max(i.end for i in spans) == pytest.approx(pipeline_step_s(p, m, t_f, t_b))


@pytest.mark.parametrize("p, m", [(4, 8), (4, 2), (8, 32), (1, 5), (3, 7)])
def test_1f1b_holds_at_most_p_micro_batches_gpipe_all_m(p, m):
    assert peak_in_flight(pipeline_schedule(p, m, kind="GPipe")) == m
    assert peak_in_flight(pipeline_schedule(p, m, kind="1F1B")) == min(p, m)


def test_1f1b_alternates_after_warm_up():
    spans = pipeline_schedule(4, 8, kind="1F1B")
    stage0 = "".join(i.phase for i in spans if i.stage == 0)
    last = "".join(i.phase for i in spans if i.stage == 3)
    assert stage0 == "FFF" + "FB" * 5 + "BBB" and last == "FB" * 8       # warm-up p - stage - 1 forwards


def test_kind_is_case_insensitive():
    assert pipeline_schedule(2, 4, kind="gpipe") == pipeline_schedule(2, 4, kind="GPipe")


@pytest.mark.parametrize("kwargs, words", [
    (dict(p=0, m=4), "p (stages)"), (dict(p=4, m=2.0), "m (micro-batches)"), (dict(p=4, m=4, v=True), "v"),
    (dict(p=4, m=6, v=2), "multiple of p"), (dict(p=2, m=4, kind="zero-bubble"), "1F1B, GPipe"),
    (dict(p=2, m=4, t_f=0.0), "t_f"), (dict(p=2, m=4, t_b=float("inf")), "t_b"), (dict(p=2, m=4, t_b="2"), "t_b"),
])
def test_bad_input_names_the_value(kwargs, words):
    with pytest.raises(CommlabError) as info:
        pipeline_schedule(**kwargs)
    assert words in str(info.value)


def test_idle_share_of_nothing_is_an_error():
    with pytest.raises(CommlabError, match="at least one interval"):
        idle_share([])
