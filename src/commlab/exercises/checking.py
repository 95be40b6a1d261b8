"""Checking answers, showing worked solutions, and the instructor's answer key.

``check(id, answer)`` reads the answer (number or text with a unit), judges it against this learner's
numbers, counts the attempt in the progress file, and returns a :class:`Feedback`. Answers that cannot be
read come back as feedback with ``readable=False`` and do not count. After
:data:`~commlab.exercises.progress.ATTEMPTS_FOR_SOLUTION` attempts (or once solved) ``solution(id)`` shows
the worked solution and the feedback carries the expected value.
"""
from __future__ import annotations

import html
import os
import warnings
from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.exercises import progress as store
from commlab.exercises.answers import format_answer, read_answer
from commlab.exercises.feedback import (
    Feedback, judge, judge_choice, judge_short, read_choice, read_short, reveal, unreadable,
)
from commlab.exercises.model import LETTERS, Exercise, Worked
from commlab.exercises.registry import exercises, get, worked
from commlab.exercises.seeding import current_learner

PathArg = str | os.PathLike | None


def _record(exercise_id: str, learner: str, correct: bool, path: PathArg) -> store.Entry | None:
    try:
        return store.record_attempt(exercise_id, learner, correct, path)
    except CommlabError as exc:
        warnings.warn(f"commlab: this attempt was not saved: {exc}", store.ProgressWarning, stacklevel=3)
        return None


def check(exercise_id: str, answer: object, *, learner: object = None, progress: PathArg = None,
          record: bool = True, reveal_answer: bool = False) -> Feedback:
    """Judge ``answer`` for this learner's instance of ``exercise_id``; never raises for a bad answer.

    ``record=False`` leaves the progress file alone (the instructor's command line does that);
    ``reveal_answer=True`` shows the expected value whatever the attempts (the answer key does that).
    """
    exercise = get(exercise_id)
    who = current_learner(learner)
    instance = worked(exercise.id, who)
    try:
        feedback = _judged(exercise, instance, answer)
    except CommlabError as exc:
        return unreadable(exercise, str(exc))
    entry = _record(exercise.id, who, feedback.correct, progress) if record else None
    expected_text = answer_text(exercise, instance)
    if feedback.correct:
        return feedback
    if reveal_answer:
        return reveal(feedback, instance.expected, f"Expected: {expected_text}.")
    if entry is not None and entry.solution_unlocked:
        return reveal(feedback, instance.expected, f"After {entry.attempts} attempts: the expected answer is "
                      f"{expected_text}; see the worked solution with solution({exercise.id!r}).")
    return feedback


def _judged(exercise: Exercise, instance: Worked, answer: object) -> Feedback:
    """Read ``answer`` as the exercise's kind asks and judge it (CommlabError when it cannot be read)."""
    if exercise.kind == "choice":
        return judge_choice(exercise, instance, read_choice(exercise, instance, answer))
    if exercise.kind == "short":
        return judge_short(exercise, instance, read_short(answer))
    return judge(exercise, instance, read_answer(answer, exercise.unit))


def answer_text(exercise: Exercise, instance: Worked) -> str:
    """The right answer as the key prints it: "54.44 ms"; "B. <the choice>"; the first accepted short answer."""
    if exercise.kind == "choice":
        right = instance.right_choice
        return f"{instance.expected}. {right.text if right else ''}"
    if exercise.kind == "short":
        others = list(instance.accepted[1:])
        return str(instance.expected) + (f" (also accepted: {', '.join(others)})" if others else "")
    return format_answer(float(instance.expected), exercise.unit)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Solution:
    """A worked solution, or the note saying when it opens."""

    exercise_id: str
    unlocked: bool
    text: str

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return self.unlocked

    def _repr_html_(self) -> str:
        body = "<br>".join(html.escape(line) for line in self.text.splitlines())
        return f'<div class="commlab-solution">{body}</div>'


def solution_text(exercise_id: str, learner: object = None) -> str:
    """The worked solution with this learner's numbers, unconditionally (answer keys, tests)."""
    exercise = get(exercise_id)
    instance = worked(exercise.id, learner)
    answer = answer_text(exercise, instance)
    return f"{instance.question}\n\nWorked solution:\n{instance.solution}\n\nAnswer: {answer}"


def solution(exercise_id: str, *, learner: object = None, progress: PathArg = None,
             force: bool = False) -> Solution:
    """The worked solution once it is open (3 attempts or solved), else a note on when it opens."""
    exercise = get(exercise_id)
    who = current_learner(learner)
    entry = store.entry(exercise.id, who, progress)
    if force or entry.solution_unlocked:
        return Solution(exercise.id, True, solution_text(exercise.id, who))
    left = store.ATTEMPTS_FOR_SOLUTION - entry.attempts
    return Solution(exercise.id, False, f"The worked solution of {exercise.id} opens after "
                    f"{store.ATTEMPTS_FOR_SOLUTION} attempts or once solved: {left} more to go. "
                    f"Hint: {exercise.hint}")


def question(exercise_id: str, learner: object = None) -> str:
    """The question with this learner's numbers."""
    return worked(exercise_id, learner).question


@dataclass(frozen=True)
class KeyEntry:
    """One line of an answer key."""

    id: str
    chapter: str
    title: str
    unit: str
    tolerance: float
    question: str
    answer: float | str
    answer_text: str
    solution: str
    kind: str = "numeric"
    feedback: tuple[tuple[str, str], ...] = ()
    """(letter or known wrong answer, its sentence) of a choice or short exercise, for the instructor."""

    def to_dict(self) -> dict:
        row = dict(self.__dict__)
        row["feedback"] = [list(pair) for pair in self.feedback]
        return row


def key(learner: object = None, chapter: object = None) -> tuple[KeyEntry, ...]:
    """The answer key of one learner (seed): question, answer and solution of every exercise."""
    who = current_learner(learner)
    rows = []
    for exercise in exercises(chapter):
        instance = worked(exercise.id, who)
        feedback = (tuple((LETTERS[i], c.feedback) for i, c in enumerate(instance.choices))
                    + tuple((w.text, w.feedback) for w in instance.known_wrong))
        rows.append(KeyEntry(exercise.id, exercise.chapter, exercise.title, exercise.unit, exercise.tolerance,
                             instance.question, instance.expected,  # type: ignore[arg-type]
                             answer_text(exercise, instance), instance.solution, exercise.kind, feedback))
    return tuple(rows)
