"""Naming the slip behind a wrong answer: generic factors, declared ones, and factors that coincide."""
from __future__ import annotations

import pytest

from commlab.exercises.feedback import judge
from commlab.exercises.mistakes import find_mistake, generic_mistakes
from commlab.exercises.model import Exercise, Mistake, Worked
from commlab.errors import CommlabError


def _exercise(worked: Worked, unit: str = "GB", tolerance: float = 0.02) -> Exercise:
    return Exercise("ch05.test-only", "test", unit, tolerance, "the hint (chapter 05)", lambda rng: worked)


@pytest.mark.parametrize("factor, name", [
    (8, "bits vs bytes"), (1 / 8, "bits vs bytes"), (2, "bidirectional vs unidirectional"),
    (0.5, "bidirectional vs unidirectional"), (1.024, "1000 vs 1024 (KB vs KiB)"),
    (1024**2 / 1e6, "1000^2 vs 1024^2 (MB vs MiB)"), (1e9 / 1024**3, "1000^3 vs 1024^3 (GB vs GiB)"),
    (1000, "unit prefix (factor 1000)"), (1e-6, "unit prefix (factor 10^6)"),
])
def test_generic_factors_without_ranks(factor, name):
    match = find_mistake(factor, (), generic_mistakes("GB/s", None), 0.02)
    assert match is not None and match.mistake.name == name and not match.declared


@pytest.mark.parametrize("n_ranks", [3, 4, 6, 12])
def test_ring_factors_and_n(n_ranks):
    n = n_ranks
    generic = generic_mistakes("GB", n)
    assert find_mistake(2 * (n - 1) / n, (), generic, 0.02).mistake.name == "ring factor 2(N-1)/N"
    assert find_mistake(n / (2 * (n - 1)), (), generic, 0.02).mistake.name == "ring factor 2(N-1)/N"
    assert find_mistake((n - 1) / n, (), generic, 0.02).mistake.name == "ring factor (N-1)/N"
    assert find_mistake(float(n), (), generic, 0.02).mistake.name == "factor of N"
    assert find_mistake(1.37, (), generic, 0.02) is None


def test_bidirectional_only_for_rates_times_and_ratios():
    names = lambda unit: {m.name for m in generic_mistakes(unit, 4)}  # noqa: E731
    assert "bidirectional vs unidirectional" in names("GB/s") and "bidirectional vs unidirectional" in names("ms")
    assert "bidirectional vs unidirectional" not in names("GB")   # a byte count has no direction


def test_percent_only_for_percent_answers():
    assert find_mistake(100, (), generic_mistakes("%", None), 0.02).mistake.name == "fraction vs percent"
    assert find_mistake(100, (), generic_mistakes("GB", None), 0.02) is None


def test_n_equal_2_makes_the_ring_factor_invisible_and_coincide_with_bidirectional():
    generic = generic_mistakes("GB/s", 2)
    assert find_mistake(1.0, (), generic, 0.02) is None
    match = find_mistake(0.5, (), generic, 0.02)
    assert match.mistake.name == "bidirectional vs unidirectional"
    assert {m.name for m in match.also} == {"ring factor (N-1)/N", "factor of N"}


def test_declared_mistake_is_preferred_and_the_coincidence_is_said():
    declared = (Mistake(8.0, "counted all 8 ranks", "the question asks per rank"),)
    worked = Worked("q", 10.0, "s", declared, n_ranks=8)
    feedback = judge(_exercise(worked), worked, 80.0)
    assert not feedback.correct and feedback.mistake == "counted all 8 ranks"
    assert "also fits: bits vs bytes; factor of N" in feedback.message
    assert "this exercise's likely one" in feedback.message and "the hint" in feedback.message


def test_declared_mistakes_match_in_their_own_direction_only():
    declared = (Mistake(2.0, "directions in turn", "x"), Mistake(0.5, "bidirectional figure", "y"))
    assert find_mistake(0.5, declared, (), 0.02).mistake.name == "bidirectional figure"
    assert find_mistake(2.0, declared, (), 0.02).mistake.name == "directions in turn"
    assert find_mistake(2.0, declared[1:], (), 0.02) is None


def test_tolerance_decides_correct_and_factor_matches():
    worked = Worked("q", 100.0, "s")
    exercise = _exercise(worked, tolerance=0.02)
    assert judge(exercise, worked, 101.9).correct and not judge(exercise, worked, 102.1).correct
    assert judge(exercise, worked, 800 * 1.019).mistake == "bits vs bytes"
    assert judge(exercise, worked, 800 * 1.03).mistake is None
    too_small = judge(exercise, worked, 37.0)
    assert "too small" in too_small.message and too_small.expected is None
    assert "positive" in judge(exercise, worked, -100.0).message


def test_whole_number_answers_are_exact():
    worked = Worked("q", 28.0, "s")
    exercise = _exercise(worked, unit="", tolerance=0)
    assert judge(exercise, worked, 28).correct and not judge(exercise, worked, 28.2).correct
    assert judge(exercise, worked, 56).mistake == "bidirectional vs unidirectional"


def test_bad_definitions_are_refused():
    with pytest.raises(CommlabError, match="factor"):
        Mistake(0.0, "zero", "never")
    with pytest.raises(CommlabError, match="expected answer"):
        Worked("q", float("nan"), "s")
    with pytest.raises(CommlabError, match="id"):
        Exercise("ring volume", "t", "GB", 0.02, "h", lambda rng: None)
    with pytest.raises(CommlabError, match="unit"):
        Exercise("ch05.x", "t", "furlongs", 0.02, "h", lambda rng: None)
