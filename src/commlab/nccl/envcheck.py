"""Check the torch-side names of :mod:`commlab.nccl.env` against the torch that is installed, without
importing torch.

torch's install folder comes from ``importlib.util.find_spec("torch")`` (which does not run torch); its
``.py`` files and its shared libraries (``torch/lib``, read as bytes through ``mmap``) are searched for each
name as a whole word. The names ProcessGroupNCCL reads are compiled into the CUDA build; a CPU-only wheel has
no NCCL process group, so a name may be missing there although the CUDA build of the same release reads it.
The result says which build it looked at. :func:`torch_version` reads the installed version the same way.
"""
from __future__ import annotations

import importlib.util
import mmap
import re
from dataclasses import dataclass
from pathlib import Path

from commlab.nccl.env import EnvVar, catalogue

_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_PY_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(?:TORCH|NCCL)_[A-Z0-9_]+(?![A-Za-z0-9_])")
_LIB_SUFFIXES = (".so", ".dylib", ".dll")
STATUSES = ("found", "found under a newer name", "only the deprecated name found", "not found")


@dataclass(frozen=True)
class NameCheck:
    """What the installed torch says about one variable."""

    name: str
    status: str
    """One of STATUSES."""
    names_found: tuple[str, ...]
    """Which of the name, its old names and its newer names occur in the install."""


@dataclass(frozen=True)
class TorchNameReport:
    """The result of :func:`check_torch_names`."""

    torch_dir: str | None
    torch_version: str | None
    cuda_build: bool
    checks: tuple[NameCheck, ...]
    note: str


def tokens_in_bytes(buf) -> set[str]:
    """Every upper-case identifier starting ``NCCL_`` or ``TORCH_`` (possibly inside a longer one, such as
    ``TORCH_NCCL_...``) in a bytes-like object, as whole identifiers."""
    out: set[str] = set()
    for needle in (b"NCCL_", b"TORCH_"):
        pos = buf.find(needle)
        while pos != -1:
            start = pos
            while start > 0 and buf[start - 1] in _TOKEN_BYTES:
                start -= 1
            end = pos + len(needle)
            while end < len(buf) and buf[end] in _TOKEN_BYTES:
                end += 1
            out.add(bytes(buf[start:end]).decode("ascii"))
            pos = buf.find(needle, end)
    return out


def _library_tokens(lib_dir: Path) -> set[str]:
    found: set[str] = set()
    for path in sorted(lib_dir.glob("*")) if lib_dir.is_dir() else ():
        if not path.is_file() or not any(s in path.name for s in _LIB_SUFFIXES) or path.stat().st_size == 0:
            continue
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            found |= tokens_in_bytes(mm)
    return found


def _python_tokens(root: Path) -> set[str]:
    found: set[str] = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "NCCL_" in text or "TORCH_" in text:
            found.update(_PY_TOKEN.findall(text))
    return found


def torch_dir() -> Path | None:
    """torch's install folder, found without importing torch; None when torch is not installed."""
    found = importlib.util.find_spec("torch")
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0])


def _version_fields(root: Path) -> tuple[str | None, bool]:
    """(``__version__``, whether ``cuda`` is set) read from ``torch/version.py`` as text."""
    path = root / "version.py"
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    version = re.search(r"^__version__\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    cuda = re.search(r"^cuda\s*(?::[^=]*)?=\s*(.+)$", text, re.M)
    return (version.group(1) if version else None,
            cuda is not None and cuda.group(1).strip() not in ("None", "''", '""'))


def torch_version() -> str | None:
    """The installed torch's ``__version__`` ("2.13.0+cpu"), read from ``torch/version.py`` as text without
    importing torch; None when torch is not installed or the file names no version."""
    root = torch_dir()
    return None if root is None else _version_fields(root)[0]


def classify_name(var: EnvVar, present: set[str]) -> NameCheck:
    """The status of one variable given the identifiers present in the install."""
    names_found = tuple(n for n in (var.name, *var.old_names, *var.newer_names) if n in present)
    if var.name in present:
        status = "found"
    elif any(n in present for n in var.newer_names):
        status = "found under a newer name"
    elif any(n in present for n in var.old_names):
        status = "only the deprecated name found"
    else:
        status = "not found"
    return NameCheck(name=var.name, status=status, names_found=names_found)


def check_torch_names() -> TorchNameReport:
    """Look up every torch-side variable of the catalogue in the installed torch (see the module docstring)."""
    root = torch_dir()
    torch_vars = [v for v in catalogue() if v.side == "torch"]
    if root is None:
        checks = tuple(NameCheck(v.name, "not found", ()) for v in torch_vars)
        return TorchNameReport(None, None, False, checks, "torch is not installed: nothing to check against")
    version, cuda = _version_fields(root)
    present = _library_tokens(root / "lib") | _python_tokens(root)
    checks = tuple(classify_name(v, present) for v in torch_vars)
    missing = sum(c.status == "not found" for c in checks)
    note = (f"torch {version} ({'CUDA' if cuda else 'CPU-only'} build) at {root}: "
            f"{len(checks) - missing} of {len(checks)} names found.")
    if not cuda:
        note += (" A CPU-only wheel does not contain ProcessGroupNCCL, so names only it reads cannot be "
                 "found here; 'not found' is no proof that a CUDA build of this release ignores them.")
    return TorchNameReport(str(root), version, cuda, checks, note)
