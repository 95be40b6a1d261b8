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

import re

from commlab.errors import CommlabError
from commlab.exercises.answers import format_answer
from commlab.exercises.mistakes import Match, find_mistake, generic_mistakes
from commlab.exercises.model import LETTERS, Exercise, Worked, normalise

_STYLE = "padding:6px 10px;border-left:4px solid {colour};margin:4px 0"


@dataclass(frozen=True)
class Feedback:
    """What a learner is told about one answer."""

    correct: bool
    """The answer is right within the exercise's tolerance."""
    message: str
    """The feedback in words: verdict, likely mistake, hint."""
    expected: float | str | None = None
    """The expected value in the exercise's unit (a letter for a choice, the text for a short answer), only once
    allowed (right answer, or solution unlocked)."""
    mistake: str | None = None
    """Name of the slip that explains a wrong answer ("bits vs bytes"; "choice B" for a wrong choice, "known
    wrong answer: <text>" for a short one), or None."""
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
    expected = float(worked.expected)  # type: ignore[arg-type]  # a numeric exercise: Worked checked it is a number
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


_LETTER_RE = re.compile(r"^\(?\s*([a-h])\s*[).:]?$", re.IGNORECASE)


def read_choice(exercise: Exercise, worked: Worked, answer: object) -> int:
    """The index of the choice a learner gave: a letter ("B", "b)", "(b)"), its 1-based number, or the choice's
    own text; a CommlabError saying what is accepted otherwise."""
    letters = LETTERS[:len(worked.choices)]
    accepted = f"a letter from {letters[0]} to {letters[-1]}, or the text of a choice"
    if isinstance(answer, bool) or answer is None:
        raise CommlabError(f"cannot read {answer!r} as a choice; give {accepted}")
    if isinstance(answer, int) and 1 <= answer <= len(letters):
        return answer - 1
    if not isinstance(answer, str):
        raise CommlabError(f"cannot read {type(answer).__name__} {answer!r} as a choice; give {accepted}")
    text = answer.strip()
    if not text:
        raise CommlabError(f"the answer is empty; give {accepted}")
    if len(text) > 500:
        raise CommlabError(f"the answer is {len(text)} characters long; give {accepted}")
    found = _LETTER_RE.match(text)
    if found:
        index = LETTERS.index(found.group(1).upper())
        if index < len(letters):
            return index
        raise CommlabError(f"there is no choice {found.group(1).upper()}; give {accepted}")
    if text.isdigit() and 1 <= int(text) <= len(letters):
        return int(text) - 1
    for i, option in enumerate(worked.choices):
        if normalise(option.text) == normalise(text):
            return i
    raise CommlabError(f"cannot read {text[:60]!r} as a choice; give {accepted}")


def read_short(answer: object) -> str:
    """A short answer as text, or a CommlabError (empty, too long, not text)."""
    if isinstance(answer, bool) or not isinstance(answer, (str, int)):
        raise CommlabError(f"cannot read {answer!r} as an answer; type a word or two (a name, a number)")
    text = str(answer).strip()
    if not normalise(text):
        raise CommlabError("the answer is empty; type a word or two (a name, a number)")
    if len(text) > 200:
        raise CommlabError(f"the answer is {len(text)} characters long; type a word or two")
    return text


def judge_choice(exercise: Exercise, worked: Worked, index: int) -> Feedback:
    """The feedback of choice ``index``: why it is right, or the misconception it stands for, then the hint."""
    picked, letter = worked.choices[index], LETTERS[index]
    if picked.correct:
        return Feedback(True, f"Correct: {letter}. {picked.feedback}", worked.expected, None, True, exercise.id)
    return Feedback(False, f"Not yet: {letter} is not it. {picked.feedback}\nHint: {exercise.hint}", None,
                    f"choice {letter}", True, exercise.id)


def judge_short(exercise: Exercise, worked: Worked, text: str) -> Feedback:
    """A short answer: right when it matches an accepted form; a known wrong one gets its sentence."""
    given = normalise(text)
    if given in {normalise(a) for a in worked.accepted}:
        return Feedback(True, f"Correct: {text}.", worked.expected, None, True, exercise.id)
    for wrong in worked.known_wrong:
        if normalise(wrong.text) == given:
            return Feedback(False, f"Not yet: {text} is not it. {wrong.feedback}\nHint: {exercise.hint}", None,
                            f"known wrong answer: {wrong.text}", True, exercise.id)
    return Feedback(False, f"Not yet: {text} is not the answer.\nHint: {exercise.hint}", None, None, True,
                    exercise.id)


def reveal(feedback: Feedback, expected: float | str | None, why: str) -> Feedback:
    """The same feedback with the expected value shown, and the reason it may be shown."""
    text = f"{feedback.message}\n{why}"
    return replace(feedback, expected=expected, message=text)
