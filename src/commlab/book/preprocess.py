"""What the static edition changes in a notebook and its page.

Committed notebooks carry no outputs, and an unexecuted build shows them that way; links between notebooks
point to their pages; ``to_jshtml`` players lose their Font Awesome link. Widgets become still pictures
(:mod:`commlab.book.widgets`); everything else (figures, tables) passes through unchanged.
"""
from __future__ import annotations

import html
import posixpath
import re
from urllib.parse import unquote, urlsplit

_LINK = re.compile(r"""(?P<attr>\b(?:href|src))=(?P<quote>["'])(?P<url>[^"'<>]*)(?P=quote)""", re.IGNORECASE)


def strip_outputs(nb: dict) -> dict:
    """Remove every output and execution count from the notebook ``nb`` (in place); return it."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def drop_font_awesome(page_html: str) -> str:
    """Remove the Font Awesome stylesheet links that ``to_jshtml`` animations carry; the book's style draws
    their icons (:data:`commlab.viz.export.ICON_CSS`), so the animation's controls show offline."""
    from commlab.viz.export import without_font_awesome

    return without_font_awesome(page_html)


def _relative_path(url: str) -> str | None:
    """The path part of ``url`` when it is a relative link into the book, else None.

    >>> _relative_path("../labs/p2p.ipynb#Step-1"), _relative_path("https://x.org/a.ipynb")
    ('../labs/p2p.ipynb', None)
    """
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path or parts.path.startswith("/"):
        return None
    return unquote(parts.path)


def rewrite_notebook_links(page_html: str) -> str:
    """Point relative links to ``*.ipynb`` at the matching ``*.html`` page, keeping any ``#anchor``.

    >>> rewrite_notebook_links('<a href="../labs/p2p.ipynb#Fit">lab</a> <a href="https://a.b/c.ipynb">x</a>')
    '<a href="../labs/p2p.html#Fit">lab</a> <a href="https://a.b/c.ipynb">x</a>'
    """
    def swap(match: re.Match) -> str:
        url = match.group("url")
        path = _relative_path(url)
        if path is None or not path.endswith(".ipynb"):
            return match.group(0)
        new_url = url.replace(".ipynb", ".html", 1) if url.count(".ipynb") == 1 else url
        return f"{match.group('attr')}={match.group('quote')}{new_url}{match.group('quote')}"

    return _LINK.sub(swap, page_html)


def linked_files(page_html: str, page: str) -> list[str]:
    """Files (posix, relative to the book's root) that ``page`` links to or embeds, other than notebooks.

    ``page`` is the page's own path relative to the root. The build copies these files next to the pages
    so that a link to ``labs/scripts/ring.py`` still works in the static edition.

    >>> linked_files('<a href="../labs/scripts/ring.py">s</a> <a href="01_x.ipynb">n</a>', "chapters/00.html")
    ['labs/scripts/ring.py']
    """
    found = []
    for match in _LINK.finditer(page_html):
        path = _relative_path(html.unescape(match.group("url")))
        if path is None or path.endswith((".ipynb", ".html")):
            continue
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
        if not target.startswith("../") and target != ".." and target not in found:
            found.append(target)
    return found
