"""The static HTML edition: Sphinx with MyST-NB and sphinx-book-theme, built offline.

``commlab book build`` (``make book`` adds ``--execute``) lays the listed notebooks out as a Sphinx project in
``<cache>/src`` (:mod:`commlab.book.project`: an index page whose tables of contents follow ``book.toml``, a
copy of each listed notebook's folder) and runs Sphinx on it: MyST-NB renders each notebook, and with
``--execute`` runs it first through its execution cache (jupyter-cache, under ``<cache>/jupyter-cache``), so a
notebook whose code did not change is not run again. sphinx-book-theme draws the pages (navigation, per-page
contents, search, a download of each notebook, light and dark themes), sphinx-copybutton puts a copy button
on code. What commlab alone needs is the small extension :mod:`commlab.book.sphinx_ext`: widgets drawn as
they first appeared, animation players that fetch nothing, MathJax 3 with its TeX fonts from a local copy.

The jupyter-cache key of a notebook is its code. What else its outputs depend on (commlab's own code and
data, the files of its folder such as a lab's scripts, the kernel's environment) is hashed into the name of
the cache folder (:func:`commlab.book.project.environment_salt`), so a change there runs the book again;
``labs/mine/`` (the reader's own lab code, and lock files a run leaves) is no part of either.
"""
from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from commlab.book.check import listing_problems
from commlab.book.manifest import Book
from commlab.book.project import environment_salt, lay_out, sphinx_settings
from commlab.errors import CommlabError
from commlab.output import check_writable_dir, describe

DEFAULT_OUT_DIR = Path("_build/html")
CACHE_NAME = ".commlab-book-cache"
INDEX = "index.html"
#: Modules a build imports, by what needs them, and the extra that installs them.
TOOLS = {"any": ("nbformat", "sphinx", "myst_nb", "sphinx_book_theme", "sphinx_copybutton"),
         "execute": ("jupyter_cache", "nbclient", "ipykernel", "jupyter_client", "zmq")}


@dataclass(frozen=True)
class BuildConfig:
    """How to build the static edition."""

    out_dir: Path = DEFAULT_OUT_DIR
    """Where the pages go; created when missing. Relative paths are relative to the current directory."""
    execute: bool = False
    """Run each notebook first (MyST-NB's cache mode), so the pages show outputs; else the source only."""
    timeout_s: float = 300.0
    """Longest time one cell may run when executing, in seconds."""
    mathjax_dir: Path | None = None
    """A MathJax 3 folder (holding ``tex-chtml.js``) to serve the formulas from; None: the copy shipped by
    the ``sphinx-mathjax-offline`` package (MathJax 3.2.2 with its TeX fonts)."""
    kernel_env: tuple[tuple[str, str], ...] = ()
    """When executing, extra environment variables for the notebooks' kernel, as (name, value) pairs; part of
    the cache's name. ``commlab book build`` passes the manifest's ``[execute] env`` here."""
    cache_dir: Path | None = None
    """Where the Sphinx project, its doctrees and the execution cache are kept between builds; None:
    ``.commlab-book-cache`` next to ``out_dir``."""
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
    mathjax_local: bool             # True: MathJax and its fonts are served from out_dir (always, today)
    n_executed: int = 0             # notebooks run by this build
    n_cached: int = 0               # notebooks unchanged since an earlier build, not run again
    elapsed_s: float = 0.0
    warnings: tuple[str, ...] = ()  # Sphinx's warnings, one line each


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


@contextmanager
def _kernel_environment(extra: tuple[tuple[str, str], ...]) -> Iterator[None]:
    """``extra`` in os.environ while the build runs (jupyter-cache starts the kernel with this process's
    environment), then the environment as it was."""
    saved = {name: os.environ.get(name) for name, _ in extra}
    os.environ.update(dict(extra))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _LineLog(io.StringIO):
    """A stream for Sphinx's status output that hands each finished line to ``log``."""

    #: Sphinx's lines that say nothing a reader of the build needs (MyST's whole configuration, every file).
    QUIET = ("myst v", "myst-nb v", "Writing evaluated template", "[IPKernelApp] WARNING | Kernel is running over TCP")

    def __init__(self, log: Callable[[str], None], src_dir: Path) -> None:
        super().__init__()
        self.log, self.pending, self.prefix = log, "", str(src_dir) + os.sep

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            if line.strip() and not line.startswith(self.QUIET):
                self.log(line.rstrip().replace(self.prefix, ""))
        return len(text)


def _execution_counts(app, docs: tuple[str, ...], start_s: float) -> tuple[int, int]:
    """(executed by this build, not executed again) among ``docs``: MyST-NB stamps the notebooks it ran
    with the time it ran them; a page whose notebook came from the cache, or that Sphinx did not read again
    because nothing changed, keeps an older stamp."""
    metadata = getattr(app.env, "nb_metadata", {}) or {}
    executed = sum(1 for doc in docs if (metadata.get(doc, {}).get("exec_data") or {}).get("mtime", 0) >= start_s)
    return executed, len(docs) - executed


def _preview(error: Exception) -> str:
    """The first line of the cell that nbclient's timeout message quotes after its dashed rule."""
    lines = str(error).splitlines()
    rules = [i for i, line in enumerate(lines) if set(line.strip()) == {"-"}]
    return lines[rules[0] + 1].strip()[:80] if rules and rules[0] + 1 < len(lines) else "?"


def _execution_failure(exc: BaseException, src_dir: Path, timeout_s: float) -> str | None:
    """One line for a notebook that failed while MyST-NB ran it (the notebook, and what its cell did), or None
    when ``exc`` is no such failure. Sphinx may wrap MyST-NB's ExecutionError (``orig_exc``)."""
    from myst_nb.core.execute.base import ExecutionError
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    while not isinstance(exc, ExecutionError) and getattr(exc, "orig_exc", None) is not None:
        exc = exc.orig_exc  # type: ignore[attr-defined]
    if not isinstance(exc, ExecutionError):
        return None
    name = Path(os.path.relpath(os.path.abspath(str(exc)), os.path.abspath(src_dir))).as_posix()
    if name.startswith("../"):
        name = str(exc)
    cause = exc.__cause__
    if isinstance(cause, CellTimeoutError):
        return (f"{name}: a cell ran longer than --timeout {timeout_s:g} s (the cell starting {_preview(cause)!r}); "
                "raise --timeout or fix the cell")
    if isinstance(cause, CellExecutionError):
        return (f"{name}: a cell raised {cause.ename}: {cause.evalue}; open the notebook in JupyterLab and run it "
                "to see the traceback")
    if isinstance(cause, DeadKernelError):
        return f"{name}: the kernel died while running the notebook ({cause})"
    return f"{name}: the notebook failed to run ({type(cause).__name__ if cause else 'unknown error'}: {cause})"


def _run_sphinx(book: Book, config: BuildConfig, log: Callable[[str], None]) -> BuildResult:
    from sphinx.application import Sphinx
    from sphinx.errors import SphinxError
    from sphinx.util.console import nocolor

    from commlab.book.sphinx_ext import widget_notes

    nocolor()
    start_s, wall_s = time.time(), time.perf_counter()
    cache_dir = cast(Path, config.cache_dir)
    salt = environment_salt(book, config.kernel_env) if config.execute else ""
    project = lay_out(book)
    settings = sphinx_settings(book, project, cache_dir, salt, execute=config.execute, timeout_s=config.timeout_s,
                               mathjax_dir=config.mathjax_dir)
    if config.execute and not config.use_cache:
        project.forget_executions(cache_dir, salt)
    warnings = io.StringIO()
    with _kernel_environment(config.kernel_env if config.execute else ()):
        try:
            app = Sphinx(str(project.src_dir), None, str(config.out_dir), str(cache_dir / "doctrees"), "html",
                         confoverrides=settings, status=_LineLog(log, project.src_dir), warning=warnings,
                         freshenv=not config.use_cache, keep_going=True)
            app.build()
        except Exception as exc:  # noqa: BLE001 - sorted below: a notebook's failure, Sphinx's, or a bug
            failure = _execution_failure(exc, project.src_dir, config.timeout_s)
            if failure is not None:
                raise CommlabError(failure) from None
            cause = getattr(exc, "orig_exc", None)
            if isinstance(cause, OSError):
                raise CommlabError(describe(cause)) from None   # a full disk while the assets are copied
            if isinstance(exc, SphinxError):
                raise CommlabError(f"the book did not build: {exc}") from None
            raise
    warned = tuple(line for line in warnings.getvalue().splitlines() if line.strip())
    unwritten = [line for line in warned if "error writing file" in line or "No space left on device" in line]
    if unwritten:   # Sphinx warns and goes on when a page cannot be written; the edition is then incomplete
        raise CommlabError(unwritten[0].split("WARNING: ", 1)[-1][:300])
    failed = [line for line in warned if "Executing notebook failed" in line or "ExecutionError" in line]
    if failed or (app.statuscode and config.execute):
        raise CommlabError(f"a notebook failed while the book ran it: {(failed or warned or ['?'])[0]}; open it in "
                           "JupyterLab and run it to see the traceback")
    executed, cached = _execution_counts(app, project.docs, start_s) if config.execute else (0, 0)
    pages = tuple(nb[: -len(".ipynb")] + ".html" for nb in book.notebooks()) + (INDEX,)
    return BuildResult(out_dir=config.out_dir, pages=pages, executed=config.execute,
                       n_widget_notes=widget_notes(app.env), mathjax_local=True,
                       n_executed=executed, n_cached=cached, elapsed_s=time.perf_counter() - wall_s,
                       warnings=warned)


def build(book: Book, config: BuildConfig = BuildConfig(), log: Callable[[str], None] | None = None) -> BuildResult:
    """Write the static edition of ``book`` into ``config.out_dir``; ``log`` receives the progress lines.

    Refuses a book that lists a missing notebook or one notebook twice (:func:`check.listing_problems`), a
    listed file that is no notebook, and an output folder that cannot be written, before executing anything;
    a failing cell is a CommlabError naming the notebook. Notebooks left out of the manifest are not built
    (``commlab book check`` reports them).
    """
    problems = listing_problems(book)
    if problems:
        raise CommlabError("book.toml cannot be built: " + "; ".join(problems))
    require_tools(config.execute)
    from commlab.book.sphinx_ext import mathjax_source

    mathjax_source(str(config.mathjax_dir) if config.mathjax_dir is not None else "")   # refused before any work
    check_writable_dir(config.out_dir, f"--out {str(config.out_dir)!r}")
    check_writable_dir(cast(Path, config.cache_dir), f"the cache folder {str(config.cache_dir)!r} (--cache)")
    try:
        return _run_sphinx(book, config, log or (lambda line: None))
    except OSError as exc:
        raise CommlabError(describe(exc)) from None
