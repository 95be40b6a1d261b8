"""Where each page is and what comes before and after it: the navigation bar at the top and bottom of a page.

Each page is ``<folder>/<name>.html`` for the notebook ``<folder>/<name>.ipynb``; the index is
``index.html`` at the top. Links are relative, so the folder works from a file:// address and offline.
"""
from __future__ import annotations

import html
import posixpath
from dataclasses import dataclass

from commlab.book.manifest import Book
from commlab.book.toc import link, notebook_title

INDEX = "index.html"


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
