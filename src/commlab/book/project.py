"""The Sphinx project of the static edition: the book's notebooks laid out for Sphinx, and its settings.

:func:`lay_out` writes ``<cache>/src``: ``index.md`` (the book's title and one table of contents per part of
``book.toml``), ``book.toml`` itself (a lab finds the book's root by it), and a copy of the folder of each
listed notebook (a lab's scripts, the data a chapter reads) without ``mine/`` (the reader's lab code),
checkpoints or unlisted notebooks. A file is rewritten only when its bytes changed, so Sphinx, which compares
modification times, reads again only what changed. Each listed notebook is checked and read first
(:func:`commlab.book.reading.read_notebook`: an nbformat 3 file is upgraded) and given a ``python3``
kernelspec when it has none (MyST-NB executes by the kernel a notebook names); without ``--execute`` its
outputs are dropped.

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

from commlab.book.manifest import MANIFEST_NAME, Book
from commlab.book.reading import read_notebook
from commlab.book.toc import entry_label, notebook_title

#: Folders and files of a notebook's folder that never enter the project (nor any cache key).
SKIPPED = {"mine", ".ipynb_checkpoints", "__pycache__", ".commlab", ".pytest_cache"}
#: The kernel a notebook without a kernelspec runs with: this environment's Python (ipykernel's native one).
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
#: Environment variables of the kernel that change outputs, besides every ``COMMLAB_*`` one.
KERNEL_ENV = ("CUDA_VISIBLE_DEVICES",)
#: Distributions whose version changes what an executed page shows.
VERSIONED = ("torch", "numpy", "matplotlib", "ipywidgets", "ipykernel", "nbclient", "jupyter-cache", "nbformat")
#: Files of commlab.book that only turn executed notebooks into pages: editing them changes no output.
RENDERING_ONLY = {"book/" + name for name in ("build.py", "project.py", "reading.py", "sphinx_ext.py",
                                              "widgets.py", "static")}
CACHE_FOLDER = "jupyter-cache"


@dataclass(frozen=True)
class Project:
    """The laid-out Sphinx project: its folder and the documents (notebook paths without ``.ipynb``)."""

    src_dir: Path
    docs: tuple[str, ...]

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


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def index_markdown(book: Book) -> str:
    """The home page: the book's title and authors, then a table of contents per part, captioned."""
    lines = [f"# {book.title}", ""]
    if book.authors:
        lines += [", ".join(book.authors), ""]
    lines += ["Each page is a notebook: read it here, or download it (the download button at the top of the "
              "page) and run it in JupyterLab, where its widgets and exercises are live.", ""]
    for number, part in enumerate(book.parts, 1):
        lines += ["```{toctree}", f":caption: Part {number}. {part.title}", ":maxdepth: 1", ""]
        for kind, notebooks in (("chapter", part.chapters), ("lab", part.labs)):
            for nb in notebooks:
                title = notebook_title(book.root / nb)
                lines.append(f"{entry_label(kind, title)}{title} <{nb[: -len('.ipynb')]}>")
        lines += ["```", ""]
    return "\n".join(lines)


def lay_out(book: Book, src_dir: Path, execute: bool) -> Project:
    """Write the Sphinx project of ``book`` into ``src_dir`` (see the module) and return it."""
    import nbformat

    src_dir = Path(src_dir)
    listed = set(book.notebooks())
    notebooks: dict[Path, bytes] = {}
    for nb_path in book.notebooks():   # each listed notebook checked before anything is written
        nb = read_notebook(book.root, nb_path)
        if not nb.metadata.get("kernelspec", {}).get("name"):
            nb.metadata["kernelspec"] = dict(KERNELSPEC)
        if not execute:
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
        notebooks[src_dir / nb_path] = nbformat.writes(nb).encode()
    wanted: dict[Path, bytes] = {src_dir / "index.md": index_markdown(book).encode(),
                                 src_dir / MANIFEST_NAME: (book.root / MANIFEST_NAME).read_bytes()
                                 if (book.root / MANIFEST_NAME).is_file() else b"", **notebooks}
    for folder in sorted({(book.root / nb).parent for nb in book.notebooks()}):
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(book.root)
            if path.is_file() and not SKIPPED & set(relative.parts) and path.suffix != ".pyc" \
                    and not (path.suffix == ".ipynb" and relative.as_posix() not in listed) \
                    and src_dir / relative not in wanted:
                wanted[src_dir / relative] = path.read_bytes()
    for path, data in wanted.items():
        _write_if_changed(path, data)
    if src_dir.is_dir():
        for path in sorted(src_dir.rglob("*"), reverse=True):
            if path.is_file() and path not in wanted and "mine" not in path.relative_to(src_dir).parts:
                path.unlink()
    docs = tuple(nb[: -len(".ipynb")] for nb in book.notebooks())
    return Project(src_dir=src_dir, docs=docs)


def sphinx_settings(book: Book, project: Project, cache_dir: Path, salt: str, execute: bool, timeout_s: float,
                    mathjax_dir: Path | None = None) -> dict:
    """Sphinx's configuration for the edition (there is no conf.py: these are its values)."""
    import math

    settings: dict = {
        "project": book.title, "author": ", ".join(book.authors) or book.title, "language": book.language,
        "copyright": ", ".join(book.authors) or book.title,
        "extensions": ["myst_nb", "sphinx_copybutton", "commlab.book.sphinx_ext"],
        "root_doc": "index",
        "include_patterns": ["index.md", *[f"{doc}.ipynb" for doc in project.docs]],
        "exclude_patterns": ["**/mine/**", "**/.ipynb_checkpoints/**"],
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
        # no widget manager from a CDN: commlab.book.sphinx_ext draws every widget as it first appeared
        "nb_ipywidgets_js": {},
        "suppress_warnings": ["mystnb.unknown_mime_type", "myst.header"],
        "commlab_mathjax_dir": str(mathjax_dir) if mathjax_dir is not None else "",
    }
    return settings
