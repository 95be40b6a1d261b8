"""Helpers of the exercises that test understanding (``choice`` and ``short``): a paragraph with one wrong
sentence, a layout that needs one collective, and the wording shared by the chapters' ``*_concepts`` banks."""
from __future__ import annotations

import numpy as np

from commlab.exercises.model import Choice, Worked, choice_worked, short_worked


def wrong_sentence(rng: np.random.Generator, topic: str, claims: list[tuple[str, str, str | None, str | None]],
                   params: dict | None = None) -> Worked:
    """A paragraph of the ``claims``, one of them (drawn with ``rng``) stated wrongly; the learner names it.

    Each claim is (true sentence, why it holds, wrong sentence or None, what is wrong with it); the claims are
    shown in the order given (a paragraph reads in order), one with a wrong version in its wrong form. Picking a
    true sentence is answered with why it holds (the misconception: believing it false)."""
    can_be_wrong = [i for i, c in enumerate(claims) if c[2]]
    k = can_be_wrong[int(rng.integers(len(can_be_wrong)))]
    right = Choice(str(claims[k][2]), f"That sentence is wrong: {claims[k][3]}")
    others = [Choice(c[0], f"That sentence is true: {c[1]}") for i, c in enumerate(claims) if i != k]
    stem = f"{topic} One of these sentences is wrong: which?"
    return choice_worked(rng, stem, right, others, f"The wrong sentence: \"{claims[k][2]}\" {claims[k][3]}",
                         params=dict(params or {}, wrong=k), shuffle=False, right_at=k)


def scenario_short(rng: np.random.Generator, scenarios: list[dict], what: str) -> Worked:
    """One of ``scenarios`` (``text``, ``accepted``, ``why``, ``wrong``: {answer: feedback}) drawn with ``rng``, as a
    short-answer question asking for ``what``."""
    s = scenarios[int(rng.integers(len(scenarios)))]
    wrong = [Choice(answer, feedback) for answer, feedback in s["wrong"].items()]
    return short_worked(f"{s['text']} {what}", s["accepted"], wrong, s["why"], params={"scenario": s["accepted"][0]})
