"""A learner's progress (attempts, solved, first-solved time) in a local JSON file a crash cannot corrupt.

The file is ``~/.commlab/progress.json`` unless ``COMMLAB_PROGRESS`` or a ``path=`` argument names another.
Every update is a read-modify-write under an exclusive lock (``fcntl.flock`` on ``progress.json.lock`` on
POSIX, a lock file created with O_EXCL elsewhere), so two kernels recording at once both count. The new
content goes to a temporary file in the same directory, is flushed and fsync'ed, and replaces the old file
with ``os.replace`` (atomic on POSIX and Windows): a reader sees the old file or the new one, never half.
A file that cannot be read (not JSON, not this layout) is renamed ``progress.json.corrupt-<timestamp>``
with a :class:`ProgressWarning` naming both paths, never silently dropped.

Layout: ``{"format": "commlab-progress", "version": 1, "learners": {learner: {exercise id:
{"attempts": int, "solved": bool, "first_solved": ISO time or null}}}}``.

:func:`chapter_progress` sums one learner's records per chapter (chapter 10's progress bars).
"""
from __future__ import annotations

import json
import os
import tempfile
import warnings
from contextlib import suppress
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from commlab.errors import CommlabError
from commlab.exercises.locking import locked
from commlab.exercises.registry import exercises
from commlab.exercises.seeding import current_learner

ENV_PROGRESS = "COMMLAB_PROGRESS"
FORMAT = "commlab-progress"
VERSION = 1
#: attempts after which the worked solution may be shown
ATTEMPTS_FOR_SOLUTION = 3


class ProgressWarning(UserWarning):
    """The progress file was unreadable and was set aside, or could not be written."""


@dataclass(frozen=True)
class Entry:
    """One learner's record for one exercise."""

    attempts: int = 0
    solved: bool = False
    first_solved: str | None = None

    @property
    def solution_unlocked(self) -> bool:
        return self.solved or self.attempts >= ATTEMPTS_FOR_SOLUTION


def progress_path(path: str | os.PathLike | None = None) -> Path:
    """The progress file: the argument, else ``COMMLAB_PROGRESS``, else ``~/.commlab/progress.json``."""
    if path is not None:
        return Path(path).expanduser()
    from_env = os.environ.get(ENV_PROGRESS, "").strip()
    return Path(from_env).expanduser() if from_env else Path.home() / ".commlab" / "progress.json"


def _empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "learners": {}}


def _valid_entry(entry: object) -> bool:
    return (isinstance(entry, dict) and type(entry.get("attempts")) is int and entry["attempts"] >= 0
            and isinstance(entry.get("solved"), bool)
            and (entry.get("first_solved") is None or isinstance(entry.get("first_solved"), str)))


def _check_layout(data: object) -> dict:
    """Return ``data`` if it has the progress layout, else raise ValueError saying what is wrong."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ValueError(f"not a {FORMAT} file of version {VERSION}")
    learners = data.get("learners")
    if not isinstance(learners, dict):
        raise ValueError("'learners' is not a mapping")
    for learner, exercises in learners.items():
        if not isinstance(exercises, dict) or not all(_valid_entry(e) for e in exercises.values()):
            raise ValueError(f"bad entries for learner {learner!r}")
    return data


def _parse(path: Path) -> dict:
    """The file's content; ValueError (or UnicodeDecodeError) when it is not a progress file."""
    with open(path, encoding="utf-8") as fh:
        return _check_layout(json.load(fh))


def _set_aside(path: Path, reason: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    os.replace(path, target)
    warnings.warn(f"commlab: progress file {path} could not be read ({reason}); it was moved to {target} "
                  "and a new progress file was started", ProgressWarning, stacklevel=4)
    return target


def _read_locked(path: Path) -> dict:
    """Read under the lock; set an unreadable file aside (with a warning) and start afresh."""
    try:
        return _parse(path)
    except FileNotFoundError:
        return _empty()
    except (ValueError, UnicodeDecodeError) as exc:
        _set_aside(path, str(exc) or type(exc).__name__)
        return _empty()


def _write_atomic(path: Path, data: dict) -> None:
    """Temporary file in the same directory, flush, fsync, os.replace, then fsync the directory."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def load(path: str | os.PathLike | None = None) -> dict:
    """The whole progress file as a dict (an empty record when there is none yet)."""
    target = progress_path(path)
    if not target.exists():
        return _empty()
    try:
        return _parse(target)
    except (ValueError, UnicodeDecodeError):
        with locked(target):
            return _read_locked(target)


def entry(exercise_id: str, learner: str, path: str | os.PathLike | None = None) -> Entry:
    """This learner's record for one exercise (zero attempts when there is none)."""
    raw = load(path)["learners"].get(learner, {}).get(exercise_id)
    return Entry(**raw) if raw else Entry()


def record_attempt(exercise_id: str, learner: str, correct: bool,
                   path: str | os.PathLike | None = None) -> Entry:
    """Count one attempt (and a first solve) under the lock; return the updated record."""
    target = progress_path(path)
    try:
        with locked(target):
            data = _read_locked(target)
            exercises = data["learners"].setdefault(learner, {})
            old = Entry(**exercises.get(exercise_id, asdict(Entry())))
            first = old.first_solved
            if correct and first is None:
                first = datetime.now(timezone.utc).isoformat(timespec="seconds")
            new = Entry(old.attempts + 1, old.solved or bool(correct), first)
            exercises[exercise_id] = asdict(new)
            _write_atomic(target, data)
            return new
    except OSError as exc:
        raise CommlabError(f"cannot write the progress file {target}: {exc.strerror or exc}; set "
                           f"{ENV_PROGRESS} to a writable path") from exc


@dataclass(frozen=True)
class ChapterProgress:
    """One learner's exercises of one chapter: solved, attempted but not solved, not attempted."""

    solved: int = 0
    attempted: int = 0
    untouched: int = 0

    @property
    def total(self) -> int:
        return self.solved + self.attempted + self.untouched


def chapter_progress(learner: object = None, path: str | os.PathLike | None = None) -> dict[str, ChapterProgress]:
    """{chapter ("01".."10"): ChapterProgress} for every chapter with registered exercises, in chapter order.

    The learner is as in :func:`~commlab.exercises.seeding.current_learner` (the argument, else
    ``COMMLAB_LEARNER``, else the default); the file as in :func:`progress_path`. Records of ids that are no
    longer registered are ignored; an exercise without a record counts as untouched.
    """
    records = load(path)["learners"].get(current_learner(learner), {})
    counts: dict[str, list[int]] = {}
    for exercise in exercises():
        raw = records.get(exercise.id)
        column = 2 if not raw or raw["attempts"] == 0 else (0 if raw["solved"] else 1)
        counts.setdefault(exercise.chapter, [0, 0, 0])[column] += 1
    return {chapter: ChapterProgress(*counts[chapter]) for chapter in sorted(counts)}
