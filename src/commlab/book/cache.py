"""Incremental builds: an executed notebook is kept, and not executed again while nothing it depends on changed.

The key of a notebook (SHA-256) covers what its outputs depend on:

* the notebook file's bytes, and the other files of its folder (the scripts a lab runs, data a chapter reads);
* commlab's version and a fingerprint of the installed package, source and data (so an edited model or
  figure in ``src/commlab`` executes the pages again even while the version number stays the same), leaving out
  the book's own rendering code, which runs after the kernel;
* Python's version and those of the packages that compute or draw the outputs (torch, numpy, matplotlib,
  ipywidgets, ipykernel, nbclient, nbconvert), whether labs run with their reference solutions, and the
  ``COMMLAB_*`` environment the kernel inherits (``COMMLAB_LEARNER`` draws each learner's own numbers) and
  ``CUDA_VISIBLE_DEVICES``.

An entry is the executed notebook (outputs and widget state) at ``<cache>/<notebook path>.<key>.ipynb``;
storing one removes that notebook's older entries. ``commlab book build --rebuild`` ignores the cache.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from commlab.output import write_atomic

#: Environment variables of the kernel that change outputs, besides every ``COMMLAB_*`` one (the learner whose
#: numbers the exercises draw, the progress file...).
KERNEL_ENV = ("CUDA_VISIBLE_DEVICES",)
#: Distributions whose version changes what an executed page shows.
VERSIONED = ("torch", "numpy", "matplotlib", "ipywidgets", "ipykernel", "nbclient", "nbconvert", "nbformat")
_SKIP_PARTS = {"__pycache__", ".ipynb_checkpoints"}
#: Files of commlab.book that only turn executed notebooks into pages, after the kernel is gone: editing them
#: changes no output, and every build renders every page again anyway. (manifest, toc and check run inside
#: the kernel, in chapter 00, so they count.)
RENDERING_ONLY = {"book/" + name for name in ("build.py", "cache.py", "layout.py", "pages.py", "preprocess.py",
                                              "reading.py", "search.py", "widgets.py", "mathjax.py", "static")}


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def _hash_files(digest, root: Path, files, skip: frozenset[str] | set[str] = frozenset()) -> None:
    for path in sorted(files):
        parts = path.relative_to(root).parts
        if path.is_file() and not _SKIP_PARTS & set(parts) and "/".join(parts[:2]) not in skip:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())


def package_fingerprint() -> str:
    """commlab's version and a hash of every file of the installed package (source and data) that a notebook
    can run: all but :data:`RENDERING_ONLY`."""
    import commlab

    root = Path(commlab.__file__).resolve().parent
    digest = hashlib.sha256(commlab.__version__.encode())
    _hash_files(digest, root, root.rglob("*"), skip=RENDERING_ONLY)
    return digest.hexdigest()


def environment_salt(kernel_env: tuple[tuple[str, str], ...] = ()) -> str:
    """Everything but the notebook that an executed page depends on, as one string (see the module)."""
    versions = ",".join(f"{dist}={_version(dist)}" for dist in VERSIONED)
    settings = ",".join(f"{name}={value}" for name, value in sorted(os.environ.items()) if name in KERNEL_ENV
                        or name.startswith("COMMLAB_"))
    return (f"commlab-book-cache-1|{package_fingerprint()}|python={sys.version.split()[0]}|{versions}"
            f"|kernel_env={sorted(kernel_env)}|{settings}")


def notebook_key(root: Path, notebook: str, salt: str) -> str:
    """The cache key of ``notebook`` (posix, relative to the book's ``root``) under ``salt``."""
    path = root / notebook
    digest = hashlib.sha256(salt.encode() + b"\0" + notebook.encode() + b"\0" + path.read_bytes())
    neighbours = [p for p in path.parent.rglob("*") if p.suffix != ".ipynb"]
    _hash_files(digest, path.parent, neighbours)
    return digest.hexdigest()


@dataclass(frozen=True)
class ExecutionCache:
    """Executed notebooks kept in ``folder`` under their keys."""

    folder: Path

    def _stem(self, notebook: str) -> str:
        return notebook.replace("/", "__")

    def path(self, notebook: str, key: str) -> Path:
        return self.folder / f"{self._stem(notebook)}.{key[:32]}.ipynb"

    def get(self, notebook: str, key: str):
        """The executed notebook stored under ``key``, or None (a missing or unreadable entry)."""
        import nbformat

        path = self.path(notebook, key)
        try:
            return nbformat.read(path, as_version=4)
        except (OSError, ValueError, KeyError, AttributeError):
            return None

    def put(self, notebook: str, key: str, nb) -> Path:
        """Store ``nb`` under ``key`` and remove the notebook's other entries."""
        import nbformat

        self.folder.mkdir(parents=True, exist_ok=True)
        path = write_atomic(self.path(notebook, key), nbformat.writes(nb))
        for old in self.folder.glob(f"{self._stem(notebook)}.*.ipynb"):
            if old != path:
                old.unlink(missing_ok=True)
        return path
