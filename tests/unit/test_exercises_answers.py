"""Reading answers: units, equivalent forms, and anything else thrown at check() never raising."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commlab import exercises as ex
from commlab.errors import CommlabError
from commlab.exercises.answers import UNITS, format_answer, read_answer

IDS = tuple(i for i in ex.ids() if ex.get(i).kind == "numeric")   # choice/short: test_exercises_concepts.py


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("COMMLAB_PROGRESS", str(tmp_path / "progress.json"))
    monkeypatch.setenv("COMMLAB_LEARNER", "")
    monkeypatch.delenv("COMMLAB_LEARNER")


@pytest.mark.parametrize("text, unit, value", [
    ("54 ms", "s", 0.054), ("0.054 s", "s", 0.054), ("54.4ms", "s", 0.0544), ("54000 us", "s", 0.054),
    ("54000 µs", "ms", 54.0), ("54", "ms", 54.0), (" 54 ", "ms", 54.0), ("1e3 ns", "us", 1.0),
    ("450 GB/s", "GB/s", 450.0), ("3.6 Tb/s", "GB/s", 450.0), ("3600 Gb/s", "GB/s", 450.0),
    ("450GBps", "GB/s", 450.0), ("400 Gb/s", "Gb/s", 400.0), ("50 GB/s", "Gb/s", 400.0),
    ("24.5 GB", "GB", 24.5), ("24500 MB", "GB", 24.5), ("2 GiB", "GB", 2 * 1024**3 / 1e9),
    ("8 bytes", "bytes", 8.0), ("1 KB", "bytes", 1000.0), ("1 KiB", "bytes", 1024.0), ("64 bits", "bytes", 8.0),
    ("12.5%", "%", 12.5), ("12.5", "%", 12.5), ("12.5%", "", 0.125), ("7x", "", 7.0), ("7 ×", "", 7.0),
    ("-3", "", -3.0),
])
def test_read_answer_forms(text, unit, value):
    assert read_answer(text, unit) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("answer, unit, words", [
    ("", "s", "empty"), ("   ", "s", "empty"), ("fifty", "s", "cannot read"), ("nan", "s", "cannot read"),
    ("inf", "s", "cannot read"), ("1e999", "s", "finite"), (float("nan"), "s", "finite"),
    (float("inf"), "GB", "finite"), (None, "s", "cannot read"), (True, "s", "cannot read"),
    ([1, 2], "s", "cannot read"), ({"a": 1}, "GB", "cannot read"),
    ("5 GB", "s", "is a size, but this answer is a time"),
    ("54 ms", "GB", "is a time"), ("450 GB/s", "%", "is a bandwidth"), ("7x", "GB", "cannot read"),
    ("x" * 300, "s", "characters long"), (b"54", "s", "cannot read"),
])
def test_unreadable_answers_say_why(answer, unit, words):
    with pytest.raises(CommlabError, match=words):
        read_answer(answer, unit)


def test_numpy_and_integer_numbers_are_read():
    assert read_answer(np.float32(2.5), "GB") == 2.5
    assert read_answer(np.int64(3), "") == 3.0
    assert read_answer(7, "ms") == 7.0


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_format_answer_reads_back(unit):
    for value in (1.0, 54.44, 0.000123, 24.5e9, 7e-9, 123456789.0):
        assert read_answer(format_answer(value, unit), unit) == pytest.approx(value, rel=5e-4)


def test_equivalent_time_forms_are_all_correct():
    """Unit 's' (DP sync) and unit 'ms' (ring time): every spelling of the same time passes."""
    for exercise_id in ("ch09.dp-sync", "ch05.ring-time", "ch03.one-way"):
        exercise = ex.get(exercise_id)
        scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}[exercise.unit]
        t_s = ex.worked(exercise_id, "ada").expected * scale
        forms = [f"{t_s * 1e3:.6g} ms", f"{t_s:.6g} s", f"{t_s * 1e6:.6g} us", f"{t_s * 1e3:.6g}ms",
                 f"{t_s * 1e9:.6g} ns"]
        for form in forms:
            feedback = ex.check(exercise_id, form, learner="ada", record=False)
            assert feedback.correct, (exercise_id, form, feedback.message)


def test_equivalent_size_and_rate_forms_are_correct():
    gb = ex.worked("ch05.ring-volume", "ada").expected
    for form in (f"{gb:.6g} GB", f"{gb * 1e3:.6g} MB", f"{gb * 1e9:.8g} bytes", f"{gb * 8:.6g} Gb",
                 f"{gb * 1e9 / 2**30:.6g} GiB"):
        assert ex.check("ch05.ring-volume", form, learner="ada", record=False).correct, form
    bw = ex.worked("ch01.nvlink-per-gpu", "ada").expected
    for form in (f"{bw:.6g} GB/s", f"{bw * 8 / 1000:.6g} Tb/s", f"{bw * 8:.6g} Gb/s", f"{bw:.6g}"):
        assert ex.check("ch01.nvlink-per-gpu", form, learner="ada", record=False).correct, form


def test_wrong_dimension_gives_a_clear_unreadable_feedback():
    feedback = ex.check("ch09.dp-sync", "5 GB", learner="ada", record=False)
    assert not feedback.readable and not feedback.correct
    assert "size" in feedback.message and "time" in feedback.message
    assert feedback.expected is None and feedback.mistake is None


_units = st.sampled_from(["", "s", "ms", "us", "µs", "GB", "GiB", "Gb", "MB", "B", "bytes", "GB/s", "Gb/s", "Tb/s",
                          "%", "x", "k", "ns", "h", "min", "/s", "e", "."])
_numberish = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers().map(str),
                       st.text(alphabet="0123456789.eE+-", max_size=12))
_answers = st.one_of(
    st.text(max_size=60), st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.none(), st.booleans(),
    st.lists(st.integers(), max_size=3), st.binary(max_size=8), st.complex_numbers(),
    st.builds(lambda n, sp, u: f"{n}{sp}{u}", _numberish, st.sampled_from(["", " ", "  "]), _units),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(exercise_id=st.sampled_from(ex.ids()), answer=_answers, learner=st.one_of(st.text(min_size=1, max_size=20),
                                                                            st.integers(0, 10**6)))
def test_check_never_raises_for_any_answer(exercise_id, answer, learner):
    try:
        who = ex.current_learner(learner)
    except CommlabError:
        return  # an unusable learner name is refused by set_learner; not an answer
    feedback = ex.check(exercise_id, answer, learner=who, record=False)
    assert isinstance(feedback, ex.Feedback)
    assert feedback.message and isinstance(str(feedback), str) and feedback._repr_html_().startswith("<div")
    if not feedback.readable:
        assert not feedback.correct and feedback.message.startswith("Cannot read")
    if feedback.correct:
        assert feedback.expected is not None
        assert ex.get(exercise_id).kind != "numeric" or math.isfinite(feedback.expected)
