"""Judging one answer against one learner's instance: the Feedback a learner reads.

The judgement is pure (no files): :func:`judge` takes the exercise, this learner's :class:`Worked` and the
answer already read into the exercise's unit, and says whether it is right (within the relative tolerance,
or exactly for whole-number answers), and if not, which known slip explains it (see
:mod:`commlab.exercises.mistakes`) followed by the hint. A wrong answer that no slip explains is only told
"too large" or "too small", so the expected value stays hidden until it is allowed.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, replace

from commlab.exercises.answers import format_answer
from commlab.exercises.mistakes import Match, find_mistake, generic_mistakes
from commlab.exercises.model import Exercise, Worked

_STYLE = "padding:6px 10px;border-left:4px solid {colour};margin:4px 0"


@dataclass(frozen=True)
class Feedback:
    """What a learner is told about one answer."""

    correct: bool
    """The answer is right within the exercise's tolerance."""
    message: str
    """The feedback in words: verdict, likely mistake, hint."""
    expected: float | None = None
    """The expected value in the exercise's unit, only once allowed (right answer, or solution unlocked)."""
    mistake: str | None = None
    """Name of the slip that explains a wrong answer ("bits vs bytes"), or None."""
    readable: bool = True
    """False when the answer could not be read as a number in the right unit."""
    exercise_id: str = ""
    unit: str = ""

    def __str__(self) -> str:
        return self.message

    def __bool__(self) -> bool:
        return self.correct

    def _repr_html_(self) -> str:
        colour = "#2e7d32" if self.correct else ("#c62828" if self.readable else "#ef6c00")
        lines = "<br>".join(html.escape(line) for line in self.message.splitlines())
        return f'<div class="commlab-feedback" style="{_STYLE.format(colour=colour)}">{lines}</div>'


def unreadable(exercise: Exercise, reason: str) -> Feedback:
    """Feedback for an answer that cannot be read (it does not count as an attempt)."""
    return Feedback(False, f"Cannot read that answer: {reason}", None, None, False, exercise.id, exercise.unit)


def is_correct(exercise: Exercise, expected: float, value: float) -> bool:
    """Within the relative tolerance; whole-number answers must match exactly."""
    if exercise.integer:
        return abs(value - expected) <= 1e-9 * max(1.0, abs(expected))
    return abs(value - expected) <= exercise.tolerance * abs(expected)


def _tolerance_words(exercise: Exercise) -> str:
    return "exactly" if exercise.integer else f"within {exercise.tolerance:.0%}"


def _mistake_words(match: Match) -> str:
    factor = f"{match.mistake.factor:.3g}"
    times = f"{factor} times" if match.direction > 0 else f"1/{factor} of"
    text = f"Your answer is {times} the expected value. Likely mistake: {match.mistake.name}: {match.mistake.explain}."
    others_list = [m.name for m in match.also if not match.mistake.name.startswith(m.name)
                   and not m.name.startswith(match.mistake.name)]
    if others_list:
        others = "; ".join(others_list)
        which = "this exercise's likely one" if match.declared else "the most common one"
        text += (f"\nWith these numbers the same factor also fits: {others}. "
                 f"Named first: {match.mistake.name}, {which}.")
    return text


def judge(exercise: Exercise, worked: Worked, value: float) -> Feedback:
    """Judge ``value`` (already in the exercise's unit) against this learner's expected answer."""
    expected = worked.expected
    if is_correct(exercise, expected, value):
        message = (f"Correct: {format_answer(value, exercise.unit)} is {_tolerance_words(exercise)} of the "
                   f"expected {format_answer(expected, exercise.unit)}.")
        return Feedback(True, message, expected, None, True, exercise.id, exercise.unit)
    hint = f"Hint: {exercise.hint}"
    if value <= 0:
        return Feedback(False, f"Not yet: the answer must be a positive number.\n{hint}", None, None, True,
                        exercise.id, exercise.unit)
    generic = generic_mistakes(exercise.unit, worked.n_ranks)
    match = find_mistake(value / expected, worked.mistakes, generic, exercise.tolerance)
    if match is None:
        size = "too large" if value > expected else "too small"
        text = f"Not yet: {format_answer(value, exercise.unit)} is {size} (needed {_tolerance_words(exercise)})."
        return Feedback(False, f"{text}\n{hint}", None, None, True, exercise.id, exercise.unit)
    message = f"Not yet. {_mistake_words(match)}\n{hint}"
    return Feedback(False, message, None, match.mistake.name, True, exercise.id, exercise.unit)


def reveal(feedback: Feedback, expected: float, why: str) -> Feedback:
    """The same feedback with the expected value shown, and the reason it may be shown."""
    text = f"{feedback.message}\n{why}"
    return replace(feedback, expected=expected, message=text)
