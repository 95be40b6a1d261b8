"""Read a listed notebook for the build, refusing what is not a notebook with one line that names the file.

A file can be valid JSON and still no notebook (``{"hello": 1}``, a truncated nbformat 3 file, a cell of an
unknown type); nbformat's own messages for these speak of converting "version 1 to version 2" or print a
JSON schema. :func:`read_notebook` checks the shape first and says what is wrong in the reader's terms; a
valid nbformat 3 notebook is upgraded to 4, as JupyterLab does.
"""
from __future__ import annotations

import json
from pathlib import Path

from commlab.errors import CommlabError

CELL_TYPES = ("code", "markdown", "raw")


def _shape_problem(data: object) -> str | None:
    """What makes the parsed JSON ``data`` no notebook (nbformat 3 or 4), or None."""
    if not isinstance(data, dict):
        return f"its JSON is a {type(data).__name__}, not an object with 'nbformat' and 'cells'"
    version = data.get("nbformat")
    if not isinstance(version, int) or isinstance(version, bool):
        return "it has no 'nbformat' version number"
    if version not in (3, 4):
        return f"it is nbformat {version}; commlab reads nbformat 4 (and upgrades 3)"
    if version == 3:
        return None if isinstance(data.get("worksheets"), list) else "it is nbformat 3 but has no 'worksheets' list"
    cells = data.get("cells")
    if not isinstance(cells, list):
        return "it has no 'cells' list"
    for number, cell in enumerate(cells, 1):
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        if kind not in CELL_TYPES:
            return f"cell {number} has cell_type {kind!r}; expected one of {', '.join(CELL_TYPES)}"
    return None


def read_notebook(root: Path, notebook: str):
    """The notebook ``notebook`` (posix, relative to ``root``) as an nbformat 4 NotebookNode.

    CommlabError naming the file when it cannot be read, is not UTF-8 JSON, or is not a valid notebook.
    """
    import nbformat

    path = Path(root) / notebook
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise CommlabError(f"cannot read {notebook}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CommlabError(f"{notebook} is not a notebook: it is not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CommlabError(f"{notebook} is not a notebook: it is not JSON ({exc})") from None
    problem = _shape_problem(data)
    if problem:
        raise CommlabError(f"{notebook} is not a notebook: {problem}")
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - nbformat raises jsonschema's, KeyError, TypeError...: all mean invalid
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise CommlabError(f"{notebook} is not a valid notebook: {first}") from None
    return nb
