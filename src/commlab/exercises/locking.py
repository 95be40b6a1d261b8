"""An exclusive lock around a file's read-modify-write, for two kernels updating it at once.

The lock is the ``filelock`` package's ``FileLock`` on a sibling ``<name>.lock`` file (the data file itself is
replaced on every write, so it cannot carry the lock): ``fcntl.flock`` on POSIX, ``msvcrt.locking`` on
Windows. Both are released by the operating system when the process dies, so a crash never leaves a stale
lock, and no process ever removes a lock another one holds (a hand-written O_EXCL lock file with a staleness
timeout did). filelock is a dependency of torch, and of commlab.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from commlab.errors import CommlabError


@contextmanager
def locked(path: Path, timeout_s: float = 30.0) -> Iterator[None]:
    """Hold an exclusive lock for ``path`` (creating its directory) for the body of a ``with``; CommlabError
    when another process holds it for longer than ``timeout_s``."""
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    lock = FileLock(lock_path, timeout=timeout_s)
    try:
        lock.acquire()
    except Timeout:
        raise CommlabError(f"could not lock {lock_path} within {timeout_s} s; another process holds it") from None
    try:
        yield
    finally:
        lock.release()
