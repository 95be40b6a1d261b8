"""The table of contents: each notebook's title, and the book's map as Markdown or HTML.

Chapter 00 shows the map with ``display(Markdown(book.toc_markdown()))``; its links are relative to the
chapter's folder, so JupyterLab opens the linked notebook. The static edition uses :func:`toc_html` with
``suffix=".html"`` for its index page.
"""
from __future__ import annotations

import html
import json
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol


class _PartLike(Protocol):
    @property
    def title(self) -> str: ...
    @property
    def chapters(self) -> tuple[str, ...]: ...
    @property
    def labs(self) -> tuple[str, ...]: ...


class Listing(Protocol):
    """What the table of contents reads of a book (:class:`commlab.book.manifest.Book` has it): the folder
    and the parts. A protocol, so that the manifest can import this module and not the other way round."""

    @property
    def root(self) -> Path: ...
    @property
    def parts(self) -> Sequence[_PartLike]: ...

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_NUMBER_PREFIX = re.compile(r"^\d+[_-]+")


def title_from_stem(path: str) -> str:
    """A readable title from a file name: ``labs/build_your_own_ring.ipynb`` -> "Build your own ring".

    >>> title_from_stem("chapters/00_welcome.ipynb")
    'Welcome'
    """
    words = _NUMBER_PREFIX.sub("", Path(path).stem).replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:] if words else Path(path).stem


def _cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def notebook_title(path: str | Path) -> str:
    """The text of the first Markdown heading of the notebook at ``path``, or a title made from its name.

    A missing or unreadable notebook gets the title from its name, so a table of contents can still be
    drawn while a chapter is being written (:func:`commlab.book.check` reports the missing file).
    """
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return title_from_stem(str(path))
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "markdown":
            continue
        for line in _cell_source(cell).splitlines():
            match = _HEADING.match(line)
            if match:
                return match.group("title").strip()
    return title_from_stem(str(path))


def link(notebook: str, relative_to: str = "", suffix: str = ".ipynb") -> str:
    """The relative link from the folder ``relative_to`` to ``notebook``, with its suffix replaced.

    >>> link("labs/p2p.ipynb", relative_to="chapters", suffix=".html")
    '../labs/p2p.html'
    >>> link("chapters/00_welcome.ipynb")
    'chapters/00_welcome.ipynb'
    """
    target = posixpath.splitext(notebook)[0] + suffix
    return posixpath.relpath(target, relative_to or ".")


def entry_label(kind: str, title: str) -> str:
    """"Lab: " before a lab's title, unless the title already says so."""
    return "Lab: " if kind == "lab" and not title.lower().startswith("lab") else ""


def _entries(book: Listing, part_index: int) -> list[tuple[str, str, str]]:
    """(kind, path, title) for each notebook of one part, chapters first."""
    part = book.parts[part_index]
    kinds = [("chapter", nb) for nb in part.chapters] + [("lab", nb) for nb in part.labs]
    return [(kind, nb, notebook_title(book.root / nb)) for kind, nb in kinds]


def toc_markdown(book: Listing, relative_to: str = "chapters") -> str:
    """The book's map in Markdown: one bold line per part, one bullet per chapter and lab.

    Links are relative to ``relative_to`` (a folder relative to the book's root; "" for the root).
    """
    lines: list[str] = []
    for index, part in enumerate(book.parts):
        lines += [f"**Part {index + 1}. {part.title}**", ""]
        for kind, nb, title in _entries(book, index):
            lines.append(f"- {entry_label(kind, title)}[{title}]({link(nb, relative_to)})")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def toc_html(book: Listing, relative_to: str = "chapters", suffix: str = ".ipynb") -> str:
    """The book's map as an HTML ``<nav>``: one section per part, links ending in ``suffix``."""
    out = ['<nav class="commlab-toc">']
    for index, part in enumerate(book.parts):
        out.append(f'<section class="commlab-part"><h3>Part {index + 1}. {html.escape(part.title)}</h3><ul>')
        for kind, nb, title in _entries(book, index):
            href = html.escape(link(nb, relative_to, suffix), quote=True)
            label = entry_label(kind, title)
            out.append(f'<li class="commlab-{kind}">{label}<a href="{href}">{html.escape(title)}</a></li>')
        out.append("</ul></section>")
    out.append("</nav>")
    return "\n".join(out)
