"""Writing what a command produces: check the destination before the long work, write each file whole, and
report a failed write as one line naming the file (a full disk, a read-only folder, a path through a file).

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_atomic(folder / "page.html", "<p>hi</p>").read_text()
'<p>hi</p>'
>>> write_atomic(folder / "page.html" / "x", "no")  # doctest: +ELLIPSIS
Traceback (most recent call last):
commlab.errors.CommlabError: cannot write ...page.html/x: Not a directory
"""
from __future__ import annotations

import errno
import os
import tempfile
from contextlib import suppress
from pathlib import Path

from commlab.errors import CommlabError

#: What to do about the errors a reader can fix, after the system's own words.
_HINTS = {errno.ENOSPC: "the disk is full; free some space or write elsewhere",
          errno.EDQUOT: "the disk quota is used up; free some space or write elsewhere",
          errno.EROFS: "the file system is read-only; write elsewhere",
          errno.EACCES: "no permission to write there; write elsewhere",
          errno.EPERM: "no permission to write there; write elsewhere"}


def describe(exc: OSError, path: str | os.PathLike | None = None) -> str:
    """One line for a failed write: the file, the system's reason, and a hint when there is one.

    >>> describe(OSError(errno.ENOSPC, "No space left on device"), "out/x.html")
    'cannot write out/x.html: No space left on device (the disk is full; free some space or write elsewhere)'
    """
    where = path if path is not None else (exc.filename or "the output")
    reason = exc.strerror or str(exc) or type(exc).__name__
    hint = _HINTS.get(exc.errno) if exc.errno is not None else None
    return f"cannot write {os.fspath(where)}: {reason}" + (f" ({hint})" if hint else "")


def check_writable_dir(folder: str | os.PathLike, what: str) -> Path:
    """Create ``folder`` when missing and check that a file can be written in it, before any long work.

    ``what`` names the destination in the message, e.g. "--out 'frames/'". A file or a device at ``folder``
    (``/dev/null``), a read-only or full file system: CommlabError naming it.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise CommlabError(f"{what} is not a folder (it is a file or a device); give a folder, which is "
                           f"created when missing")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".commlab-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise CommlabError(f"{what}: " + describe(exc, folder).replace("cannot write ", "cannot write in ", 1)) \
            from None
    return folder


def copy_file(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """``shutil.copy2``, with a failed write as CommlabError naming ``target`` (a ``copy_function`` for
    ``shutil.copytree`` that stops at the first failure instead of collecting one error per file)."""
    import shutil

    try:
        shutil.copy2(source, target)
    except OSError as exc:
        with suppress(OSError):
            os.unlink(target)
        raise CommlabError(describe(exc, target)) from None


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in the same folder, so that a
    failed write leaves the old file, or none, and never half a file; CommlabError naming ``path`` on failure."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with suppress(OSError):
                os.unlink(tmp)
        raise CommlabError(describe(exc, path)) from None
    return path
