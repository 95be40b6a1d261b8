"""The registry of exercises: every chapter's bank, by stable id, and one learner's instance of each.

The table is built from the chapter modules under :mod:`commlab.exercises.bank` (each defines a tuple
``EXERCISES``: ``chNN`` the numeric ones, ``chNN_concepts``, where it exists, those that test understanding with
choices and short answers) and is read-only. Ids are stable: progress files and answer keys refer to them.
"""
from __future__ import annotations

import difflib
import importlib
from types import MappingProxyType

from commlab.errors import CommlabError
from commlab.exercises.model import Exercise, Worked
from commlab.exercises.seeding import current_learner, rng_for

CHAPTERS = ("01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11")


def _bank(chapter: str) -> tuple[Exercise, ...]:
    """The exercises of one chapter: its numeric bank, then its ``_concepts`` bank when there is one."""
    found = tuple(importlib.import_module(f"commlab.exercises.bank.ch{chapter}").EXERCISES)
    try:
        concepts = importlib.import_module(f"commlab.exercises.bank.ch{chapter}_concepts")
    except ModuleNotFoundError as exc:
        if exc.name != f"commlab.exercises.bank.ch{chapter}_concepts":
            raise
        return found
    return found + tuple(concepts.EXERCISES)


def _load() -> MappingProxyType:
    table = {}
    for chapter in CHAPTERS:
        for exercise in _bank(chapter):
            if exercise.id in table:
                raise CommlabError(f"exercise id {exercise.id!r} is registered twice")
            if exercise.chapter != chapter:
                raise CommlabError(f"exercise {exercise.id!r} is in the bank of chapter {chapter}")
            table[exercise.id] = exercise
    return MappingProxyType(table)


_TABLE = _load()


def check_chapter(chapter: object) -> str:
    """A chapter as two digits ("5", 5, "05" -> "05"), or CommlabError listing the chapters."""
    text = str(chapter).strip()
    text = text.zfill(2) if text.isdigit() else text
    if text not in CHAPTERS:
        raise CommlabError(f"unknown chapter {chapter!r}; expected one of: {', '.join(CHAPTERS)}")
    return text


def exercises(chapter: object = None) -> tuple[Exercise, ...]:
    """All registered exercises in id order, or those of one chapter."""
    wanted = None if chapter is None else check_chapter(chapter)
    return tuple(e for e in sorted(_TABLE.values(), key=lambda e: e.id) if wanted in (None, e.chapter))


def ids(chapter: object = None) -> tuple[str, ...]:
    """The ids of :func:`exercises`."""
    return tuple(e.id for e in exercises(chapter))


def get(exercise_id: object) -> Exercise:
    """An exercise by id; an unknown id is a CommlabError suggesting close ids."""
    if not isinstance(exercise_id, str) or exercise_id not in _TABLE:
        close = difflib.get_close_matches(str(exercise_id), list(_TABLE), n=3)
        suggestion = f"; did you mean {', '.join(close)}?" if close else "; `commlab exercises list` lists them"
        raise CommlabError(f"unknown exercise {exercise_id!r}{suggestion}")
    return _TABLE[exercise_id]


def worked(exercise_id: str, learner: object = None) -> Worked:
    """This learner's instance of an exercise (the learner as in :func:`current_learner`)."""
    exercise = get(exercise_id)
    return exercise.make(rng_for(current_learner(learner), exercise.id))
