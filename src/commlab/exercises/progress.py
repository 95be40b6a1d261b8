"""A learner's progress (attempts, solved, first-solved time) in a local JSON file a crash cannot corrupt.

The file is ``~/.commlab/progress.json`` unless ``COMMLAB_PROGRESS`` or a ``path=`` argument names another.
Every update is a read-modify-write under an exclusive lock (:mod:`commlab.exercises.locking`, the
``filelock`` package), so two kernels recording at once both count. The new content goes to a temporary file
in the same directory, is flushed and fsync'ed, and replaces the old file with ``os.replace`` (atomic on
POSIX and Windows): a reader sees the old file or the new one, never half.

Reading never changes the file (:mod:`commlab.exercises.salvage`): entries a newer commlab wrote keep their
extra keys, and a damaged file gives up only what cannot be read, with a :class:`ProgressWarning` saying how
many entries were kept. Only a write moves a damaged file: it is renamed ``progress.json.corrupt-<timestamp>``
whole, as it was, and the new file starts with the entries that could be read, which the warning counts.

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
from commlab.exercises.salvage import ENTRY_KEYS, Reading, read_progress
from commlab.exercises.seeding import current_learner

ENV_PROGRESS = "COMMLAB_PROGRESS"
#: attempts after which the worked solution may be shown
ATTEMPTS_FOR_SOLUTION = 3


class ProgressWarning(UserWarning):
    """The progress file is damaged (its readable entries were kept), or could not be written."""


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


def _kept(reading: Reading) -> str:
    return (f"{reading.kept} entr{'y' if reading.kept == 1 else 'ies'} could be read"
            + (f", {reading.dropped} could not" if reading.dropped else ""))


def _warn(message: str) -> None:
    warnings.warn(f"commlab: {message}", ProgressWarning, stacklevel=4)


def _read(path: Path) -> dict:
    """The file's progress for a reader: salvaged with a warning when damaged, never moved."""
    reading = read_progress(path)
    if reading.problem is not None:
        _warn(f"progress file {path} is damaged ({reading.problem}); {_kept(reading)}; the file was left as it is")
    return reading.data


def _set_aside(path: Path, reading: Reading) -> Path:
    """Rename a damaged file whole, and say so with how many of its entries the new file keeps."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    os.replace(path, target)
    _warn(f"progress file {path} could not be read whole ({reading.problem}); it was moved to {target} "
          f"and a new progress file was started with what it held: {_kept(reading)}")
    return target


def _read_for_update(path: Path) -> dict:
    """Under the lock: the progress to update; a damaged file is moved aside (its good entries carry over)."""
    reading = read_progress(path)
    if reading.problem is not None:
        _set_aside(path, reading)
    return reading.data


def _entry(raw: dict | None) -> Entry:
    """An :class:`Entry` from a record, ignoring keys this version does not know."""
    return Entry(**{k: raw[k] for k in ENTRY_KEYS if k in raw}) if raw else Entry()


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
    """The whole progress file as a dict (an empty record when there is none yet); the file is never changed.
    CommlabError when the path cannot be read (a directory, no permission)."""
    return _read(progress_path(path))


def entry(exercise_id: str, learner: str, path: str | os.PathLike | None = None) -> Entry:
    """This learner's record for one exercise (zero attempts when there is none)."""
    return _entry(load(path)["learners"].get(learner, {}).get(exercise_id))


def record_attempt(exercise_id: str, learner: str, correct: bool,
                   path: str | os.PathLike | None = None) -> Entry:
    """Count one attempt (and a first solve) under the lock; return the updated record."""
    target = progress_path(path)
    try:
        with locked(target):
            data = _read_for_update(target)
            exercises = data["learners"].setdefault(learner, {})
            raw = exercises.get(exercise_id) or {}
            old = _entry(raw)
            first = old.first_solved
            if correct and first is None:
                first = datetime.now(timezone.utc).isoformat(timespec="seconds")
            new = Entry(old.attempts + 1, old.solved or bool(correct), first)
            exercises[exercise_id] = {**raw, **asdict(new)}  # a newer version's keys are kept
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
        record = _entry(records.get(exercise.id))
        column = 2 if record.attempts == 0 else (0 if record.solved else 1)
        counts.setdefault(exercise.chapter, [0, 0, 0])[column] += 1
    return {chapter: ChapterProgress(*counts[chapter]) for chapter in sorted(counts)}
