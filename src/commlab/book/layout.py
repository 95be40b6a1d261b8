"""The page around each notebook: a header (the book's title, the search box, "download this notebook"), a
sidebar (the book's contents, and the current page's sections under its entry), and the index page.

Every address is relative (``root`` is the way up from a page to the output folder), so the edition works
from ``file://`` and offline. The style and the script are files under ``_static/`` (:func:`install_static`):
``book.css`` (commlab's layout, in JupyterLab's colour variables), ``jupyterlab-dark.css`` (JupyterLab's dark
theme, linked with ``media="(prefers-color-scheme: dark)"``, so a dark system gets a dark book), ``book.js``
(the small-screen menu and the search, see :mod:`commlab.book.search`).
"""
from __future__ import annotations

import html
import posixpath
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from commlab.book.manifest import Book
from commlab.book.search import INDEX_FILE, Section
from commlab.book.toc import entry_label, link, notebook_title, toc_html
from commlab.errors import CommlabError
from commlab.output import write_atomic

STATIC = "_static"
DARK_CSS = "jupyterlab-dark.css"
#: Headings listed under the current page in the sidebar (its <h1> is the page's title).
SIDEBAR_LEVELS = (2, 3)


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def root_of(page: str) -> str:
    """The relative way from ``page`` (posix, relative to the output folder) up to that folder.

    >>> root_of("chapters/05_ring.html"), root_of("index.html")
    ('../', '')
    """
    depth = posixpath.dirname(page).count("/") + 1 if posixpath.dirname(page) else 0
    return "../" * depth


def head_html(page: str) -> str:
    """The links every page's <head> needs: the book's style, and the dark theme for dark systems."""
    root = root_of(page)
    return ('<meta name="color-scheme" content="light dark">\n'
            f'<link rel="stylesheet" href="{root}{STATIC}/book.css">\n'
            f'<link rel="stylesheet" href="{root}{STATIC}/{DARK_CSS}" media="(prefers-color-scheme: dark)">')


def scripts_html(page: str) -> str:
    root = root_of(page)
    return (f'<script src="{root}{INDEX_FILE}" defer></script>\n'
            f'<script src="{root}{STATIC}/book.js" defer></script>')


def header_html(book: Book, page: str, download: str | None = None) -> str:
    """The top bar: the menu button (small screens), the book's title, the search box, the download link."""
    root = root_of(page)
    fetch = (f'<a class="commlab-download" href="{_esc(download)}" download>Download this notebook</a>'
             if download else "")
    return ('<a class="commlab-skip" href="#commlab-content">Skip to the text</a>\n'
            '<header class="commlab-header">'
            '<button class="commlab-menu" type="button" aria-controls="commlab-sidebar" aria-expanded="false">'
            '&#9776; Contents</button>'
            f'<a class="commlab-book-title" href="{root}index.html">{_esc(book.title)}</a>'
            '<div class="commlab-search" role="search">'
            '<input id="commlab-search-input" type="search" placeholder="Search the book (press /)" '
            'aria-label="Search the book" autocomplete="off" spellcheck="false">'
            '<div id="commlab-search-results" class="commlab-search-results" aria-live="polite" hidden></div>'
            f"</div>{fetch}</header>")


def _sections_html(sections: list[Section]) -> str:
    items = [f'<li class="commlab-h{s.level}"><a href="#{_esc(s.anchor)}">{_esc(s.heading)}</a></li>'
             for s in sections if s.level in SIDEBAR_LEVELS and s.anchor and s.heading]
    return f'<ul class="commlab-sections" aria-label="On this page">{"".join(items)}</ul>' if items else ""


def sidebar_html(book: Book, page: str, sections: Sequence[Section] = ()) -> str:
    """The book's contents, part by part, with the current page marked and its sections listed under it."""
    here, root = posixpath.dirname(page), root_of(page)
    out = ['<nav class="commlab-sidebar" id="commlab-sidebar" aria-label="Contents">',
           f'<p class="commlab-sidebar-home"><a href="{root}index.html">Contents</a></p>']
    for number, part in enumerate(book.parts, 1):
        out.append(f'<p class="commlab-sidebar-part">Part {number}. {_esc(part.title)}</p><ul>')
        for kind, notebook in [("chapter", nb) for nb in part.chapters] + [("lab", nb) for nb in part.labs]:
            target = posixpath.splitext(notebook)[0] + ".html"
            current = ' aria-current="page"' if target == page else ""
            title = notebook_title(book.root / notebook)
            below = _sections_html(list(sections)) if current else ""
            out.append(f'<li class="commlab-{kind}">{entry_label(kind, title)}'
                       f'<a href="{_esc(link(notebook, here, ".html"))}"{current}>{_esc(title)}</a>{below}</li>')
        out.append("</ul>")
    out.append("</nav>")
    return "\n".join(out)


def index_html(book: Book, mathjax_note: str = "") -> str:
    """The index page: the title, the authors, a note on the static edition, and every page by part."""
    first = book.notebooks()[0] if book.notebooks() else None
    start = (f'<p><a href="{_esc(posixpath.splitext(first)[0] + ".html")}">Start reading &rarr;</a></p>'
             if first else "")
    authors = f'<p class="commlab-authors">{_esc(", ".join(book.authors))}</p>' if book.authors else ""
    note = ('<p class="commlab-static-note">This is the static edition: every chapter and lab as it ran when the '
            "book was built. Widgets show as they first appeared, and checking an exercise needs its notebook: "
            "each page has a link to download it; run it in JupyterLab (<code>make lab</code>)."
            f"{_esc(mathjax_note)}</p>")
    return "\n".join([
        "<!DOCTYPE html>", f'<html lang="{_esc(book.language)}">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1.0">', f"<title>{_esc(book.title)}</title>",
        head_html("index.html"), "</head>", '<body class="commlab-page commlab-index" data-commlab-root="">',
        header_html(book, "index.html"), '<div class="commlab-layout">', sidebar_html(book, "index.html"),
        '<main id="commlab-content" class="commlab-content">', f"<h1>{_esc(book.title)}</h1>", authors, note, start,
        toc_html(book, relative_to="", suffix=".html"), "</main>", "</div>", scripts_html("index.html"),
        "</body>", "</html>", "",
    ])


def _dark_theme_css() -> str:
    """JupyterLab's dark theme variables, from nbconvert's lab template."""
    from jupyter_core.paths import jupyter_path

    for folder in jupyter_path("nbconvert", "templates", "lab", "static"):
        path = Path(folder) / "theme-dark.css"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise CommlabError("nbconvert's lab template has no static/theme-dark.css; reinstall nbconvert")


def install_static(out_dir: Path) -> None:
    """Write ``_static/book.css``, ``book.js`` and the dark theme into ``out_dir``."""
    from commlab.viz.export import ICON_CSS

    own = resources.files("commlab.book") / "static"
    (out_dir / STATIC).mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / STATIC / "book.css", (own / "book.css").read_text(encoding="utf-8") + ICON_CSS)
    write_atomic(out_dir / STATIC / "book.js", (own / "book.js").read_text(encoding="utf-8"))
    write_atomic(out_dir / STATIC / DARK_CSS, _dark_theme_css())
