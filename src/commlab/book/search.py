"""The static edition's offline search: an index of every page's sections, built when the book is built.

Each rendered page is cut into sections at its headings (``<h1>`` to ``<h4>`` carrying an ``id``, as
nbconvert writes them); a section's words are its heading and its text: Markdown, code, and the HTML outputs
(an exercise's question, a table), not plain-text output or images. Words are folded to lower case, and a
compound such as ``all_reduce``, ``all-reduce`` or ``torch.distributed`` is indexed whole without its
separators (``allreduce``), then part by part, so "AllReduce", "all-reduce" and "all_reduce" find each other.

The index is a JavaScript file (``_static/search-index.js``, setting ``window.COMMLAB_SEARCH``) so that pages
opened from ``file://``, where browsers refuse ``fetch``, can load it with a ``<script>`` tag. The search
itself is ``static/book.js``: commlab's own few dozen lines (prefix match on the sorted terms, every word
required, sections ranked by weight), in the spirit of Sphinx's built-in search; the corpus is a few dozen
pages, so a vendored engine would add more code than it saves.

>>> terms("NCCL's all_reduce: busbw")
['nccl', 's', 'allreduce', 'all', 'reduce', 'busbw']
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

INDEX_FILE = "_static/search-index.js"
#: Weight of a word in a section's heading against one in its text.
HEADING_WEIGHT = 10
#: Characters of each section's text kept for the result snippets.
TEXT_CHARS = 4000
_WORD = re.compile(r"[^\W_]+(?:[_.\-][^\W_]+)*")
_SEPARATOR = re.compile(r"[_.\-]")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_SKIP_TAGS = {"script", "style", "svg", "img", "button"}
_SKIP_CLASSES = {"anchor-link", "jp-OutputPrompt", "jp-InputPrompt", "commlab-widget-note"}


def terms(text: str) -> list[str]:
    """The indexed words of ``text``, in order (book.js splits a query the same way)."""
    found = []
    for match in _WORD.finditer(text.lower()):
        parts = _SEPARATOR.split(match.group())
        found.append("".join(parts))
        if len(parts) > 1:
            found.extend(parts)
    return found


@dataclass
class Section:
    """One section of a page: the heading's anchor and text, and the words under it."""

    anchor: str
    heading: str
    level: int = 0                 # 1 to 4 for <h1> to <h4>; 0 for the text before the first heading
    chunks: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", " ".join(self.chunks)).strip()


class _Sections(HTMLParser):
    """Cuts a page's ``<main>`` into sections at headings with an id, skipping what is not text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections = [Section("", "")]
        self.stack: list[tuple[str, bool]] = []   # (tag, skipped)
        self.classes: list[str] = []               # the class attribute of each open tag
        self.heading: list[str] | None = None
        self.in_main = False

    def _skipping(self) -> bool:
        return any(skipped for _, skipped in self.stack)

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        classes = set((values.get("class") or "").split())
        if tag == "main":
            self.in_main = True
        if tag in _VOID:
            return
        plain_output = tag == "pre" and any("jp-RenderedText" in open_classes for open_classes in self.classes)
        skipped = tag in _SKIP_TAGS or bool(classes & _SKIP_CLASSES) or plain_output
        self.stack.append((tag, skipped))
        self.classes.append(" ".join(classes))
        if re.fullmatch(r"h[1-4]", tag) and values.get("id") and self.in_main and not self._skipping():
            self.sections.append(Section(values["id"], "", int(tag[1])))
            self.heading = []

    def handle_endtag(self, tag):
        if tag in _VOID or not any(t == tag for t, _ in self.stack):
            return
        while self.stack:
            open_tag, _ = self.stack.pop()
            self.classes.pop()
            if open_tag == tag:
                break
        if re.fullmatch(r"h[1-4]", tag) and self.heading is not None:
            self.sections[-1].heading = re.sub(r"\s+", " ", "".join(self.heading)).strip()
            self.heading = None
        if tag == "main":
            self.in_main = False

    def handle_data(self, data):
        if not self.in_main or self._skipping():
            return
        if self.heading is not None:
            self.heading.append(data)
        else:
            self.sections[-1].chunks.append(data)


def page_sections(page_html: str) -> list[Section]:
    """The sections of a page, in order; text before the first heading is a section with no anchor."""
    parser = _Sections()
    parser.feed(page_html)
    parser.close()
    return [s for s in parser.sections if s.anchor or s.text]


@dataclass(frozen=True)
class PageEntry:
    """What the index keeps of one page."""

    href: str                      # relative to the book's output folder
    title: str
    sections: tuple[Section, ...]


def build_index(pages: list[PageEntry]) -> dict:
    """The search index: pages, sections (page, anchor, heading, text) and, per word, the sections holding it
    as a flat list [section, weight, section, weight, ...]."""
    sections: list[list] = []
    postings: dict[str, list] = {}
    for page_number, page in enumerate(pages):
        for section in page.sections:
            number = len(sections)
            sections.append([page_number, section.anchor, section.heading, section.text[:TEXT_CHARS]])
            weights = Counter(terms(section.text))
            for word in terms(section.heading):
                weights[word] += HEADING_WEIGHT
            for word, weight in weights.items():
                if len(word) > 1:
                    postings.setdefault(word, []).extend([number, weight])
    return {"pages": [[page.href, page.title] for page in pages], "sections": sections,
            "terms": dict(sorted(postings.items()))}


def index_script(index: dict) -> str:
    """The index as the JavaScript file the pages load (``window.COMMLAB_SEARCH = {...};``)."""
    body = json.dumps(index, ensure_ascii=True, separators=(",", ":")).replace("</", "<\\/")
    return f"window.COMMLAB_SEARCH = {body};\n"
