"""The static HTML edition: one page per notebook in book.toml's order, an index, a search, links between them.

``commlab book build`` (``make book`` adds ``--execute``) converts each notebook with nbconvert's ``lab``
template, changed so that the page needs no network: no require.js, no widget manager from a CDN, MathJax
from a local copy when there is one (:mod:`commlab.book.mathjax`). Text/HTML outputs such as a ``to_jshtml``
animation pass through (self-contained HTML and JavaScript; Font Awesome's CDN link is dropped and its icons
drawn by CSS); each widget output becomes its still picture and a note (:mod:`commlab.book.widgets`). Every
page gets the header, sidebar and navigation of :mod:`commlab.book.layout`, and a copy of its notebook to
download; the search index covers every page (:mod:`commlab.book.search`).

An executed notebook is kept in a cache (:mod:`commlab.book.cache`): the next build executes only the
notebooks whose content, folder or environment changed. ``log`` gets a line per page as the build goes:
``[i/n] notebook -> page (executed in 12.3 s | unchanged, not executed again | source only)``.
"""
from __future__ import annotations

import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from commlab.book import mathjax
from commlab.book.cache import ExecutionCache, environment_salt, notebook_key
from commlab.book.check import listing_problems
from commlab.book.layout import head_html, header_html, index_html, install_static, root_of, scripts_html, sidebar_html
from commlab.book.manifest import Book
from commlab.book.pages import INDEX, nav_html, neighbours, page_path
from commlab.book.preprocess import drop_font_awesome, linked_files, rewrite_notebook_links, strip_outputs
from commlab.book.reading import read_notebook
from commlab.book.search import INDEX_FILE, PageEntry, Section, build_index, index_script, page_sections
from commlab.book.toc import notebook_title
from commlab.book.widgets import render_widgets
from commlab.errors import CommlabError
from commlab.output import check_writable_dir, describe, write_atomic

DEFAULT_OUT_DIR = Path("_build/html")
CACHE_NAME = ".commlab-book-cache"
#: Modules a build imports, by what needs them, and the extra that installs them.
TOOLS = {"any": ("nbformat", "nbconvert", "jupyter_core"),
         "execute": ("nbclient", "ipykernel", "jupyter_client", "zmq")}

#: nbconvert's lab page with commlab's changes: no require.js (nothing on the pages needs it), no widget
#: manager (widgets are stills), the book's style and scripts, and marks where the build puts the header,
#: the sidebar and the navigation bars once the page's headings are known.
PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_css -%}{{ resources.commlab_head }}{%- endblock html_head_css -%}
{%- block body_header -%}
<body class="commlab-page" data-jp-theme-light="true" data-jp-theme-name="JupyterLab Light" \
data-commlab-root="{{ resources.commlab_root }}">
<!--commlab:header-->
<div class="commlab-layout">
<!--commlab:sidebar-->
<main id="commlab-content" class="commlab-content">
<!--commlab:nav-top-->
{%- endblock body_header -%}
{%- block body_footer -%}
<!--commlab:nav-bottom-->
</main>
</div>
{{ resources.commlab_scripts }}
</body>
{%- endblock body_footer -%}
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
    kernel_env: tuple[tuple[str, str], ...] = ()
    """When executing, extra environment variables for the notebooks' kernel, as (name, value) pairs; part of
    the cache key. ``commlab book build`` passes the labs' switch to their reference solutions here (a lab is
    committed with cells for the reader to fill in, which fail until they are written); the book layer itself
    knows nothing of the labs."""
    cache_dir: Path | None = None
    """Where executed notebooks are kept between builds; None: ``.commlab-book-cache`` next to ``out_dir``."""
    use_cache: bool = True
    """False (``--rebuild``): execute every notebook again, and store the new results."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "out_dir", Path(self.out_dir))
        object.__setattr__(self, "kernel_env", tuple((str(k), str(v)) for k, v in dict(self.kernel_env).items()))
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)) \
                or not self.timeout_s > 0:
            raise CommlabError(f"timeout_s must be a number of seconds > 0, got {self.timeout_s!r}")
        if self.mathjax_dir is not None:
            object.__setattr__(self, "mathjax_dir", Path(self.mathjax_dir))
        cache_dir = self.out_dir.parent / CACHE_NAME if self.cache_dir is None else Path(self.cache_dir)
        object.__setattr__(self, "cache_dir", cache_dir)


@dataclass(frozen=True)
class BuildResult:
    """What a build wrote."""

    out_dir: Path
    pages: tuple[str, ...]          # posix paths relative to out_dir, in reading order; index.html last
    executed: bool
    n_widget_notes: int             # widget outputs shown as a still picture with a note
    mathjax_local: bool             # False: formulas need the MathJax CDN (network)
    n_executed: int = 0             # notebooks run by this build
    n_cached: int = 0               # notebooks unchanged since an earlier build, not run again
    elapsed_s: float = 0.0


def require_tools(execute: bool) -> None:
    """CommlabError naming the [book] extra when a module the build needs is not installed."""
    import importlib.util

    missing = []
    for name in TOOLS["any"] + (TOOLS["execute"] if execute else ()):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    if missing:
        raise CommlabError(f"building the book needs {', '.join(missing)}, which the book's extra installs: "
                           "pip install 'commlab[book]' (or make book)")


def _exporter(book: Book):
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", raw_template=PAGE_TEMPLATE, embed_images=True,
                        language_code=book.language, theme="light")


def _render(exporter, book: Book, notebook: str, nb, query: str | None) -> str:
    """The page of ``notebook`` (already executed or stripped) as HTML, its links pointing at pages."""
    page = page_path(notebook)
    nb.metadata["title"] = f"{notebook_title(book.root / notebook)} - {book.title}"
    exporter.mathjax_url = mathjax.url_for(page, query)
    resources = {"metadata": {"path": str((book.root / notebook).parent), "name": Path(notebook).stem},
                 "commlab_head": head_html(page), "commlab_root": root_of(page),
                 "commlab_scripts": scripts_html(page)}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return rewrite_notebook_links(drop_font_awesome(body))


def _dress(book: Book, notebook: str, body: str) -> tuple[str, list[Section]]:
    """Put the header, the sidebar (with the page's own sections) and the navigation bars into ``body``."""
    page, sections = page_path(notebook), page_sections(body)
    around = neighbours(book, notebook)
    parts = {"header": header_html(book, page, posixpath.basename(notebook)),
             "sidebar": sidebar_html(book, page, sections),
             "nav-top": nav_html(around, "top"), "nav-bottom": nav_html(around, "bottom")}
    for mark, chrome in parts.items():
        body = body.replace(f"<!--commlab:{mark}-->", chrome, 1)
    return body, sections


def _copy_linked(book: Book, page: str, body: str, out_dir: Path) -> None:
    """Copy the files that ``page`` links to (scripts, figures) from the book into ``out_dir``."""
    for target in linked_files(body, page):
        source = book.root / target
        if source.is_file():
            (out_dir / target).parent.mkdir(parents=True, exist_ok=True)
            write_atomic(out_dir / target, source.read_bytes())


class _Builder:
    """One build: reads, executes (or takes from the cache), renders and writes every page."""

    def __init__(self, book: Book, config: BuildConfig, log: Callable[[str], None]) -> None:
        self.book, self.config, self.log = book, config, log
        # BuildConfig.__post_init__ makes cache_dir a Path (next to out_dir when it is given as None)
        self.cache = ExecutionCache(cast(Path, config.cache_dir)) if config.execute else None
        self.salt = environment_salt(config.kernel_env) if config.execute else ""
        self.n_executed = self.n_cached = self.n_widgets = 0

    def _execute(self, notebook: str, nb, step: str):
        """``nb`` executed, from the cache when its key is there; also says which ("executed"/"unchanged")."""
        from commlab.book.execute import execute_notebook

        if self.cache is None:
            raise RuntimeError(f"{notebook}: a build without --execute executes nothing")
        key = notebook_key(self.book.root, notebook, self.salt)
        cached = self.cache.get(notebook, key) if self.config.use_cache else None
        if cached is not None:
            self.n_cached += 1
            return cached, "unchanged since the last build, not executed again"
        self.log(f"{step} executing {notebook} ...")
        execute_notebook(nb, (self.book.root / notebook).parent, notebook, self.config.timeout_s,
                         dict(self.config.kernel_env))
        self.cache.put(notebook, key, nb)
        self.n_executed += 1
        return nb, "executed"

    def page(self, exporter, notebook: str, query: str | None, step: str) -> PageEntry:
        """Write the page of ``notebook`` and its downloadable copy; return its search entry."""
        start_s, out_dir = time.perf_counter(), self.config.out_dir
        nb = read_notebook(self.book.root, notebook)
        if self.config.execute:
            nb, how = self._execute(notebook, nb, step)
        else:
            nb, how = strip_outputs(nb), "source only"
        self.n_widgets += render_widgets(nb, download=posixpath.basename(notebook))
        body, sections = _dress(self.book, notebook, _render(exporter, self.book, notebook, nb, query))
        page = page_path(notebook)
        (out_dir / page).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(out_dir / page, body)
        write_atomic(out_dir / notebook, (self.book.root / notebook).read_bytes())
        _copy_linked(self.book, page, body, out_dir)
        self.log(f"{step} {notebook} -> {out_dir / page} ({how}, {time.perf_counter() - start_s:.1f} s)")
        return PageEntry(href=page, title=notebook_title(self.book.root / notebook), sections=tuple(sections))


def _write_book(book: Book, config: BuildConfig, log: Callable[[str], None]) -> BuildResult:
    start_s, out_dir = time.perf_counter(), config.out_dir
    query = mathjax.install(out_dir, config.mathjax_dir)
    install_static(out_dir)
    builder, exporter, notebooks = _Builder(book, config, log), _exporter(book), book.notebooks()
    width = len(str(len(notebooks)))
    entries = [builder.page(exporter, notebook, query, f"[{number:>{width}}/{len(notebooks)}]")
               for number, notebook in enumerate(notebooks, 1)]
    note = "" if query else " Formulas are typeset by MathJax from its CDN, so they need a network connection."
    write_atomic(out_dir / INDEX, index_html(book, note))
    write_atomic(out_dir / INDEX_FILE, index_script(build_index(entries)))
    pages = tuple(page_path(nb) for nb in notebooks) + (INDEX,)
    return BuildResult(out_dir=out_dir, pages=pages, executed=config.execute, n_widget_notes=builder.n_widgets,
                       mathjax_local=query is not None, n_executed=builder.n_executed, n_cached=builder.n_cached,
                       elapsed_s=time.perf_counter() - start_s)


def build(book: Book, config: BuildConfig = BuildConfig(), log: Callable[[str], None] | None = None) -> BuildResult:
    """Write the static edition of ``book`` into ``config.out_dir``; ``log`` receives the progress lines.

    Refuses a book that lists a missing notebook or one notebook twice (:func:`check.listing_problems`) and an
    output folder that cannot be written, before executing anything; a write that fails later (a full disk)
    is a CommlabError naming the file, and leaves no half-written page. Notebooks left out of the manifest
    are simply not built (``commlab book check`` reports them).
    """
    problems = listing_problems(book)
    if problems:
        raise CommlabError("book.toml cannot be built: " + "; ".join(problems))
    require_tools(config.execute)
    check_writable_dir(config.out_dir, f"--out {str(config.out_dir)!r}")
    if config.execute:
        check_writable_dir(cast(Path, config.cache_dir), f"the cache folder {str(config.cache_dir)!r} (--cache)")
    try:
        return _write_book(book, config, log or (lambda line: None))
    except OSError as exc:
        raise CommlabError(describe(exc)) from None
