"""The Sphinx project of the static edition: the book's own folder, read in place, and its settings.

Sphinx reads the listed notebooks where they are (``include_patterns``; hidden and ``_build``-like folders,
``labs/mine/`` and checkpoints excluded), and MyST-NB runs each one with its
own folder as the current directory, as JupyterLab and nbval do: a chapter reads the repository's files and
finds its ``book.toml``, a lab keeps its scripts beside it. Nothing is written into the book. The first
listed notebook is the home page (its map of the book, chapter 00's, is its content), and the book's parts
become its tables of contents, one per part with the part's title as caption, added to it as it is read
(:func:`toc_cell`, through :mod:`commlab.book.sphinx_ext`); ``index.html`` points at it. Each listed
notebook is checked first (:func:`commlab.book.reading.read_notebook`): a file that is no notebook is one
line naming it.

:func:`environment_salt` is what an executed page depends on besides its code: it names the jupyter-cache
folder, so a change in any of it executes the book again.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from commlab.book.manifest import Book
from commlab.book.reading import read_notebook
from commlab.book.toc import entry_label, notebook_title

#: Folders and files of a notebook's folder that never enter the project (nor any cache key).
SKIPPED = {"mine", ".ipynb_checkpoints", "__pycache__", ".commlab", ".pytest_cache"}
#: Environment variables of the kernel that change outputs, besides every ``COMMLAB_*`` one.
KERNEL_ENV = ("CUDA_VISIBLE_DEVICES",)
#: Distributions whose version changes what an executed page shows.
VERSIONED = ("torch", "numpy", "matplotlib", "ipywidgets", "ipykernel", "nbclient", "jupyter-cache", "nbformat")
#: Files of commlab.book that only turn executed notebooks into pages: editing them changes no output.
RENDERING_ONLY = {"book/" + name for name in ("build.py", "project.py", "reading.py", "sphinx_ext.py",
                                              "widgets.py", "hygiene.py", "static")}
CACHE_FOLDER = "jupyter-cache"


@dataclass(frozen=True)
class Project:
    """The Sphinx project: its folder (the book's) and the documents (notebook paths without ``.ipynb``),
    the first of them the home page."""

    src_dir: Path
    docs: tuple[str, ...]

    @property
    def root_doc(self) -> str:
        return self.docs[0]

    @staticmethod
    def forget_executions(cache_dir: Path, salt: str) -> None:
        """Drop the execution cache of ``salt`` (``--rebuild``), so every notebook runs again."""
        shutil.rmtree(execution_cache(cache_dir, salt), ignore_errors=True)


def execution_cache(cache_dir: Path, salt: str) -> Path:
    """The jupyter-cache folder for the environment ``salt``."""
    return Path(cache_dir) / f"{CACHE_FOLDER}-{hashlib.sha256(salt.encode()).hexdigest()[:16]}"


def _hash_files(digest, root: Path, skip: set[str] | frozenset[str] = frozenset()) -> None:
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if path.is_file() and not SKIPPED & set(parts) and path.suffix != ".pyc" \
                and "/".join(parts[:2]) not in skip:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def environment_salt(book: Book, kernel_env: tuple[tuple[str, str], ...] = ()) -> str:
    """What an executed page depends on besides its own code cells, as one string.

    commlab's version and every file of the installed package that a notebook can run (all but
    :data:`RENDERING_ONLY`); the files beside the listed notebooks other than notebooks (a lab's scripts,
    without ``mine/``); Python's version and those of :data:`VERSIONED`; ``kernel_env``; and the ``COMMLAB_*``
    and :data:`KERNEL_ENV` variables the kernel inherits.
    """
    import commlab

    package = Path(commlab.__file__).resolve().parent
    digest = hashlib.sha256(commlab.__version__.encode())
    _hash_files(digest, package, skip=RENDERING_ONLY)
    for folder in sorted({(book.root / nb).parent for nb in book.notebooks()}):
        sub = hashlib.sha256()
        for path in sorted(folder.rglob("*")):
            parts = path.relative_to(folder).parts
            if path.is_file() and path.suffix != ".ipynb" and not SKIPPED & set(parts) and path.suffix != ".pyc":
                sub.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
        digest.update(sub.digest())
    versions = ",".join(f"{dist}={_version(dist)}" for dist in VERSIONED)
    settings = ",".join(f"{name}={value}" for name, value in sorted(os.environ.items())
                        if name in KERNEL_ENV or name.startswith("COMMLAB_"))
    return (f"commlab-book-2|{digest.hexdigest()}|python={sys.version.split()[0]}|{versions}"
            f"|kernel_env={sorted(kernel_env)}|{settings}")


def toc_cell(book: Book) -> str:
    """The home page's tables of contents in MyST: one hidden ``toctree`` per part, captioned with the part's
    title, listing its chapters then its labs by their titles (the home page itself left out)."""
    home = book.notebooks()[0]
    lines: list[str] = []
    for number, part in enumerate(book.parts, 1):
        entries = [(kind, nb) for kind, notebooks in (("chapter", part.chapters), ("lab", part.labs))
                   for nb in notebooks if nb != home]
        if not entries:
            continue
        lines += ["```{toctree}", f":caption: Part {number}. {part.title}", ":maxdepth: 1", ":hidden:", ""]
        for kind, nb in entries:
            title = notebook_title(book.root / nb)
            lines.append(f"{entry_label(kind, title)}{title} </{nb[: -len('.ipynb')]}>")
        lines += ["```", ""]
    return "\n".join(lines)


def lay_out(book: Book) -> Project:
    """Check every listed notebook and return the project: the book's folder, its documents, its home."""
    for nb_path in book.notebooks():
        read_notebook(book.root, nb_path)
    docs = tuple(nb[: -len(".ipynb")] for nb in book.notebooks())
    return Project(src_dir=book.root, docs=docs)


def sphinx_settings(book: Book, project: Project, cache_dir: Path, salt: str, execute: bool, timeout_s: float,
                    mathjax_dir: Path | None = None) -> dict:
    """Sphinx's configuration for the edition (there is no conf.py: these are its values)."""
    import math

    settings: dict = {
        "project": book.title, "author": ", ".join(book.authors) or book.title, "language": book.language,
        "copyright": ", ".join(book.authors) or book.title,
        "extensions": ["myst_nb", "sphinx_copybutton", "commlab.book.sphinx_ext"],
        "root_doc": project.root_doc,
        "include_patterns": [f"{doc}.ipynb" for doc in project.docs],
        # hidden and underscore folders (.git, .venv, _build) are not even walked; the same list every build,
        # so that a new file in the book's folder does not make Sphinx read every page again
        "exclude_patterns": [".*", "_*", "**/mine", "**/.ipynb_checkpoints", "**/__pycache__", "node_modules"],
        "commlab_toc": toc_cell(book),
        "html_theme": "sphinx_book_theme",
        "html_title": book.title,
        "html_copy_source": True, "html_sourcelink_suffix": "", "html_show_sourcelink": False,
        "html_last_updated_fmt": None,
        "html_theme_options": {
            "use_download_button": True, "use_fullscreen_button": False, "home_page_in_toc": True,
            "show_toc_level": 2, "navigation_with_keys": True, "use_sidenotes": False,
            "path_to_docs": "", "repository_url": "", "use_repository_button": False,
            "article_header_end": ["article-header-buttons"],
        },
        # formulas: $...$ and $$...$$ in Markdown, typeset by the local MathJax 3 (commlab.book.sphinx_ext)
        "myst_enable_extensions": ["dollarmath", "amsmath", "colon_fence"],
        "myst_heading_anchors": 6,
        "myst_heading_slug_func": "commlab.book.sphinx_ext.jupyter_slug",
        "myst_update_mathjax": False,  # commlab.book.sphinx_ext configures MathJax, outputs included
        "nb_execution_mode": "cache" if execute else "off",
        "nb_execution_cache_path": str(execution_cache(cache_dir, salt)),
        "nb_execution_timeout": math.ceil(timeout_s),
        "nb_execution_raise_on_error": True, "nb_execution_show_tb": True, "nb_execution_allow_errors": False,
        "nb_execution_in_temp": False,
        "nb_merge_streams": True,
        # without --execute a page shows the source only, not outputs a notebook may carry from a run
        "nb_remove_code_outputs": not execute,
        # no widget manager from a CDN: commlab.book.sphinx_ext draws every widget as it first appeared
        "nb_ipywidgets_js": {},
        "suppress_warnings": ["mystnb.unknown_mime_type", "myst.header"],
        "commlab_mathjax_dir": str(mathjax_dir) if mathjax_dir is not None else "",
    }
    return settings
