"""An exclusive lock around a file's read-modify-write, for two kernels updating it at once.

POSIX: ``fcntl.flock`` on a sibling ``<name>.lock`` file (the data file itself is replaced on every write,
so it cannot carry the lock). The kernel releases a flock when its process dies, so a crash never leaves a
stale lock. Elsewhere: a ``<name>.lock`` file created with O_CREAT | O_EXCL, removed on exit; one older than
``stale_s`` is taken to be left by a crash and removed.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from commlab.errors import CommlabError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


def _timeout(lock_path: Path, timeout_s: float) -> CommlabError:
    return CommlabError(f"could not lock {lock_path} within {timeout_s} s; another process holds it")


@contextmanager
def _flock(lock_path: Path, timeout_s: float) -> Iterator[None]:
    deadline = time.monotonic() + timeout_s
    with open(lock_path, "a+b") as fh:
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise _timeout(lock_path, timeout_s) from None
                time.sleep(0.005)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@contextmanager
def _exclusive_file(lock_path: Path, timeout_s: float, stale_s: float) -> Iterator[None]:  # pragma: no cover
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fd = os.open(lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            try:
                if time.time() - lock_path.stat().st_mtime > stale_s:
                    lock_path.unlink()
                    continue
            except FileNotFoundError:
                continue
            if time.monotonic() > deadline:
                raise _timeout(lock_path, timeout_s) from None
            time.sleep(0.01)
    try:
        yield
    finally:
        os.close(fd)
        lock_path.unlink(missing_ok=True)


@contextmanager
def locked(path: Path, timeout_s: float = 30.0, stale_s: float = 60.0) -> Iterator[None]:
    """Hold an exclusive lock for ``path`` (creating its directory) for the body of a ``with``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    if fcntl is not None:
        with _flock(lock_path, timeout_s):
            yield
    else:  # pragma: no cover - Windows
        with _exclusive_file(lock_path, timeout_s, stale_s):
            yield
