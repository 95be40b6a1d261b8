"""Who the learner is, and the random numbers each learner gets for each exercise.

Every exercise draws its parameters from a numpy ``Generator`` seeded by a stable hash of
(learner, exercise id): two learners get different numbers, the same learner always gets the same ones,
on any machine and in any Python process. Python's ``hash()`` is salted per process, so it is never used;
the seed is the first 16 bytes of a SHA-256 digest.

The learner is a name or a number. It comes from, in order: the ``learner=`` argument of a call, the
``COMMLAB_LEARNER`` environment variable (which :func:`set_learner` sets, so launched ranks and the command
line see it too), or :data:`DEFAULT_LEARNER`. Names are compared after trimming and case folding, so
``"Ada Lovelace"`` and ``" ada  lovelace "`` are the same learner.

>>> normalize_learner(" Ada  Lovelace "), normalize_learner(42), normalize_learner("42")
('ada lovelace', '42', '42')
>>> a = rng_for("ada", "ch05.ring-volume").integers(1 << 30)
>>> b = rng_for("ada", "ch05.ring-volume").integers(1 << 30)
>>> c = rng_for("bob", "ch05.ring-volume").integers(1 << 30)
>>> bool(a == b), bool(a == c)
(True, False)
"""
from __future__ import annotations

import hashlib
import numbers
import os

import numpy as np

from commlab.errors import CommlabError

ENV_LEARNER = "COMMLAB_LEARNER"
#: The learner used when neither ``set_learner`` nor ``COMMLAB_LEARNER`` names one.
DEFAULT_LEARNER = "commlab"
_SALT = b"commlab.exercises/v1"


def normalize_learner(name_or_number: object) -> str:
    """The canonical text of a learner: a whole number as its digits, a name trimmed and case-folded."""
    if isinstance(name_or_number, bool) or name_or_number is None:
        raise CommlabError(f"a learner is a name or a whole number, got {name_or_number!r}")
    if isinstance(name_or_number, numbers.Integral):
        return str(int(name_or_number))
    if not isinstance(name_or_number, str):
        raise CommlabError(
            f"a learner is a name or a whole number, got {type(name_or_number).__name__} {name_or_number!r}")
    text = " ".join(name_or_number.split()).casefold()
    if not text:
        raise CommlabError(f"a learner's name must not be empty, got {name_or_number!r}")
    if "\x00" in text or len(text) > 200:
        raise CommlabError(f"a learner's name must be printable text of at most 200 characters, got {text[:40]!r}")
    return text


def current_learner(learner: object = None) -> str:
    """The learner for a call: the argument, else ``COMMLAB_LEARNER``, else ``DEFAULT_LEARNER``."""
    if learner is not None:
        return normalize_learner(learner)
    from_env = os.environ.get(ENV_LEARNER, "").strip()
    return normalize_learner(from_env) if from_env else DEFAULT_LEARNER


def set_learner(name_or_number: object) -> str:
    """Choose the learner for this kernel (and processes it starts): sets ``COMMLAB_LEARNER``.

    Returns the canonical learner text. Each student runs this once with their own name (or the
    instructor hands out numbers), so every student's exercises carry their own numbers.
    """
    learner = normalize_learner(name_or_number)
    os.environ[ENV_LEARNER] = learner
    return learner


def seed_for(learner: str, exercise_id: str) -> int:
    """A 128-bit seed from SHA-256 of (learner, exercise id): stable across processes and machines."""
    payload = b"\x00".join((_SALT, learner.encode("utf-8"), exercise_id.encode("utf-8")))
    return int.from_bytes(hashlib.sha256(payload).digest()[:16], "little")


def rng_for(learner: str, exercise_id: str) -> np.random.Generator:
    """The generator an exercise draws this learner's parameters from."""
    return np.random.default_rng(seed_for(learner, exercise_id))
