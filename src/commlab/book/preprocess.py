"""What the static edition changes in a notebook and its page.

A widget needs a running kernel, so each widget output becomes a visible note; committed notebooks carry
no outputs, and an unexecuted build shows them that way; links between notebooks point to their pages.
Everything else (a ``to_jshtml`` animation, figures, tables) passes through unchanged.
"""
from __future__ import annotations

import html
import posixpath
import re
from urllib.parse import unquote, urlsplit

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = "Interactive widget: run this notebook in JupyterLab to use it"
WIDGET_NOTE_HTML = (f'<div class="commlab-widget-note" role="note"><strong>{html.escape(WIDGET_NOTE)}</strong>'
                    " (the static edition has no kernel to drive it).</div>")

#: matplotlib's ``to_jshtml`` pulls its button icons from Font Awesome on a CDN; the static edition draws
#: them with characters instead (``pages.ICON_CSS``), so the animation's controls show offline.
_FONT_AWESOME = re.compile(r"<link\b[^>]*font-awesome[^>]*>", re.IGNORECASE)
_LINK = re.compile(r"""(?P<attr>\b(?:href|src))=(?P<quote>["'])(?P<url>[^"'<>]*)(?P=quote)""", re.IGNORECASE)


def strip_outputs(nb: dict) -> dict:
    """Remove every output and execution count from the notebook ``nb`` (in place); return it."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def replace_widgets(nb: dict) -> int:
    """Replace each widget output of ``nb`` by :data:`WIDGET_NOTE` (in place); return how many there were.

    The notebook's saved widget state goes too, so the page does not fetch the widget manager from a CDN.
    """
    count = 0
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {})
            if WIDGET_MIME in data:
                output["data"] = {"text/html": WIDGET_NOTE_HTML, "text/plain": WIDGET_NOTE}
                count += 1
    nb.get("metadata", {}).pop("widgets", None)
    return count


def drop_font_awesome(page_html: str) -> str:
    """Remove the Font Awesome stylesheet links that ``to_jshtml`` animations carry.

    >>> drop_font_awesome('<link rel="stylesheet"\\nhref="https://cdn/font-awesome/4.4.0/css/font-awesome.min.css">x')
    'x'
    """
    return _FONT_AWESOME.sub("", page_html)


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
