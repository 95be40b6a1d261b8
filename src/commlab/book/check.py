"""The repository check: every notebook under chapters/ and labs/ is listed in book.toml exactly once.

A chapter that nobody listed never reaches the table of contents or the static edition, and a listed one
that was renamed breaks both; ``tests/unit/test_book.py`` runs :func:`check` on the repository so neither
can be committed.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from commlab.book.manifest import FOLDERS, MANIFEST_NAME, Book, load
from commlab.errors import CommlabError

CHECKPOINTS = ".ipynb_checkpoints"


def notebooks_on_disk(root: str | Path) -> list[str]:
    """Every ``*.ipynb`` under ``chapters/`` and ``labs/`` of ``root`` (posix paths relative to it, sorted),
    leaving out JupyterLab's ``.ipynb_checkpoints`` copies."""
    root = Path(root)
    found = []
    for folder in sorted(set(FOLDERS.values())):
        for path in (root / folder).rglob("*.ipynb"):
            relative = path.relative_to(root)
            if CHECKPOINTS not in relative.parts and path.is_file():
                found.append(relative.as_posix())
    return sorted(found)


def listing_problems(book: Book, root: str | Path | None = None) -> list[str]:
    """Notebooks listed twice, and listed ones missing under ``root`` (default: ``book.root``)."""
    root = Path(book.root if root is None else root)
    listed = book.notebooks()
    problems = [f"{nb} is listed {count} times in {MANIFEST_NAME}; list each notebook once"
                for nb, count in sorted(Counter(listed).items()) if count > 1]
    problems += [f"{nb} is listed in {MANIFEST_NAME} (part {book.part_of(nb).title!r}) but does not exist"
                 for nb in dict.fromkeys(listed) if not (root / nb).is_file()]
    return problems


def check_book(book: Book, root: str | Path | None = None) -> list[str]:
    """Problems between ``book`` and the notebooks under ``root`` (default: ``book.root``), one line each:
    :func:`listing_problems`, then notebooks on disk that the manifest does not list."""
    root = Path(book.root if root is None else root)
    listed = set(book.notebooks())
    return listing_problems(book, root) + [
        f"{nb} is not listed in {MANIFEST_NAME}; add it to the chapters or labs of a [[part]]"
        for nb in notebooks_on_disk(root) if nb not in listed]


def check(root: str | Path = ".") -> list[str]:
    """Problems in the book at ``root`` (the folder holding book.toml), one line each; ``[]`` when none.

    Reports a notebook under chapters/ or labs/ missing from the manifest, one listed twice, one listed
    but absent, and a manifest that does not load (its error message).
    """
    try:
        book = load(Path(root) / MANIFEST_NAME)
    except CommlabError as exc:
        return [str(exc)]
    return check_book(book, root)
