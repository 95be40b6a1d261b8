"""Reading a progress file, damaged or written by a newer commlab, without losing what can still be read.

:func:`read_progress` returns a :class:`Reading`: the progress layout with every entry that is still a valid
record, how many were kept and how many were not, and what was wrong (None for a clean file). It never
changes the file: moving a damaged file aside is the writer's job (:func:`commlab.exercises.progress.
record_attempt`), never a reader's.

* Unknown keys (a newer version's) are kept and ignored: an entry needs ``attempts`` (int >= 0), ``solved``
  (bool) and ``first_solved`` (ISO time or null), and may carry more.
* JSON cut off or damaged from some point on: the longest prefix that parses once its open brackets are
  closed is read (:func:`repair_json`), so the entries before the damage are kept.
* A file that is not a commlab progress file at all (another JSON document, text, binary) keeps nothing.

>>> repair_json('{"format": "commlab-progress", "learners": {"ada": {"x": {"attempts": 1}, "y": {"att')
{'format': 'commlab-progress', 'learners': {'ada': {'x': {'attempts': 1}}}}
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from commlab.errors import CommlabError

FORMAT = "commlab-progress"
VERSION = 1
#: What an entry must hold; other keys are a newer version's and are kept as they are.
ENTRY_KEYS = ("attempts", "solved", "first_solved")


def empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "learners": {}}


@dataclass
class Reading:
    """What :func:`read_progress` found."""

    data: dict = field(default_factory=empty)
    kept: int = 0
    """Entries read (valid records)."""
    dropped: int = 0
    """Entries present but not valid records (a negative count, a solved flag that is not a bool, ...)."""
    problem: str | None = None
    """Why the file is not a clean progress file, or None."""


def valid_entry(entry: object) -> bool:
    return (isinstance(entry, dict) and type(entry.get("attempts")) is int and entry["attempts"] >= 0
            and isinstance(entry.get("solved"), bool)
            and (entry.get("first_solved") is None or isinstance(entry.get("first_solved"), str)))


def _closers(text: str) -> list[tuple[int, str]]:
    """(end, closing brackets) after every complete ``}``/``]`` of ``text``, up to the first mismatch."""
    stack: list[str] = []
    in_string = escaped = False
    ends = []
    for i, ch in enumerate(text):
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                break
            stack.pop()
            ends.append((i + 1, "".join(reversed(stack))))
    return ends


def _loads(text: str) -> object | None:
    try:
        return json.loads(text)
    except ValueError:
        return None


def repair_json(text: str) -> object | None:
    """The longest prefix of ``text`` ending at a closing bracket that parses as JSON once the brackets still
    open are closed (binary search: the prefixes before the damage parse, those after it do not), or None."""
    ends = _closers(text)
    low, high, found = 0, len(ends) - 1, None
    while low <= high:
        mid = (low + high) // 2
        end, closers = ends[mid]
        value = _loads(text[:end] + closers)
        if value is None:
            high = mid - 1
        else:
            found, low = value, mid + 1
    return found


def _salvage(obj: object, reading: Reading) -> None:
    """Fill ``reading.data`` with the valid entries of a decoded document."""
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        reading.problem = reading.problem or f"not a {FORMAT} file"
        return
    version = obj.get("version", VERSION)
    if type(version) is not int or version < 1:
        reading.problem = reading.problem or f"version {version!r} is not a version number"
    learners = obj.get("learners", {})
    if not isinstance(learners, dict):
        reading.problem = reading.problem or "'learners' is not a mapping"
        learners = {}
    reading.data = {**obj, "format": FORMAT, "version": version if type(version) is int else VERSION,
                    "learners": {}}
    for learner, records in learners.items():
        records = records if isinstance(records, dict) else {}
        good = {ex_id: entry for ex_id, entry in records.items() if valid_entry(entry)}
        reading.dropped += len(records) - len(good) if isinstance(learners[learner], dict) else 1
        reading.kept += len(good)
        reading.data["learners"][str(learner)] = good
    if reading.dropped and reading.problem is None:
        reading.problem = f"{reading.dropped} entr{'y is' if reading.dropped == 1 else 'ies are'} not valid records"


def _text(path: os.PathLike) -> str | None:
    """The file's text; None when it does not exist; CommlabError when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CommlabError(f"cannot read the progress file {os.fspath(path)!r}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd"  # not text: nothing to read, reported as not JSON


def read_progress(path: os.PathLike) -> Reading:
    """Read the progress file at ``path`` (see the module docstring); the file itself is never changed."""
    text = _text(path)
    reading = Reading()
    if text is None:
        return reading
    obj = _loads(text)
    if obj is None:
        obj = repair_json(text)
        ours = isinstance(obj, dict) and obj.get("format") == FORMAT
        reading.problem = ("JSON cut off or damaged" if ours else
                           f"not a {FORMAT} file: {'empty' if not text.strip() else 'not JSON'}")
    _salvage(obj, reading)
    return reading
