"""Auto-checked exercises with numbers of each learner's own (every chapter's exercise cells).

>>> from commlab import exercises as ex
>>> ex.set_learner("ada")           # doctest: +SKIP
>>> print(ex.question("ch05.ring-volume"))            # doctest: +SKIP
>>> ex.check("ch05.ring-volume", "24.5 GB")           # doctest: +SKIP
>>> ex.show("ch05.ring-volume")                       # doctest: +SKIP

An exercise's expected answer is computed by commlab's models (cost, collectives, hardware, parallelism,
units), never typed in. Answers are numbers in the stated unit or text with a unit ("54 ms", "450 GB/s"); an
exercise of kind ``choice`` takes a letter, one of kind ``short`` a word or two, and every wrong choice names its
misconception.
Feedback names the likely slip (bits vs bytes, both directions, the ring factor, 1000 vs 1024, a factor of N)
and gives a hint; after three attempts :func:`solution` shows the worked solution. Progress is kept in
``~/.commlab/progress.json`` (or ``COMMLAB_PROGRESS``); :func:`chapter_progress` sums it per chapter.
Without a learner the seed is :data:`DEFAULT_LEARNER` ("commlab"). Instructors print answer keys with
``commlab exercises key --seed NAME``.
"""
from commlab.exercises.answers import UNITS, format_answer, read_answer
from commlab.exercises.checking import KeyEntry, Solution, check, key, question, solution, solution_text
from commlab.exercises.feedback import Feedback
from commlab.exercises.model import KINDS, Choice, Exercise, Mistake, Worked
from commlab.exercises.progress import (
    ATTEMPTS_FOR_SOLUTION, ENV_PROGRESS, ChapterProgress, ProgressWarning, chapter_progress, progress_path,
)
from commlab.exercises.registry import CHAPTERS, exercises, get, ids, worked
from commlab.exercises.seeding import DEFAULT_LEARNER, ENV_LEARNER, current_learner, set_learner
from commlab.exercises.selfcheck import SELF_CHECK
from commlab.exercises.widget import ExerciseWidget, show, widget

__all__ = [
    "ATTEMPTS_FOR_SOLUTION", "CHAPTERS", "KINDS", "ChapterProgress", "Choice", "DEFAULT_LEARNER", "ENV_LEARNER",
    "ENV_PROGRESS",
    "Exercise", "ExerciseWidget", "Feedback", "KeyEntry", "Mistake", "ProgressWarning", "SELF_CHECK",
    "Solution", "UNITS", "Worked", "chapter_progress", "check", "current_learner", "exercises", "format_answer",
    "get", "ids", "key", "progress_path", "question", "read_answer", "set_learner", "show", "solution",
    "solution_text", "widget", "worked",
]
