"""git's clean filter for the notebooks (scripts/nbclean.py, registered by ``make git-filter``): a notebook
JupyterLab saved (its kernel's display name, the whole language_info, outputs, execution counts, widget state,
per-cell view state) reads to git as the committed notebook, and every committed notebook passes through the
filter unchanged, so registering it changes nothing in git."""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "nbclean.py"
NOTEBOOKS = sorted(p for folder in ("chapters", "labs") for p in (REPO / folder).glob("*.ipynb"))
#: What JupyterLab 4 with ipykernel writes into a notebook it saves.
LAB_KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LAB_LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                     "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                     "pygments_lexer": "ipython3", "version": "3.11.7"}


def filtered(text: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT)], input=text.encode(), capture_output=True, timeout=60,
                          check=True)
    return done.stdout.decode()


def as_jupyterlab_saves_it(text: str) -> str:
    """The notebook after a reader opened it in JupyterLab, ran every cell, and autosave wrote it."""
    nb = json.loads(text)
    nb["metadata"]["kernelspec"] = dict(LAB_KERNELSPEC)
    nb["metadata"]["language_info"] = copy.deepcopy(LAB_LANGUAGE_INFO)
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    for count, cell in enumerate(nb["cells"], 1):
        if cell["cell_type"] == "code":
            cell["execution_count"] = count
            cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["ran\n"]}]
            cell["metadata"]["scrolled"] = True
            cell["metadata"]["execution"] = {"iopub.status.busy": "2026-12-01T10:00:00.000Z"}
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"   # JupyterLab's key order, not sorted


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks yet")
def test_every_committed_notebook_passes_through_unchanged():
    changed = [p.relative_to(REPO).as_posix() for p in NOTEBOOKS if filtered(p.read_text()) != p.read_text()]
    assert changed == [], f"the filter would rewrite these committed notebooks: {changed}"


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks yet")
def test_what_jupyterlab_saves_reads_as_the_committed_notebook():
    for path in NOTEBOOKS[:4]:
        committed = path.read_text()
        saved = as_jupyterlab_saves_it(committed)
        assert saved != committed
        assert filtered(saved) == committed, path.name
        assert filtered(filtered(saved)) == committed   # idempotent


def test_what_is_not_a_notebook_passes_through():
    for text in ("not json at all", '{"a": 1}', "[1, 2]", '{"nbformat": 3, "worksheets": []}'):
        assert filtered(text) == text
    kept = {"cells": [{"cell_type": "markdown", "id": "x1", "metadata": {"tags": ["keep"]}, "source": ["# T"]}],
            "metadata": {"kernelspec": {"display_name": "R", "language": "R", "name": "ir"}},
            "nbformat": 4, "nbformat_minor": 5}
    assert json.loads(filtered(json.dumps(kept))) == kept   # another kernel and tags are an author's choice


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("make") is None, reason="needs git and make")
@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks yet")
def test_make_git_filter_keeps_a_notebook_opened_in_jupyterlab_out_of_git_status(tmp_path):
    repo = tmp_path / "clone"
    (repo / "scripts").mkdir(parents=True)
    (repo / "chapters").mkdir()
    shutil.copy(SCRIPT, repo / "scripts" / "nbclean.py")
    (repo / "src/commlab/book").mkdir(parents=True)
    shutil.copy(REPO / "src/commlab/book/hygiene.py", repo / "src/commlab/book/hygiene.py")   # what it loads
    shutil.copy(REPO / ".gitattributes", repo / ".gitattributes")
    notebook = repo / "chapters" / NOTEBOOKS[0].name
    shutil.copy(NOTEBOOKS[0], notebook)
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null", "HOME": str(tmp_path),
           "PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@localhost"}

    def run(*argv: str) -> str:
        return subprocess.run(list(argv), cwd=repo, env=env, capture_output=True, text=True, timeout=60,
                              check=True).stdout

    run("git", "init", "-q")
    run("make", "-s", "-f", str(REPO / "Makefile"), "git-filter", f"PYTHON={sys.executable}")
    assert "scripts/nbclean.py" in run("git", "config", "filter.commlab-notebook.clean")
    run("git", "config", "filter.commlab-notebook.required", "true")   # a failing filter fails the test
    run("git", "add", "-A")
    run("git", "commit", "-q", "-m", "book")
    notebook.write_text(as_jupyterlab_saves_it(notebook.read_text()))
    # git reads the notebook through the filter: nothing to diff, nothing to commit. (git status may still list
    # it until the next git add: git takes a changed file size for a change without reading the file, as
    # with nbstripout.)
    assert run("git", "diff", "--stat") == "", "git sees a change in a notebook JupyterLab only ran and saved"
    run("git", "add", "-A")
    assert run("git", "status", "--porcelain") == "" and run("git", "diff", "--cached", "--stat") == ""
    assert "ran" in notebook.read_text()                        # the reader's outputs stay on disk
    # an author's real edit is still a change
    nb = json.loads(notebook.read_text())
    nb["cells"][0]["source"] = ["# A new title\n"]
    notebook.write_text(json.dumps(nb, indent=1))
    assert run("git", "status", "--porcelain").strip() == f"M chapters/{notebook.name}"
