"""The book: its manifest (``book.toml``), the table of contents, the repository check, the static edition.

Pure: importing it reads nothing and imports only the standard library. The static HTML build lives in
:mod:`commlab.book.build` and imports nbconvert (and nbclient, with ``execute=True``) when called.

>>> from commlab.book import load
>>> book = load()                      # doctest: +SKIP
>>> print(book.toc_markdown())         # doctest: +SKIP
"""
from commlab.book.check import check, check_book, listing_problems, notebooks_on_disk
from commlab.book.manifest import MANIFEST_NAME, Book, Part, find_root, load, loads
from commlab.book.toc import notebook_title, toc_html, toc_markdown

__all__ = [
    "MANIFEST_NAME", "Book", "Part", "check", "check_book", "find_root", "listing_problems", "load", "loads",
    "notebook_title", "notebooks_on_disk", "toc_html", "toc_markdown",
]
