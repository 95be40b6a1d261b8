"""Checks on the committed notebooks themselves (nbval runs them: ``pytest --nbval-lax chapters labs``).

Every notebook under chapters/ and labs/ is committed clean: valid nbformat 4, no outputs, no execution
counts, no saved widget state, and a ``python3`` kernelspec, so that a reader's first run is the first
run and a diff shows only what an author wrote. Clean a notebook with ``nbstripout`` (or JupyterLab's
Edit > Clear Outputs of All Cells, then save).
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("chapters", "labs")


def committed_notebooks(root: Path = REPO) -> list[Path]:
    """Every notebook under chapters/ and labs/, without JupyterLab's checkpoint copies."""
    found = [p for folder in FOLDERS for p in sorted((root / folder).rglob("*.ipynb"))]
    return [p for p in found if ".ipynb_checkpoints" not in p.parts]


def format_problems(path: Path) -> list[str]:
    """Not nbformat 4, not valid, or not on the python3 kernel."""
    try:
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    except Exception as exc:  # any unreadable file is a problem to report, not a crash
        return [f"cannot be read as a notebook ({exc.__class__.__name__}: {exc})"]
    if nb.get("nbformat") != 4:
        return [f"is nbformat {nb.get('nbformat')}, expected 4"]
    problems = []
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        problems.append(f"is not valid nbformat 4: {str(exc).splitlines()[0]}")
    kernel = nb.metadata.get("kernelspec", {}).get("name")
    if kernel != "python3":
        problems.append(f"has kernelspec {kernel!r}, expected 'python3'")
    return problems


def output_problems(path: Path) -> list[str]:
    """Cells with outputs or execution counts, and saved widget state (an unreadable file is left to
    :func:`format_problems`)."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:
        return []
    with_outputs = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.get("outputs")]
    with_counts = [i for i, c in enumerate(nb.cells)
                   if c.cell_type == "code" and c.get("execution_count") is not None]
    problems = [f"cells {with_outputs} carry outputs"] if with_outputs else []
    problems += [f"cells {with_counts} carry execution counts"] if with_counts else []
    problems += ["metadata carries saved widget state ('widgets')"] if "widgets" in nb.metadata else []
    return problems


def report(checker) -> dict[str, list[str]]:
    notebooks = committed_notebooks()
    if not notebooks:
        pytest.skip("no notebooks under chapters/ or labs/ yet")
    problems = {str(p.relative_to(REPO)): checker(p) for p in notebooks}
    return {name: found for name, found in problems.items() if found}


def test_notebooks_are_valid_nbformat4_on_the_python3_kernel():
    bad = report(format_problems)
    assert not bad, "notebooks with format problems:\n" + "\n".join(f"{k}: {'; '.join(v)}" for k, v in bad.items())


def test_notebooks_are_committed_without_outputs():
    bad = report(output_problems)
    assert not bad, ("notebooks committed with outputs (run nbstripout on them):\n"
                     + "\n".join(f"{k}: {'; '.join(v)}" for k, v in bad.items()))


def test_the_checks_catch_a_dirty_notebook(tmp_path):
    result = new_output("execute_result", {"text/plain": "2"}, execution_count=3)
    nb = new_notebook(cells=[new_code_cell("1 + 1", execution_count=3, outputs=[result])])
    nb.metadata["kernelspec"] = {"name": "python2", "display_name": "Python 2", "language": "python"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    path = tmp_path / "labs" / "dirty.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    (tmp_path / "labs" / ".ipynb_checkpoints").mkdir()
    nbformat.write(nb, tmp_path / "labs" / ".ipynb_checkpoints" / "dirty-checkpoint.ipynb")
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "broken.ipynb").write_text("{not json")
    assert committed_notebooks(tmp_path) == [tmp_path / "chapters/broken.ipynb", path]
    assert output_problems(path) == ["cells [0] carry outputs", "cells [0] carry execution counts",
                                     "metadata carries saved widget state ('widgets')"]
    assert format_problems(path) == ["has kernelspec 'python2', expected 'python3'"]
    assert "cannot be read" in format_problems(tmp_path / "chapters" / "broken.ipynb")[0]
