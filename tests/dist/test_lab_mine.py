"""The learner's code kept in labs/mine (commlab.labs.mine, cells, code): what a "your turn" cell saves, what it
never overwrites, what is kept in the history, and the module the scripts and the grader import; then the same
from a real notebook kernel, where the decorator does the saving."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from commlab.errors import CommlabError
from commlab.labs import cells, mine
from commlab.labs.code import Code, choose
from commlab.labs.skeletons import SHIPPED, SHIPPED_BY_LAB

REPO = Path(__file__).resolve().parents[2]

MODELS = '''@reader_or_solution("ring_vs_tree")
def ring_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    S = np.asarray(nbytes, dtype=float)
    return 2 * (n_ranks - 1) * (alpha_s + S / (n_ranks * bw_Bps))


@reader_or_solution("ring_vs_tree")
def tree_time_s(nbytes, n_ranks, alpha_s, bw_Bps):
    S = np.asarray(nbytes, dtype=float)
    return 2 * math.ceil(math.log2(n_ranks)) * (alpha_s + S / bw_Bps)
'''
CROSSOVER = '''@reader_or_solution("ring_vs_tree")
def predict_crossover_nbytes(n_ranks, alpha_s, bw_Bps):
    import math

    depth = math.ceil(math.log2(n_ranks))
    if n_ranks - 1 - depth <= 0:
        return float("nan")
    return (n_ranks - 1 - depth) * alpha_s * bw_Bps / (depth - (n_ranks - 1) / n_ranks)
'''
SKELETON = '''@reader_or_solution("ring_vs_tree")
def predict_crossover_nbytes(n_ranks, alpha_s, bw_Bps):
    import math

    raise NotImplementedError("write predict_crossover_nbytes")
'''


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(mine.MINE_VAR, str(tmp_path / "mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)
    return tmp_path / "mine"


def _namespace():
    import math

    import numpy as np

    return {"np": np, "math": math, "WIDTHS": (1, 2)}


def save(source: str, **kwargs) -> mine.Saved:
    from commlab.labs.registry import task_order

    return mine.save_cell("ring_vs_tree", source, namespace=_namespace(), order=task_order("ring_vs_tree"),
                          shipped=SHIPPED, **kwargs)


def test_a_cell_becomes_a_section_of_a_module_that_imports_on_its_own(folder):
    saved = save(CROSSOVER)
    assert saved.written and saved.path == folder / "ring_vs_tree.py"
    assert saved.message == f"your predict_crossover_nbytes: saved in {mine.shown(saved.path)}"
    saved = save(MODELS)                              # a later cell of an earlier task goes first in the file
    text = saved.path.read_text()
    assert text.index("# ==== your turn: ring_time_s, tree_time_s") < text.index("# ==== your turn: predict_crossover")
    assert "import numpy as np  # imported in the notebook" in text and "import math  # imported in the notebook" in text
    module = mine.load_module(saved.path, "ring_vs_tree")
    assert float(module.ring_time_s(4e6, 4, 1e-5, 1e9)) == pytest.approx(0.00606)
    assert module.predict_crossover_nbytes(4, 1e-6, 1e9) == pytest.approx(800.0)
    assert not list(folder.glob(".*.tmp"))            # the atomic write left nothing behind


def test_running_a_cell_again_changes_nothing_and_an_edit_keeps_the_old_file(folder):
    first = save(CROSSOVER)
    again = save(CROSSOVER + "\n\n")                  # only trailing blank lines differ
    assert not again.written and "already holds this cell" in again.message
    assert not (folder / mine.HISTORY).exists()
    edited = save(CROSSOVER.replace("(depth - (n_ranks - 1) / n_ranks)", "(depth - 1 + 1 / n_ranks)"))
    assert edited.written and "depth - 1 + 1 / n_ranks" in first.path.read_text()
    kept = sorted((folder / mine.HISTORY / "ring_vs_tree").glob("*.py"))
    assert len(kept) == 1 and "(depth - (n_ranks - 1) / n_ranks)" in kept[0].read_text()
    assert len(mine.sections("ring_vs_tree")) == 1   # replaced, not added


def test_a_skeleton_never_overwrites_the_learners_code_and_says_how_to_restore_it(folder):
    save(CROSSOVER)
    before = (folder / "ring_vs_tree.py").read_text()
    kept = save(SKELETON)                             # a newer notebook, or a cell reset by mistake
    assert not kept.written and (folder / "ring_vs_tree.py").read_text() == before
    assert "still the skeleton, so it was not saved" in kept.message
    assert "restore('ring_vs_tree', 'predict_crossover_nbytes')" in kept.message
    assert mine.restore("ring_vs_tree", "predict_crossover_nbytes") == CROSSOVER
    with pytest.raises(CommlabError, match="has no saved 'faster_algorithm'; saved: predict_crossover_nbytes"):
        mine.restore("ring_vs_tree", "faster_algorithm")


def test_a_skeleton_with_nothing_saved_writes_nothing(folder):
    assert save(SKELETON) == mine.Saved(folder / "ring_vs_tree.py", False, "")
    assert not (folder / "ring_vs_tree.py").exists()


def test_a_shipped_template_counts_as_a_skeleton_by_its_fingerprint():
    template = '@reader_or_solution("topology")\ndef my_sizes():\n    return {"tp": None, "pp": None, "dp": None}\n'
    assert not cells.is_skeleton(template)                                    # no NotImplementedError in it
    assert cells.is_skeleton(template, frozenset({cells.fingerprint(template)}))


def test_a_hand_edited_file_keeps_its_own_text_and_unknown_sections(folder):
    folder.mkdir(parents=True)
    path = folder / "ring_vs_tree.py"
    path.write_text('"""my notes"""\nSPEED = 3\n\n\n# ==== your turn: my_helper | written by hand\ndef my_helper():\n'
                    "    return SPEED\n")
    save(CROSSOVER)
    head, sections = mine.parse(path.read_text())
    assert head.startswith('"""my notes"""\nSPEED = 3')
    assert [s.tasks for s in sections] == [("predict_crossover_nbytes",), ("my_helper",)]
    assert mine.load_module(path, "ring_vs_tree").my_helper() == 3


def test_names_from_the_notebook_that_are_not_modules_are_named_in_the_section(folder):
    cell = '@reader_or_solution("ring_vs_tree")\ndef faster_algorithm(nbytes, n_ranks, alpha_s, bw_Bps):\n    return WIDTHS\n'
    text = save(cell).path.read_text()
    assert "# this cell also uses names from the notebook, not saved here: WIDTHS" in text
    assert mine.restore("ring_vs_tree", "faster_algorithm") == cell


def test_code_chooses_the_learner_the_reference_or_what_is_forced(folder, monkeypatch):
    absent = choose("ring_vs_tree")
    assert not absent.mine and "there is no" in absent.notice() and "ring_vs_tree.py yet" in absent.notice()
    save(CROSSOVER)
    mine_code = choose("ring_vs_tree")
    assert mine_code.mine and mine_code.notice().startswith("ring_vs_tree: running your code from ")
    assert mine_code.function("predict_crossover_nbytes")(4, 1e-6, 1e9) == pytest.approx(800.0)
    with pytest.raises(NotImplementedError, match="faster_algorithm is missing from .*ring_vs_tree.py"):
        mine_code.function("faster_algorithm")(1.0, 4, 1e-6, 1e9)
    assert choose("ring_vs_tree", reference=True).notice().endswith(": --reference")
    monkeypatch.setenv("COMMLAB_LAB_SOLUTIONS", "1")
    assert choose("ring_vs_tree").notice().endswith(": COMMLAB_LAB_SOLUTIONS=1")


def test_a_module_that_does_not_import_is_one_sentence(folder):
    folder.mkdir(parents=True)
    (folder / "ring_vs_tree.py").write_text("def ring_time_s(:\n")
    with pytest.raises(mine.LearnerCodeError, match=r"ring_vs_tree.py does not import: SyntaxError: .*line 1"):
        Code("ring_vs_tree", folder / "ring_vs_tree.py").function("ring_time_s")


def test_the_folder_is_found_from_elsewhere_and_its_absence_is_said(tmp_path, monkeypatch):
    monkeypatch.delenv(mine.MINE_VAR, raising=False)
    monkeypatch.chdir(tmp_path)                       # a cluster job's working folder, outside the book
    assert mine.mine_dir() == REPO / "labs" / "mine"  # found above the script, or the (editable) package

    def nowhere(start=None):
        raise CommlabError("no book.toml")

    monkeypatch.setattr("commlab.book.find_root", nowhere)
    with pytest.raises(CommlabError, match="no book.toml above .* set COMMLAB_LABS_MINE"):
        mine.mine_dir()
    assert choose("ring_vs_tree").notice().startswith("ring_vs_tree: running the reference solution "
                                                      "(commlab.labs.solutions.ring_vs_tree): no book.toml above")


def test_every_your_turn_cell_the_book_ships_is_a_known_skeleton():
    missing = []
    for path in sorted((REPO / "labs").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and cells.decorated_tasks(source):
                if cells.fingerprint(source) not in SHIPPED_BY_LAB.get(path.stem, ()):
                    missing.append(f"{path.stem} {cell['id']}: {cells.fingerprint(source)}")
    assert not missing, "add these fingerprints to commlab/labs/skeletons.py (keep the old ones): " + "; ".join(missing)


def test_a_notebook_kernel_saves_the_cell_and_a_skeleton_run_later_keeps_it(tmp_path, monkeypatch):
    """The decorator in a real IPython kernel: the cell is saved, printed as saved; then the skeleton version of
    the same cell runs (a newer notebook) and the saved code stays, with the way back printed."""
    import nbformat
    from nbclient import NotebookClient

    folder = tmp_path / "mine"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import math\nimport numpy as np\nfrom commlab.labs import reader_or_solution"),
                nbformat.v4.new_code_cell(CROSSOVER), nbformat.v4.new_code_cell(SKELETON),
                nbformat.v4.new_code_cell("from commlab.labs import restore\nprint(len(restore('ring_vs_tree', "
                                          "'predict_crossover_nbytes')))")]
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)
    monkeypatch.setenv(mine.MINE_VAR, str(folder))    # the kernel inherits this process's environment
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    out = ["".join(o.get("text", "") for o in cell.get("outputs", [])) for cell in nb.cells]
    assert "your predict_crossover_nbytes: saved in" in out[1]
    assert "still the skeleton, so it was not saved" in out[2]
    assert out[3].startswith("this cell now holds your predict_crossover_nbytes as saved ")
    assert out[3].split()[-1] == str(len(CROSSOVER))
    text = (folder / "ring_vs_tree.py").read_text()
    assert "(depth - (n_ranks - 1) / n_ranks)" in text and "write predict_crossover_nbytes" not in text
