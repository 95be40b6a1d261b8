"""The static edition's own HTML: the navigation bar on every page, the index page, their style.

Each page is ``<folder>/<name>.html`` for the notebook ``<folder>/<name>.ipynb``; the index is
``index.html`` at the top. Links are relative, so the folder works from a file:// address and offline.
"""
from __future__ import annotations

import html
import posixpath
from dataclasses import dataclass

from commlab.book.manifest import Book
from commlab.book.toc import link, notebook_title, toc_html

INDEX = "index.html"

CSS = """
.commlab-nav { display: flex; justify-content: space-between; align-items: center; gap: 1em;
  font-family: var(--jp-ui-font-family, sans-serif); font-size: 14px; padding: 0.6em 1em;
  margin: 0 0 1em 0; border-bottom: 1px solid #ddd; background: #f7f7f9; }
.commlab-nav.commlab-bottom { border-top: 1px solid #ddd; border-bottom: none; margin: 2em 0 0 0; }
.commlab-nav a { text-decoration: none; color: #1a5fb4; }
.commlab-nav a:hover { text-decoration: underline; }
.commlab-nav .commlab-home { font-weight: bold; text-align: center; }
.commlab-nav .commlab-prev, .commlab-nav .commlab-next { flex: 1; }
.commlab-nav .commlab-next { text-align: right; }
.commlab-widget-note { border-left: 4px solid #e5a50a; background: #fdf6e3; padding: 0.5em 1em; margin: 0.3em 0; }
"""

#: Characters for the Font Awesome icons of matplotlib's ``to_jshtml`` controls (see preprocess).
ICON_CSS = """
.animation .fa { font-style: normal; font-family: "DejaVu Sans", sans-serif; display: inline-block; }
.animation .fa-flip-horizontal { transform: scale(-1, 1); }
.animation .fa-minus::before { content: "\\2212"; } .animation .fa-plus::before { content: "+"; }
.animation .fa-play::before { content: "\\25B6"; } .animation .fa-pause::before { content: "\\275A\\275A"; }
.animation .fa-step-backward::before { content: "|\\25C0"; } .animation .fa-step-forward::before { content: "\\25B6|"; }
.animation .fa-fast-backward::before { content: "\\21E4"; } .animation .fa-fast-forward::before { content: "\\21E5"; }
"""

INDEX_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 46em;
  margin: 2em auto; padding: 0 1em; line-height: 1.5; color: #222; }
h1 { margin-bottom: 0.2em; } .commlab-authors { color: #555; margin-top: 0; }
.commlab-part h3 { margin-bottom: 0.2em; } .commlab-part ul { margin-top: 0.2em; }
.commlab-lab { list-style: square; } a { color: #1a5fb4; }
.commlab-static-note { background: #f7f7f9; border-left: 4px solid #1a5fb4; padding: 0.5em 1em; }
"""


@dataclass(frozen=True)
class Neighbours:
    """Where the navigation bar of one page points: (address, title) pairs, relative to that page."""

    home: tuple[str, str]
    prev: tuple[str, str]
    next: tuple[str, str]


def page_path(notebook: str) -> str:
    """The page of ``notebook`` relative to the output folder: ``chapters/00_welcome.html``."""
    return posixpath.splitext(notebook)[0] + ".html"


def neighbours(book: Book, notebook: str) -> Neighbours:
    """The index, previous and next pages of ``notebook``; the first and last pages point back to the index."""
    order = book.notebooks()
    index = order.index(notebook)
    here = posixpath.dirname(notebook)
    home = (posixpath.relpath(INDEX, here or "."), book.title)

    def entry(position: int) -> tuple[str, str]:
        if 0 <= position < len(order):
            other = order[position]
            return link(other, here, ".html"), notebook_title(book.root / other)
        return home[0], "Contents"

    return Neighbours(home=home, prev=entry(index - 1), next=entry(index + 1))


def nav_html(around: Neighbours, where: str = "top") -> str:
    """The navigation bar: "← previous", the book's title (to the index), "next →"."""
    def anchor(css: str, target: tuple[str, str], text: str) -> str:
        href = html.escape(target[0], quote=True)
        return f'<a class="commlab-{css}" href="{href}" rel="{css}">{text}</a>'

    return (f'<nav class="commlab-nav commlab-{where}" aria-label="book navigation">'
            + anchor("prev", around.prev, f"&larr; {html.escape(around.prev[1])}")
            + anchor("home", around.home, html.escape(around.home[1]))
            + anchor("next", around.next, f"{html.escape(around.next[1])} &rarr;")
            + "</nav>")


def index_html(book: Book, mathjax_note: str = "") -> str:
    """The index page: the title, the authors, the parts with links to every page."""
    first = book.notebooks()[0] if book.notebooks() else None
    start = (f'<p><a href="{html.escape(page_path(first), quote=True)}">Start reading &rarr;</a></p>'
             if first else "")
    authors = f'<p class="commlab-authors">{html.escape(", ".join(book.authors))}</p>' if book.authors else ""
    note = ("<p class=\"commlab-static-note\">This is the static edition. Widgets and live cells need a "
            "running kernel: open the notebooks in JupyterLab (<code>make lab</code>) to use them."
            f"{html.escape(mathjax_note)}</p>")
    return "\n".join([
        "<!DOCTYPE html>", f'<html lang="{html.escape(book.language, quote=True)}">', "<head>",
        '<meta charset="utf-8">', '<meta name="viewport" content="width=device-width, initial-scale=1.0">',
        f"<title>{html.escape(book.title)}</title>", f"<style>{INDEX_CSS}</style>", "</head>", "<body>",
        f"<h1>{html.escape(book.title)}</h1>", authors, note, start,
        toc_html(book, relative_to="", suffix=".html"), "</body>", "</html>", "",
    ])
