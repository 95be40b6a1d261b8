"""Hand-ins: students' archives unpacked safely into a class folder, and the lab modules found inside them.

``commlab labs collect ARCHIVE... --to DIR`` (:func:`collect`) unpacks each archive (.zip, .tar, .tgz,
.tar.gz, .tar.bz2, .tar.xz) into ``DIR/<student>/``, the student named after the archive (``ada.zip`` ->
``ada``; an LMS's ``ada_12345_assignsubmission_file_labs.zip`` keeps its first part). Nothing is written
outside ``DIR/<student>``: a member with an absolute path, ``..``, a link, a device or a FIFO is refused and
named; so is an archive with more than :data:`MAX_MEMBERS` members, a member over :data:`MAX_FILE_BYTES`,
or more than :data:`MAX_TOTAL_BYTES` in all (a zip bomb). Only the lab modules of ``labs/mine`` (found at
any depth, :func:`find_mine`) are kept: ``DIR/<student>/<lab>.py``.
"""
from __future__ import annotations

import re
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from commlab.errors import CommlabError

MAX_MEMBERS = 2000
MAX_FILE_BYTES = 16 * 2**20
MAX_TOTAL_BYTES = 64 * 2**20
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


def is_archive(path: Path) -> bool:
    return str(path).lower().endswith(ARCHIVE_SUFFIXES)


def student_name(path: Path) -> str:
    """The student an archive belongs to: its name without the suffix (and an LMS's id and label after ``_``)."""
    name = Path(path).name
    for suffix in sorted(ARCHIVE_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    moodle = re.match(r"^(.+?)_\d+_assignsubmission_file", name)
    if moodle:
        name = moodle.group(1)
    name = re.sub(r"[^\w.@+-]", "_", name).strip("._")
    if not name:
        raise CommlabError(f"cannot name a student after the archive {Path(path).name!r}")
    return name


def _safe_member(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise CommlabError(f"refused: the member {name!r} would be written outside its folder")
    return path


def _unpack_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as z:
        members = z.infolist()
        _check_counts(archive, [(m.filename, m.file_size) for m in members if not m.is_dir()])
        for m in members:
            target = _safe_member(m.filename)
            mode = (m.external_attr >> 16) & 0o170000
            if mode and mode not in (0o100000, 0o040000):
                raise CommlabError(f"refused: {m.filename!r} in {archive.name} is a link or a special file")
            if m.is_dir():
                continue
            out = dest / target
            out.parent.mkdir(parents=True, exist_ok=True)
            with z.open(m) as src, open(out, "wb") as dst:
                _copy_limited(src, dst, archive, m.filename)


def _copy_limited(src, dst, archive: Path, name: str) -> None:
    written = 0
    while True:
        block = src.read(1 << 16)
        if not block:
            return
        written += len(block)
        if written > MAX_FILE_BYTES:
            raise CommlabError(f"refused: {name!r} in {archive.name} unpacks to more than {MAX_FILE_BYTES} bytes")
        dst.write(block)


def _check_counts(archive: Path, sizes: list[tuple[str, int]]) -> None:
    if len(sizes) > MAX_MEMBERS:
        raise CommlabError(f"refused: {archive.name} holds {len(sizes)} files (the limit is {MAX_MEMBERS})")
    for name, size in sizes:
        if size > MAX_FILE_BYTES:
            raise CommlabError(f"refused: {name!r} in {archive.name} is {size} bytes (the limit is {MAX_FILE_BYTES})")
    if sum(s for _, s in sizes) > MAX_TOTAL_BYTES:
        raise CommlabError(f"refused: {archive.name} unpacks to more than {MAX_TOTAL_BYTES} bytes")


def _unpack_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as t:
        members = t.getmembers()
        _check_counts(archive, [(m.name, m.size) for m in members if m.isfile()])
        for m in members:
            target = _safe_member(m.name)
            if m.isdir():
                continue
            if not m.isfile():
                raise CommlabError(f"refused: {m.name!r} in {archive.name} is a link or a special file")
            out = dest / target
            out.parent.mkdir(parents=True, exist_ok=True)
            src = t.extractfile(m)
            if src is None:
                continue
            with src, open(out, "wb") as dst:
                _copy_limited(src, dst, archive, m.name)


def find_mine(folder: Path) -> tuple[Path, str]:
    """The folder of a student's lab modules inside ``folder`` and, when it is not ``folder`` itself, a note
    saying where it was found: ``folder`` when it holds a lab module, else its ``labs/mine`` or ``mine`` at
    any depth (the shallowest; hidden folders and ``.history`` are never taken)."""
    from commlab.labs import registry

    labs = {f"{n}.py" for n in registry.names()}

    def has_labs(p: Path) -> bool:
        return any((p / n).is_file() for n in labs)

    if has_labs(folder):
        return folder, ""
    candidates = []
    for p in folder.rglob("*"):
        rel = p.relative_to(folder)
        if p.is_symlink() or not p.is_dir() or any(part.startswith(".") for part in rel.parts):
            continue
        if p.name in ("mine", "labs") and has_labs(p):
            candidates.append(p)
    if not candidates:
        return folder, "no lab module (<lab>.py) found in it or in a labs/mine folder below it"
    best = min(candidates, key=lambda p: (len(p.relative_to(folder).parts), str(p)))
    return best, f"grading {best.relative_to(folder.parent)} (the lab modules found below the student's folder)"


def collect(archives: list[Path], to: Path) -> list[str]:
    """Unpack every archive into ``to/<student>/`` (see the module's docstring); a line per archive saying what
    was done. A refused archive is named with its reason and the others go on."""
    from commlab.labs import registry

    to.mkdir(parents=True, exist_ok=True)
    lines = []
    labs = {f"{n}.py" for n in registry.names()}
    for archive in archives:
        archive = Path(archive)
        if not archive.is_file():
            lines.append(f"{archive}: skipped: not a file")
            continue
        if not is_archive(archive):
            lines.append(f"{archive}: skipped: not an archive (expected one of {', '.join(ARCHIVE_SUFFIXES)})")
            continue
        student = student_name(archive)
        with tempfile.TemporaryDirectory(prefix="commlab-collect-") as scratch:
            try:
                (_unpack_zip if archive.name.lower().endswith(".zip") else _unpack_tar)(archive, Path(scratch))
            except (CommlabError, zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
                lines.append(f"{archive}: refused: {exc}" if not str(exc).startswith("refused") else
                             f"{archive}: {exc}")
                continue
            found, _ = find_mine(Path(scratch))
            modules = sorted(p for p in found.iterdir() if p.name in labs and p.is_file() and not p.is_symlink())
            if not modules:
                lines.append(f"{archive}: no lab module (<lab>.py) in it; nothing collected for {student}")
                continue
            dest = to / student
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            for p in modules:
                shutil.copyfile(p, dest / p.name)
            where = found.relative_to(scratch).as_posix() if found != Path(scratch) else "."
            lines.append(f"{archive}: {len(modules)} lab modules from {where} -> {dest}")
    return lines
