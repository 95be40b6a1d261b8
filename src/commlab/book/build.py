"""The static HTML edition: one page per notebook in book.toml's order, an index, links between them.

``commlab book build`` (``make book`` adds ``--execute``) converts each notebook with nbconvert's ``lab``
template, changed so that the page needs no network: no require.js, no widget manager from a CDN, MathJax
from a local copy when there is one (:mod:`commlab.book.mathjax`). Text/HTML outputs such as a
``to_jshtml`` animation pass through as they are (self-contained HTML and JavaScript); widget outputs
become a note (:mod:`commlab.book.preprocess`). Every page gets a navigation bar at the top and bottom.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from commlab.book import mathjax
from commlab.book.check import listing_problems
from commlab.book.manifest import Book
from commlab.book.pages import CSS, ICON_CSS, INDEX, index_html, nav_html, neighbours, page_path
from commlab.book.preprocess import (
    drop_font_awesome, linked_files, replace_widgets, rewrite_notebook_links, strip_outputs,
)
from commlab.book.toc import notebook_title
from commlab.errors import CommlabError

DEFAULT_OUT_DIR = Path("_build/html")

#: nbconvert's lab page with commlab's changes: no require.js (nothing on the pages needs it), no widget
#: manager (widgets are notes), the book's style, and the navigation bar before and after the notebook.
PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block extra_css -%}<style type="text/css">{{ resources.commlab_css }}</style>{%- endblock extra_css -%}
{%- block body_header -%}{{ super() }}
{{ resources.commlab_nav_top }}
{%- endblock body_header -%}
{%- block body_footer -%}{{ resources.commlab_nav_bottom }}
{{ super() }}{%- endblock body_footer -%}
"""


@dataclass(frozen=True)
class BuildConfig:
    """How to build the static edition."""

    out_dir: Path = DEFAULT_OUT_DIR
    """Where the pages go; created when missing. Relative paths are relative to the current directory."""
    execute: bool = False
    """Run each notebook first (nbclient), so the pages show outputs; otherwise pages show the source only."""
    timeout_s: float = 300.0
    """Longest time one cell may run when executing, in seconds."""
    mathjax_dir: Path | None = None
    """A MathJax 2.7 folder to copy next to the pages; None: the jupyter-server-mathjax copy, else the CDN."""
    lab_solutions: bool = True
    """When executing, run labs with their reference solutions (``COMMLAB_LAB_SOLUTIONS=1``, as CI does):
    a lab is committed with cells for the reader to fill in, which fail until they are written."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "out_dir", Path(self.out_dir))
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)) \
                or not self.timeout_s > 0:
            raise CommlabError(f"timeout_s must be a number of seconds > 0, got {self.timeout_s!r}")
        if self.mathjax_dir is not None:
            object.__setattr__(self, "mathjax_dir", Path(self.mathjax_dir))


@dataclass(frozen=True)
class BuildResult:
    """What a build wrote."""

    out_dir: Path
    pages: tuple[str, ...]          # posix paths relative to out_dir, in reading order; index.html last
    executed: bool
    n_widget_notes: int             # widget outputs replaced by a note
    mathjax_local: bool             # False: formulas need the MathJax CDN (network)


def _exporter(book: Book):
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", raw_template=PAGE_TEMPLATE, embed_images=True,
                        language_code=book.language, theme="light")


def _read(book: Book, notebook: str):
    import nbformat

    path = book.root / notebook
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as exc:
        raise CommlabError(f"cannot read {notebook} as a notebook: {exc}") from None


def _render(exporter, book: Book, notebook: str, nb, query: str | None) -> str:
    """The page of ``notebook`` (already executed or stripped) as HTML text."""
    page = page_path(notebook)
    around = neighbours(book, notebook)
    nb.metadata["title"] = f"{notebook_title(book.root / notebook)} - {book.title}"
    exporter.mathjax_url = mathjax.url_for(page, query)
    resources = {"metadata": {"path": str((book.root / notebook).parent), "name": Path(notebook).stem},
                 "commlab_css": CSS + ICON_CSS, "commlab_nav_top": nav_html(around, "top"),
                 "commlab_nav_bottom": nav_html(around, "bottom")}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return rewrite_notebook_links(drop_font_awesome(body))


def _copy_linked(book: Book, page: str, body: str, out_dir: Path) -> None:
    """Copy the files that ``page`` links to (scripts, figures) from the book into ``out_dir``."""
    for target in linked_files(body, page):
        source = book.root / target
        if source.is_file():
            (out_dir / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, out_dir / target)


def _write_page(exporter, book: Book, notebook: str, config: BuildConfig, query: str | None) -> int:
    """Execute or strip ``notebook``, write its page and the files it links to; return its widget count."""
    nb = _read(book, notebook)
    if config.execute:
        from commlab.book.execute import execute_notebook

        from commlab.labs import ENV_VAR

        extra_env = {ENV_VAR: "1"} if config.lab_solutions else {}
        execute_notebook(nb, (book.root / notebook).parent, notebook, config.timeout_s, extra_env)
    else:
        strip_outputs(nb)
    n_widgets = replace_widgets(nb)
    page = page_path(notebook)
    body = _render(exporter, book, notebook, nb, query)
    (config.out_dir / page).parent.mkdir(parents=True, exist_ok=True)
    (config.out_dir / page).write_text(body, encoding="utf-8")
    _copy_linked(book, page, body, config.out_dir)
    return n_widgets


def build(book: Book, config: BuildConfig = BuildConfig(), log: Callable[[str], None] | None = None) -> BuildResult:
    """Write the static edition of ``book`` into ``config.out_dir``; ``log`` receives one line per page.

    Refuses a book that lists a missing notebook or one notebook twice (:func:`check.listing_problems`);
    notebooks left out of the manifest are simply not built (``commlab book check`` reports them).
    """
    problems = listing_problems(book)
    if problems:
        raise CommlabError("book.toml cannot be built: " + "; ".join(problems))
    config.out_dir.mkdir(parents=True, exist_ok=True)
    query = mathjax.install(config.out_dir, config.mathjax_dir)
    exporter, n_widgets = _exporter(book), 0
    for notebook in book.notebooks():
        start_s = time.perf_counter()
        n_widgets += _write_page(exporter, book, notebook, config, query)
        if log is not None:
            how = "executed" if config.execute else "source only"
            log(f"{notebook} -> {config.out_dir / page_path(notebook)} ({how}, "
                f"{time.perf_counter() - start_s:.1f} s)")
    note = "" if query else " Formulas are typeset by MathJax from its CDN, so they need a network connection."
    (config.out_dir / INDEX).write_text(index_html(book, note), encoding="utf-8")
    pages = tuple(page_path(nb) for nb in book.notebooks()) + (INDEX,)
    return BuildResult(out_dir=config.out_dir, pages=pages, executed=config.execute,
                       n_widget_notes=n_widgets, mathjax_local=query is not None)
