"""The learner's own code, kept as a plain module per lab: ``labs/mine/<lab>.py``.

Every "your turn" cell of a lab defines functions decorated with ``@reader_or_solution("<lab>")``. When such a
cell runs in a notebook, the decorator hands the whole cell to :func:`save_from_function`, which keeps it as
one *section* of ``labs/mine/<lab>.py`` (one file per lab, one section per cell, in the lab's order). The lab
scripts and ``commlab labs check`` import that file (:func:`choose`), so the code a learner wrote in the
notebook is what runs under torchrun and what an instructor grades.

What keeps the learner's code safe:

* a cell that is still the skeleton (:func:`commlab.labs.cells.is_skeleton`) is never saved: running a newer
  notebook, or a cell reset by mistake, leaves the saved code alone and says how to bring it back
  (:func:`restore`);
* before the file changes, its previous text is copied to ``labs/mine/.history/<lab>/<UTC time>.py``, so an
  edit made by hand in the file, or an earlier version of a cell, is never lost;
* the file is written atomically (a temporary file, then ``os.replace``) under a lock (``filelock``), so two
  kernels saving at once, or a crash in the middle, never leave half a file.

Where: ``$COMMLAB_LABS_MINE`` when set (tests and CI point it at a scratch folder), else ``labs/mine`` of the
book (the folder with ``book.toml`` above the current directory).
"""
from __future__ import annotations

import datetime
import importlib
import importlib.util
import linecache
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from commlab.errors import CommlabError
from commlab.labs import cells

MINE_VAR = "COMMLAB_LABS_MINE"
HISTORY = ".history"
MARKER = "# ==== your turn: "
FROM_NOTEBOOK = "  # imported in the notebook"
_OTHERS = "# this cell also uses names from the notebook, not saved here: "
_MARKER_LINE = re.compile(r"^# ==== your turn: (?P<tasks>[\w, ]+?)(?: \| (?P<note>.*))?$")


def mine_dir(folder: str | Path | None = None) -> Path:
    """The folder of the learner's modules: ``folder``, else ``$COMMLAB_LABS_MINE``, else labs/mine of the book
    (the folder with ``book.toml``) above the current directory, above the running script (a lab script started
    from elsewhere, as a cluster job is), or above the installed package (an editable install)."""
    if folder is not None:
        return Path(folder)
    if os.environ.get(MINE_VAR):
        return Path(os.environ[MINE_VAR])
    from commlab.book import find_root

    script = Path(sys.argv[0]).resolve().parent if sys.argv and sys.argv[0] else None
    for start in (None, script, Path(__file__).resolve().parent):
        try:
            return find_root(start) / "labs" / "mine"
        except CommlabError:
            continue
    raise CommlabError(f"no book.toml above {Path.cwd()}, so no labs/mine folder: run from inside the commlab "
                       f"repository, or set {MINE_VAR} to the folder of your lab modules")


def module_path(lab: str, folder: str | Path | None = None) -> Path:
    """``<mine_dir>/<lab>.py``."""
    return mine_dir(folder) / f"{lab}.py"


def shown(path: Path) -> str:
    """``path`` relative to the current directory when it lies below it, else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def header(lab: str) -> str:
    """The top of a new ``labs/mine/<lab>.py``: what the file is, and a stand-in for the notebook's decorator."""
    return f'''"""Your code for the lab labs/{lab}.ipynb: its cells marked "your turn", saved by the notebook each time
one of them runs. labs/scripts/{lab}.py and `commlab labs check {lab}` import this file.

Edit it here or in the notebook. Running a cell again replaces its section below; every earlier state of
this file is kept in labs/mine/{HISTORY}/{lab}/. labs/mine/ is not committed (.gitignore).
"""


def reader_or_solution(lab):
    """The notebook's decorator; in this file your functions are used as you wrote them."""
    return lambda fn: fn
'''


@dataclass(frozen=True)
class Section:
    """One saved cell: the tasks it defines, its marker's note (when it was saved) and its text."""

    tasks: tuple[str, ...]
    note: str
    body: str

    def render(self) -> str:
        return f"{MARKER}{', '.join(self.tasks)} | {self.note}\n{self.body.rstrip()}\n"

    def cell_source(self) -> str:
        """The body without the import lines the save added for the notebook's modules."""
        own = [line for line in self.body.splitlines()
               if not line.endswith(FROM_NOTEBOOK) and not line.startswith(_OTHERS)]
        return "\n".join(own).strip() + "\n"


def parse(text: str) -> tuple[str, list[Section]]:
    """(the text before the first section, the sections) of a module written by :func:`save_cell`."""
    head: list[str] = []
    sections: list[tuple[re.Match, list[str]]] = []
    for line in text.splitlines():
        found = _MARKER_LINE.match(line)
        if found:
            sections.append((found, []))
        elif sections:
            sections[-1][1].append(line)
        else:
            head.append(line)
    parsed = [Section(tuple(t.strip() for t in m["tasks"].split(",")), m["note"] or "", "\n".join(body).strip("\n"))
              for m, body in sections]
    return "\n".join(head).rstrip() + "\n", parsed


def render(head: str, sections: list[Section]) -> str:
    return "\n\n".join([head.rstrip() + "\n"] + [s.render() for s in sections])


def _ordered(sections: list[Section], order: tuple[str, ...]) -> list[Section]:
    def rank(section: Section) -> int:
        found = [order.index(t) for t in section.tasks if t in order]
        return min(found) if found else len(order)

    return sorted(sections, key=rank)  # stable: sections of unknown tasks keep their place at the end


def _body(source: str, namespace: dict | None) -> str:
    imports, others = cells.module_imports(source, namespace or {})
    lines = [line + FROM_NOTEBOOK for line in imports]
    if others:
        lines.append(_OTHERS + ", ".join(others))
    return "\n".join(lines + [cells.normalize(source).rstrip()])


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _atomic_write(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _keep_history(path: Path, lab: str, text: str, when: datetime.datetime) -> Path:
    folder = path.parent / HISTORY / lab
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / f"{when.strftime('%Y%m%dT%H%M%S.%fZ')}.py"
    _atomic_write(kept, text)
    return kept


@dataclass(frozen=True)
class Saved:
    """What :func:`save_cell` did: ``written`` when the file changed; ``message`` says it in words ('' if nothing)."""

    path: Path
    written: bool
    message: str


def _lock(path: Path):
    from filelock import FileLock  # installed with torch

    return FileLock(str(path.with_name(f".{path.name}.lock")), timeout=30)


def save_cell(lab: str, source: str, *, namespace: dict | None = None, folder: str | Path | None = None,
              order: tuple[str, ...] = (), shipped: frozenset[str] = frozenset(), where: str = "") -> Saved:
    """Keep the cell ``source`` as the section of its tasks in ``labs/mine/<lab>.py``; see the module docstring.

    ``namespace``: the notebook's globals (for the import lines); ``order``: the lab's tasks in reading order;
    ``shipped``: fingerprints of the book's skeleton cells; ``where``: the notebook, for the section's note.
    """
    tasks = cells.decorated_tasks(source)
    if not tasks:
        raise CommlabError(f"this cell defines no function decorated with @reader_or_solution({lab!r})")
    path = module_path(lab, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _lock(path):
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        head, sections = parse(old) if old else (header(lab), [])
        overlapping = [s for s in sections if set(s.tasks) & set(tasks)]
        if cells.is_skeleton(source, shipped):
            return Saved(path, False, _kept_message(lab, path, overlapping, tasks))
        body = _body(source, namespace)
        if len(overlapping) == 1 and overlapping[0].tasks == tasks and overlapping[0].body.strip() == body.strip():
            return Saved(path, False, f"your {', '.join(tasks)}: {shown(path)} already holds this cell")
        when = _now()
        note = f"saved {when.strftime('%Y-%m-%d %H:%M:%S')} UTC" + (f" from {where}" if where else "")
        kept = [s for s in sections if s not in overlapping] + [Section(tasks, note, body)]
        if old:
            _keep_history(path, lab, old, when)
        _atomic_write(path, render(head, _ordered(kept, order)))
    return Saved(path, True, f"your {', '.join(tasks)}: saved in {shown(path)}")


def _kept_message(lab: str, path: Path, kept: list[Section], tasks: tuple[str, ...]) -> str:
    written = [s for s in kept if not cells.is_skeleton(s.cell_source())]
    if not written:
        return ""
    names = ", ".join(t for s in written for t in s.tasks)
    first = written[0].tasks[0]
    return (f"this cell is still the skeleton, so it was not saved: {shown(path)} keeps your {names} "
            f"({written[0].note}). To put your code back into this cell, run in it: "
            f"from commlab.labs import restore; restore({lab!r}, {first!r})")


def sections(lab: str, folder: str | Path | None = None) -> list[Section]:
    """The saved sections of ``labs/mine/<lab>.py`` ([] when there is no such file)."""
    path = module_path(lab, folder)
    return parse(path.read_text(encoding="utf-8"))[1] if path.exists() else []


def _ipython():
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    return get_ipython()


def restore(lab: str, task: str, folder: str | Path | None = None) -> str:
    """The saved cell that defines ``task``; in a notebook it also replaces the current cell with it."""
    found = [s for s in sections(lab, folder) if task in s.tasks]
    if not found:
        raise CommlabError(f"{shown(module_path(lab, folder))} has no saved {task!r}; saved: "
                           f"{', '.join(t for s in sections(lab, folder) for t in s.tasks) or 'nothing yet'}")
    source = found[0].cell_source()
    shell = _ipython()
    if shell is not None:
        shell.set_next_input(source, replace=True)
        print(f"this cell now holds your {task} as saved {found[0].note.removeprefix('saved ')}: run it again")
    return source


def save_from_function(lab: str, fn) -> Saved | None:
    """Called by ``@reader_or_solution(lab)``: in a notebook cell, keep the cell (once, for its first
    decorated function) and print what happened; elsewhere (a module, a script) do nothing and return None."""
    filename = fn.__code__.co_filename
    if _ipython() is None or os.path.exists(filename):
        return None
    source = "".join(linecache.getlines(filename))
    tasks = cells.decorated_tasks(source)
    if not tasks or fn.__name__ != tasks[0]:
        return None
    from commlab.labs.registry import task_order
    from commlab.labs.skeletons import SHIPPED

    saved = save_cell(lab, source, namespace=fn.__globals__, order=task_order(lab), shipped=SHIPPED,
                      where=f"labs/{lab}.ipynb")
    if saved.message:
        print(saved.message)
    return saved


class LearnerCodeError(CommlabError):
    """The learner's module cannot be imported (a syntax error, a failing import, ...)."""


def _as_written(lab: str):
    """``reader_or_solution`` inside a learner's module: the function as written."""
    return lambda fn: fn


def load_module(path: Path, lab: str):
    """Import the module at ``path`` afresh (a new module object each call), as ``commlab_mine_<lab>``."""
    name = f"commlab_mine_{lab}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LearnerCodeError(f"{shown(path)} does not import: it is not a Python source file")
    module = importlib.util.module_from_spec(spec)
    vars(module)["reader_or_solution"] = _as_written   # the notebook's decorator, whatever the file's header says
    sys.modules[name] = module          # dataclasses and pickling look their module up here
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the learner's code, reported in one line
        sys.modules.pop(name, None)
        raise LearnerCodeError(f"{shown(path)} does not import: {type(exc).__name__}: {exc}") from None
    try:
        import cloudpickle

        cloudpickle.register_pickle_by_value(module)  # spawned ranks cannot import it by name
    except (ImportError, ValueError):
        pass
    return module
