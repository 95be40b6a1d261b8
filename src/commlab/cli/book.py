"""``commlab book``: build the static HTML edition, check the manifest, print the table of contents.

    commlab book build [--execute] [--out DIR] [--timeout S] [--mathjax DIR] [--rebuild] [--cache DIR]
    commlab book check      # every notebook under chapters/ and labs/ listed once in book.toml
    commlab book toc        # the table of contents as Markdown
    (--manifest PATH goes before the action: commlab book --manifest other/book.toml build)

``build`` prints a line per page as it goes ("[3/19] chapters/02_x.ipynb -> ... (executed, 12.3 s)") and
executes only the notebooks whose code changed since the last build (``--rebuild`` executes them all). The
pages are Sphinx's, with MyST-NB and sphinx-book-theme: the book's extra (``pip install 'commlab[book]'``)
installs them, and they are imported only when ``build`` runs.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from commlab.errors import CommlabError


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("book", help="build the static HTML edition; check book.toml",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", default="book.toml", metavar="PATH",
                        help="the book's manifest (default: book.toml here or in a folder above)")
    actions = parser.add_subparsers(dest="book_command", metavar="ACTION")
    build = actions.add_parser("build", help="write one HTML page per notebook plus index.html")
    build.add_argument("--execute", action="store_true", help="run each notebook first, so pages show outputs")
    build.add_argument("--out", default="_build/html", metavar="DIR", help="output folder (default: _build/html)")
    build.add_argument("--timeout", default="300", metavar="S",
                       help="longest time one cell may run with --execute, in seconds (default: 300)")
    build.add_argument("--mathjax", default=None, metavar="DIR",
                       help="a MathJax 3 folder (with tex-chtml.js) to serve formulas from (default: the copy of "
                            "the sphinx-mathjax-offline package, with its TeX fonts)")
    build.add_argument("--rebuild", action="store_true",
                       help="with --execute, run every notebook again, even those unchanged since the last build")
    build.add_argument("--cache", default=None, metavar="DIR",
                       help="where the Sphinx project and the executed notebooks (jupyter-cache) are kept "
                            "between builds (default: .commlab-book-cache next to --out)")
    actions.add_parser("check", help="every notebook under chapters/ and labs/ is listed in book.toml once")
    actions.add_parser("toc", help="print the table of contents as Markdown")
    return parser


def _timeout_s(text: str) -> float:
    try:
        timeout_s = float(text)
    except ValueError:
        timeout_s = float("nan")
    if not timeout_s > 0:
        raise CommlabError(f"--timeout {text!r} is not a number of seconds > 0; expected e.g. --timeout 300")
    return timeout_s


def _log(line: str) -> None:
    print(line, flush=True)


def _build(args, book) -> int:
    from commlab.book import check_book
    from commlab.book.build import BuildConfig, build

    for problem in check_book(book):
        if "is not listed" in problem:
            print(f"note: {problem} (it is not built)")

    config = BuildConfig(out_dir=Path(args.out), execute=args.execute, timeout_s=_timeout_s(args.timeout),
                         mathjax_dir=args.mathjax, cache_dir=args.cache, use_cache=not args.rebuild,
                         kernel_env=book.execute_env)  # book.toml's [execute] env
    result = build(book, config, log=_log)
    how = (f": {result.n_executed} executed, {result.n_cached} unchanged (cache {config.cache_dir})"
           if result.executed else " (source only: run with --execute for outputs)")
    print(f"wrote {len(result.pages)} pages to {result.out_dir} in {result.elapsed_s:.1f} s{how}; "
          f"open {result.out_dir / 'index.html'}")
    if result.n_widget_notes:
        print(f"{result.n_widget_notes} widget output(s) shown as they first appeared, with a note: "
              "using them needs JupyterLab")
    return 0


def run(args) -> int:
    from commlab.book import check_book, load

    book = load(args.manifest)
    if args.book_command == "build":
        return _build(args, book)
    if args.book_command == "check":
        problems = check_book(book)
        for problem in problems:
            print(problem)
        print(f"{len(book.notebooks())} notebooks listed, {len(problems)} problem(s)")
        return 1 if problems else 0
    if args.book_command == "toc":
        print(book.toc_markdown(relative_to=""), end="")
        return 0
    raise CommlabError("no action given; expected one of: build, check, toc (e.g. commlab book build)")
