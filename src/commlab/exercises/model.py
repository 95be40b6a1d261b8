"""What an exercise is: its fixed description, and one learner's instance of it.

An :class:`Exercise` is registered once under a stable id (``ch05.ring-volume``). Its ``make`` function
receives a numpy ``Generator`` (seeded per learner, see :mod:`commlab.exercises.seeding`) and returns a
:class:`Worked`: the question with this learner's numbers, the expected answer computed by commlab's own
models (never typed in), the worked solution, and the likely mistakes for these numbers.

An exercise is of one of three kinds (:data:`KINDS`):

- ``numeric``: a number in a unit, judged within a relative tolerance; a wrong number is matched against the
  known slips (:class:`Mistake`);
- ``choice``: one of a few lettered choices (:func:`choice_worked` shuffles them per learner); every wrong
  choice carries the sentence that names its misconception;
- ``short``: a word or two (a collective's name, a rank, a call), compared after :func:`normalise`; known wrong
  answers carry their own sentence.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from commlab.errors import CommlabError

_ID_RE = re.compile(r"^ch(\d\d)\.[a-z0-9]+(?:-[a-z0-9]+)*$")
KINDS = ("numeric", "choice", "short")
LETTERS = "ABCDEFGH"


def normalise(text: str) -> str:
    """A short answer as it is compared: lower case, letters and digits only, without a ``dist.``,
    ``torch.distributed.`` or ``nccl`` prefix ("dist.all_gather", "All-Gather" and "ncclAllGather" read alike).

    >>> normalise("dist.all_gather_into_tensor()"), normalise(" Reduce-Scatter "), normalise("ncclAllGather")
    ('allgatherintotensor', 'reducescatter', 'allgather')
    """
    text = str(text).strip().lower()
    for prefix in ("torch.distributed.", "dist.", "nccl"):
        text = text.removeprefix(prefix)
    return re.sub(r"[^a-z0-9]", "", text.removesuffix("()"))


@dataclass(frozen=True)
class Choice:
    """One choice of a ``choice`` exercise, or one known answer of a ``short`` one."""

    text: str
    """What the learner reads (a choice) or types (a short answer)."""
    feedback: str
    """For a wrong choice: the sentence naming its misconception. For the right one: why it is right."""
    correct: bool = False

    def __post_init__(self) -> None:
        if not self.text or not self.feedback:
            raise CommlabError(f"choice {self.text!r}: text and feedback must not be empty")


@dataclass(frozen=True)
class Mistake:
    """A slip that multiplies the answer by ``factor`` (the learner's answer divided by the right one)."""

    factor: float
    """Learner's answer / expected answer when this slip is made (an answer off the other way matches too)."""
    name: str
    """Short name, reported as ``Feedback.mistake``: "bits vs bytes"."""
    explain: str
    """One sentence: what probably went wrong and how to fix it."""

    def __post_init__(self) -> None:
        if not (isinstance(self.factor, (int, float)) and math.isfinite(self.factor) and self.factor > 0):
            raise CommlabError(f"mistake {self.name!r}: factor must be a finite number > 0, got {self.factor!r}")
        if not self.name or not self.explain:
            raise CommlabError(f"mistake with factor {self.factor}: name and explain must not be empty")


@dataclass(frozen=True)
class Worked:
    """One learner's instance of an exercise: everything that depends on the seed."""

    question: str
    """The question with this learner's numbers (plain text; $...$ LaTeX allowed)."""
    expected: float | str | None
    """The right answer: a number in the exercise's unit, computed by commlab (``numeric``); the right
    choice's letter (``choice``, filled in from ``choices``); the first accepted text (``short``)."""
    solution: str
    """The worked solution with this learner's numbers."""
    mistakes: tuple[Mistake, ...] = ()
    """This exercise's likely slips for these numbers, most likely first."""
    n_ranks: int | None = None
    """Ranks in the question, if any: adds the ring factors and N to the slips looked for."""
    params: dict = field(default_factory=dict)
    """The drawn parameters (for the answer key and tests)."""
    choices: tuple[Choice, ...] = ()
    """A ``choice`` exercise's choices in the order shown (lettered A, B, ...); exactly one is correct."""
    accepted: tuple[str, ...] = ()
    """A ``short`` exercise's right answers (compared after :func:`normalise`)."""
    known_wrong: tuple[Choice, ...] = ()
    """A ``short`` exercise's likely wrong answers, each with the sentence that names the misconception."""

    def __post_init__(self) -> None:
        if self.choices:
            right = [i for i, c in enumerate(self.choices) if c.correct]
            if len(right) != 1 or len(self.choices) > len(LETTERS):
                raise CommlabError(f"a choice exercise needs one right choice among at most {len(LETTERS)}, got "
                                   f"{len(right)} right of {len(self.choices)}")
            object.__setattr__(self, "expected", LETTERS[right[0]])
            return
        if self.accepted:
            if any(not normalise(a) for a in self.accepted):
                raise CommlabError(f"accepted answers must hold letters or digits, got {self.accepted!r}")
            clash = [w.text for w in self.known_wrong if normalise(w.text) in {normalise(a) for a in self.accepted}]
            if clash:
                raise CommlabError(f"answers both accepted and known wrong: {clash}")
            object.__setattr__(self, "expected", self.accepted[0])
            return
        value = float(self.expected)  # type: ignore[arg-type]
        if not math.isfinite(value) or value <= 0:
            raise CommlabError(f"expected answer must be a finite number > 0, got {self.expected!r}")
        object.__setattr__(self, "expected", value)

    @property
    def kind(self) -> str:
        """``choice``, ``short`` or ``numeric``, from what the instance holds."""
        return "choice" if self.choices else ("short" if self.accepted else "numeric")

    @property
    def right_choice(self) -> Choice | None:
        """The right choice of a ``choice`` exercise (None for the other kinds)."""
        return next((c for c in self.choices if c.correct), None)


def choice_worked(rng: np.random.Generator, stem: str, right: Choice, wrong: tuple[Choice, ...] | list[Choice],
                  solution: str, params: dict | None = None, shuffle: bool = True, right_at: int = 0) -> Worked:
    """A ``choice`` instance: the right choice and the wrong ones in an order drawn with ``rng`` (each learner
    has their own letters), listed under the stem as "A. ...", "B. ...". ``shuffle=False`` keeps the order given,
    the right choice at ``right_at`` (choices that read in sequence: the sentences of a paragraph)."""
    choices = [Choice(c.text, c.feedback) for c in wrong]
    choices.insert(0 if shuffle else right_at, Choice(right.text, right.feedback, True))
    if shuffle:
        choices = [choices[int(i)] for i in rng.permutation(len(choices))]
    lines = "\n".join(f"{LETTERS[i]}. {c.text}" for i, c in enumerate(choices))
    question = f"{stem}\n\n{lines}\n\nAnswer with a letter."
    return Worked(question, None, solution, params=dict(params or {}), choices=tuple(choices))


def short_worked(stem: str, accepted: tuple[str, ...] | list[str], known_wrong: tuple[Choice, ...] | list[Choice],
                 solution: str, params: dict | None = None) -> Worked:
    """A ``short`` instance: a word or two, any of ``accepted`` right, each of ``known_wrong`` with its sentence."""
    return Worked(stem, None, solution, params=dict(params or {}), accepted=tuple(accepted),
                  known_wrong=tuple(known_wrong))


@dataclass(frozen=True)
class Exercise:
    """A registered exercise: what stays the same for every learner."""

    id: str
    """Stable id, ``chNN.short-name``."""
    title: str
    """A few words for lists."""
    unit: str
    """Unit of the expected answer (see ``commlab.exercises.answers.UNITS``)."""
    tolerance: float
    """Relative tolerance: 0.02 accepts answers within 2%. 0 means an exact whole number."""
    hint: str
    """Points to the formula and the chapter, without giving the number away."""
    make: Callable[[np.random.Generator], Worked]
    """Draws the parameters and computes the question, answer, solution and slips."""
    kind: str = "numeric"
    """``numeric``, ``choice`` or ``short`` (:data:`KINDS`); the last two have no unit and no tolerance."""

    def __post_init__(self) -> None:
        from commlab.exercises.answers import UNITS

        if self.kind not in KINDS:
            raise CommlabError(f"exercise {self.id}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind != "numeric" and (self.unit or self.tolerance):
            raise CommlabError(f"exercise {self.id}: a {self.kind} exercise has no unit and no tolerance, got "
                               f"{self.unit!r} and {self.tolerance!r}")
        if not _ID_RE.match(self.id):
            raise CommlabError(f"exercise id {self.id!r} must look like 'ch05.ring-volume'")
        if self.unit not in UNITS:
            raise CommlabError(f"exercise {self.id}: unknown unit {self.unit!r}; expected one of {sorted(UNITS)}")
        if not 0 <= self.tolerance <= 0.1:
            raise CommlabError(f"exercise {self.id}: tolerance must be from 0 to 0.1, got {self.tolerance!r}")

    @property
    def chapter(self) -> str:
        """The chapter number as two digits: "05"."""
        return self.id[2:4]                 # __post_init__ checked the id against _ID_RE: "ch05.<name>"

    @property
    def integer(self) -> bool:
        """An exact whole-number answer (a count of links, steps, messages)."""
        return self.kind == "numeric" and self.tolerance == 0
