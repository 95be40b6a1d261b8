"""The book's manifest, ``book.toml``: its metadata and the ordered parts with their chapters and labs.

The manifest is the one place that says what the book contains and in which order; chapter 00's map of the
book, the static HTML edition (``commlab book build``) and the repository check (:func:`commlab.book.check`)
all read it. A path is relative to the folder that holds ``book.toml``: chapters live under ``chapters/``,
labs under ``labs/``.

>>> book = loads('''
... [book]
... title = "commlab"
... authors = ["A. Author"]
... [[part]]
... title = "Getting started"
... chapters = ["chapters/00_welcome.ipynb"]
... labs = ["labs/p2p.ipynb"]
... ''')
>>> book.title, [part.title for part in book.parts]
('commlab', ['Getting started'])
>>> book.notebooks()
('chapters/00_welcome.ipynb', 'labs/p2p.ipynb')
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from commlab.book.toc import toc_html, toc_markdown
from commlab.errors import CommlabError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MANIFEST_NAME = "book.toml"
BOOK_KEYS = ("title", "authors", "language")
PART_KEYS = ("title", "chapters", "labs")
EXECUTE_KEYS = ("env",)
#: The folder each kind of entry must live in.
FOLDERS = {"chapters": "chapters", "labs": "labs"}


def _check_text(what: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CommlabError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _check_entry(kind: str, part_title: str, value: object) -> str:
    """Return ``value`` if it is a relative notebook path under the folder of ``kind``, else raise."""
    where = f"part {part_title!r}: {kind} entry {value!r}"
    if not isinstance(value, str) or not value.strip():
        raise CommlabError(f"{where} must be a non-empty path string such as '{kind}/name.ipynb'")
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or "\\" in value:
        raise CommlabError(f"{where} must be a relative path with '/' separators and no '..'")
    if path.parts[0] != FOLDERS[kind] or len(path.parts) < 2:
        raise CommlabError(f"{where} is not under {FOLDERS[kind]}/; {kind} must be listed as "
                           f"'{FOLDERS[kind]}/<name>.ipynb'")
    if path.suffix != ".ipynb":
        raise CommlabError(f"{where} is not a notebook; expected a path ending in .ipynb")
    return str(path)


@dataclass(frozen=True)
class Part:
    """One part of the book: a title and its chapters and labs, in reading order."""

    title: str
    """Shown in the table of contents, e.g. "Talking between GPUs"."""
    chapters: tuple[str, ...] = ()
    """Notebook paths under ``chapters/``, relative to the book's root."""
    labs: tuple[str, ...] = ()
    """Notebook paths under ``labs/``, read after the part's chapters."""

    def __post_init__(self) -> None:
        _check_text("every [[part]] needs a title; the part's title", self.title)
        for kind in ("chapters", "labs"):
            entries = getattr(self, kind)
            if isinstance(entries, str) or not isinstance(entries, (list, tuple)):
                raise CommlabError(f"part {self.title!r}: {kind} must be a list of paths, got {entries!r}")
            checked = tuple(_check_entry(kind, self.title, entry) for entry in entries)
            object.__setattr__(self, kind, checked)

    def notebooks(self) -> tuple[str, ...]:
        """The part's chapters, then its labs."""
        return self.chapters + self.labs


@dataclass(frozen=True)
class Book:
    """The book as ``book.toml`` describes it."""

    title: str
    """The book's title (index page, every page's header)."""
    parts: tuple[Part, ...]
    """The parts in reading order."""
    authors: tuple[str, ...] = ()
    """Names as they appear on the index page."""
    language: str = "en"
    """The pages' ``lang`` attribute, e.g. "en"."""
    root: Path = field(default_factory=Path)
    """The folder that holds ``book.toml``; notebook paths are relative to it."""
    execute_env: tuple[tuple[str, str], ...] = ()
    """``[execute] env``: environment variables, as (name, value) pairs, that the static edition's build gives
    the kernel that runs the notebooks (the book's manifest says how its notebooks are run; the book layer
    passes them on without knowing what they mean)."""

    def __post_init__(self) -> None:
        _check_text("[book] title", self.title)
        _check_text("[book] language", self.language)
        if isinstance(self.authors, str) or not all(isinstance(a, str) and a.strip() for a in self.authors):
            raise CommlabError(f"[book] authors must be a list of names, got {self.authors!r}")
        object.__setattr__(self, "authors", tuple(self.authors))
        if not self.parts:
            raise CommlabError("book.toml lists no [[part]]; add at least one part with a title and chapters")
        object.__setattr__(self, "parts", tuple(self.parts))
        object.__setattr__(self, "execute_env", tuple((str(k), str(v)) for k, v in self.execute_env))

    def notebooks(self) -> tuple[str, ...]:
        """Every listed notebook in reading order: part by part, chapters before labs."""
        return tuple(nb for part in self.parts for nb in part.notebooks())

    def part_of(self, notebook: str) -> Part:
        """The first part that lists ``notebook``."""
        for part in self.parts:
            if notebook in part.notebooks():
                return part
        raise CommlabError(f"{notebook!r} is not listed in book.toml; listed: {', '.join(self.notebooks())}")

    def toc_markdown(self, relative_to: str = "chapters") -> str:
        """The table of contents as Markdown links, relative to the folder ``relative_to`` (see ``toc``)."""
        return toc_markdown(self, relative_to=relative_to)

    def toc_html(self, relative_to: str = "chapters", suffix: str = ".ipynb") -> str:
        """The table of contents as an HTML ``<nav>`` (see ``toc``)."""
        return toc_html(self, relative_to=relative_to, suffix=suffix)


def _check_keys(where: str, table: dict, accepted: tuple[str, ...]) -> None:
    unknown = sorted(set(table) - set(accepted))
    if unknown:
        raise CommlabError(f"{where} has unknown key(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}")


def _part(index: int, table: object) -> Part:
    if not isinstance(table, dict):
        raise CommlabError(f"[[part]] number {index + 1} must be a table, got {table!r}")
    if "title" not in table:
        raise CommlabError(f"[[part]] number {index + 1} has no title; every part needs title = \"...\"")
    _check_keys(f"[[part]] {table['title']!r}", table, PART_KEYS)
    return Part(title=table["title"], chapters=table.get("chapters", ()), labs=table.get("labs", ()))


def from_dict(data: dict, root: Path = Path(".")) -> Book:
    """Build a :class:`Book` from the parsed TOML ``data`` (a dict); ``root`` is the book's folder."""
    meta = data.get("book")
    if not isinstance(meta, dict):
        raise CommlabError("book.toml has no [book] table; it needs [book] with at least title = \"...\"")
    _check_keys("book.toml", data, ("book", "part", "execute"))
    _check_keys("[book]", meta, BOOK_KEYS)
    if "title" not in meta:
        raise CommlabError("[book] has no title; add title = \"...\" under [book]")
    parts = data.get("part", [])
    if not isinstance(parts, list):
        raise CommlabError(f"'part' must be an array of tables written [[part]], got {parts!r}")
    return Book(title=meta["title"], authors=meta.get("authors", ()), language=meta.get("language", "en"),
                parts=tuple(_part(i, table) for i, table in enumerate(parts)), root=Path(root),
                execute_env=_execute_env(data.get("execute", {})))


def _execute_env(table: object) -> tuple[tuple[str, str], ...]:
    """``[execute] env = { NAME = "value" }`` as (name, value) pairs; names and values must be strings."""
    if not isinstance(table, dict):
        raise CommlabError(f"[execute] must be a table, got {table!r}")
    _check_keys("[execute]", table, EXECUTE_KEYS)
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and k.strip() and isinstance(v, str)
                                            for k, v in env.items()):
        raise CommlabError(f"[execute] env must be a table of NAME = \"value\" strings, got {env!r}")
    return tuple(sorted(env.items()))


def loads(text: str, root: Path = Path(".")) -> Book:
    """Parse the TOML ``text`` of a manifest."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CommlabError(f"book.toml is not valid TOML: {exc}") from None
    return from_dict(data, root=root)


def find_root(start: str | Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the current directory) that holds ``book.toml``.

    A notebook runs with its own folder as the current directory, so chapter 00 finds the book from
    ``chapters/`` this way.
    """
    here = Path.cwd() if start is None else Path(start)
    here = here.resolve()
    for folder in (here, *here.parents):
        if (folder / MANIFEST_NAME).is_file():
            return folder
    raise CommlabError(f"no {MANIFEST_NAME} in {here} or any folder above it; run from inside the commlab "
                       f"repository or pass the manifest's path")


def load(path: str | Path = MANIFEST_NAME) -> Book:
    """Read and validate the manifest at ``path``.

    A bare ``book.toml`` that is not in the current directory is looked for in the folders above it
    (:func:`find_root`), so ``load()`` works from a notebook's folder.
    """
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    if not path.exists() and str(path) == MANIFEST_NAME:
        path = find_root() / MANIFEST_NAME
    if not path.is_file():
        raise CommlabError(f"book manifest {str(path)!r} does not exist; expected a {MANIFEST_NAME} file")
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise CommlabError(f"cannot read book manifest {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CommlabError(f"book manifest {str(path)!r} is not UTF-8 text (byte {exc.start} is "
                           f"0x{exc.object[exc.start]:02x}); expected a {MANIFEST_NAME} file") from None
    return loads(text, root=path.resolve().parent)
