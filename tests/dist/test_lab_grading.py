"""``commlab labs check``: every lab's tasks graded on a learner's modules (the same checks as the notebooks),
a class folder graded learner by learner, the table, --json and --junit, and the learner code that does not
import, hangs at import, or is missing. The honest submissions are the references' text as a student would hand
it in (tests/dist/grading_helpers.py): importing the reference itself fails in the grader's sandbox."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import grading_helpers
import pytest

from commlab.labs import registry

REPO = Path(__file__).resolve().parents[2]


def _wrong():
    """The deliberately wrong functions of tests/dist/test_lab_learner_code.py (one file, one list)."""
    return grading_helpers.wrong_functions()


def write(folder: Path, lab: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{lab}.py").write_text(text)


def right(lab: str) -> str:
    return grading_helpers.honest_source(lab)


def commlab(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    return subprocess.run([sys.executable, "-m", "commlab", "labs", *args], capture_output=True, text=True,
                          timeout=timeout_s, env=env, cwd=REPO)


#: the labs labs check grades in its sandbox (a lab with Lab.not_graded is reported as skipped, with its reason)
GRADED = tuple(lab for lab in registry.LABS if not lab.not_graded)


def test_every_lab_is_graded_in_the_sandbox():
    """No lab is left to its notebook: ddp_zero, whose checks hand a live model across, runs through its harness
    (tests/dist/test_lab_grading_ddp_zero.py)."""
    assert [lab.name for lab in registry.LABS if lab.not_graded] == []
    assert "ddp_zero" in {lab.name for lab in GRADED}


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """One class graded once for the tests below: ada hands in every lab right, bob every lab with its mistake,
    dee two labs right (the others not handed in); the table, JUnit and the gradebook written."""
    root = tmp_path_factory.mktemp("klass")
    wrong = {lab: w for lab, w in _wrong().items() if lab in {g.name for g in GRADED}}
    for lab in GRADED:
        write(root / "class" / "ada", lab.name, right(lab.name))
    for learner in ("bob", "dee"):
        for lab, (extra, _) in wrong.items():
            if learner == "bob" or lab in ("ring_vs_tree", "nccl_debug_multinode"):
                write(root / "class" / learner, lab, right(lab) + "\n\n" + (extra if learner == "bob" else ""))
    junit, book = root / "grades.xml", root / "grades.csv"
    done = commlab("check", *(lab.name for lab in GRADED), "--class", str(root / "class"), "--junit", str(junit),
                   "--csv", str(book))
    lines = [line for line in done.stdout.splitlines() if not line.startswith("wrote ")]
    return {"root": root, "done": done, "lines": lines, "junit": junit, "book": book, "wrong": wrong}


def test_a_learner_with_every_lab_right_passes_every_task(klass):
    assert klass["done"].returncode == 0, (klass["done"].stdout + klass["done"].stderr)[-3000:]
    ada = [line for line in klass["lines"][:-1] if line.startswith("ada ")]
    n_tasks = sum(len(lab.tasks) for lab in GRADED)
    public = [line for line in ada if "(drawn)" not in line]
    assert len(public) == n_tasks and all(line.split()[-1] == "pass" for line in ada), ada
    assert {line.split()[1] for line in ada} == {lab.name for lab in GRADED}
    import csv

    rows = {row["student"]: row for row in csv.DictReader(klass["book"].read_text().splitlines())}
    assert float(rows["ada"]["total"]) == sum(t.points for lab in GRADED for t in lab.tasks), rows["ada"]


def test_a_class_with_a_mistake_in_every_lab(klass):
    done, lines, wrong, root = klass["done"], klass["lines"], klass["wrong"], klass["root"]
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]      # failures are results, not an error
    n_tasks = sum(len(lab.tasks) for lab in GRADED)
    public = [line for line in lines[:-1] if "(drawn)" not in line]
    assert len(public) == 3 * n_tasks and f"tasks passed ({root / 'class'})" in lines[-1]
    bob = {(line.split()[1], line.split()[2]): line for line in public if line.startswith("bob ")}
    for lab, (_, task) in wrong.items():
        assert bob[lab, task].split()[3] == "FAIL", bob[lab, task]    # every lab's mistake is found
    assert "tp=4 does not stay on NVLink on a40-pcie-8" in bob["topology", "my_sizes"]
    assert "classify_run: a peak of" in bob["nccl_debug_multinode", "classify_run"]
    dee = [line for line in public if line.startswith("dee ")]
    assert all(line.split()[3] == "pass" for line in dee if line.split()[1] in ("ring_vs_tree", "nccl_debug_multinode"))
    assert any("skip  not handed in: there is no p2p.py in" in line for line in dee)

    suites = ET.parse(klass["junit"]).getroot()
    assert suites.tag == "testsuites" and int(suites.get("tests")) == len(lines) - 1
    assert [s.get("name") for s in suites] == ["ada", "bob", "dee"]
    cases = {(c.get("classname"), c.get("name")): c for c in suites[1].iter("testcase")}
    failure = cases["bob.nccl_debug_multinode", "classify_run"].find("failure")
    assert failure is not None and "a peak of" in failure.get("message")
    assert cases["bob.p2p", "halo_exchange_nonblocking"].find("failure") is None   # bob's other p2p tasks are right
    dee_cases = {(c.get("classname"), c.get("name")): c for c in suites[2].iter("testcase")}
    assert dee_cases["dee.p2p", "ping_pong"].find("skipped") is not None          # not handed in: skipped


def test_code_that_does_not_import_or_hangs_fails_its_own_lab_only(tmp_path):
    carl = tmp_path / "carl"
    write(carl, "ring_vs_tree", "def ring_time_s(nbytes, n_ranks, alpha_s, bw_Bps:\n    return 0\n")
    write(carl, "topology", "while True:\n    pass\n")
    write(carl, "bandwidth_sweep", right("bandwidth_sweep"))
    done = commlab("check", "ring_vs_tree", "topology", "bandwidth_sweep", "--mine", str(carl), "--timeout", "8")
    assert done.returncode == 1, (done.stdout + done.stderr)[-3000:]
    lines = done.stdout.splitlines()
    assert all("ring_vs_tree.py does not import: SyntaxError" in line
               for line in lines if line.startswith("ring_vs_tree")), done.stdout
    assert all("the checks of topology did not finish within 8 s" in line
               for line in lines if line.startswith("topology"))
    assert all(line.split()[-1] == "pass" for line in lines if line.startswith("bandwidth_sweep"))
    n_tasks = sum(len(registry.lab(lab).tasks) for lab in ("ring_vs_tree", "topology", "bandwidth_sweep"))
    passed = sum(line.split()[-1] == "pass" for line in lines[:-1] if line.startswith("bandwidth_sweep"))
    assert passed >= len(registry.lab("bandwidth_sweep").tasks)
    assert lines[-1].startswith(f"{passed} of {len(lines) - 1} tasks passed ({carl})") and len(lines) - 1 >= n_tasks


def test_bad_arguments_are_one_line_and_exit_2(tmp_path):
    done = commlab("check", "no_such_lab")
    assert done.returncode == 2 and done.stderr.startswith("commlab labs: error: unknown lab 'no_such_lab'")
    done = commlab("check", "--class", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "is not a folder" in done.stderr and done.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    done = commlab("check", "--class", str(tmp_path / "empty"))
    assert done.returncode == 2 and "holds no submissions" in done.stderr


def test_list_names_every_lab_and_its_tasks():
    done = commlab("list", "--json")
    assert done.returncode == 0
    found = json.loads(done.stdout)
    assert [row["lab"] for row in found] == list(registry.names())
    assert found[-1] == {"lab": "find_the_hang", "title": "find the hang", "notebook": "labs/find_the_hang.ipynb",
                         "script": "labs/scripts/find_the_hang.py",
                         "tasks": [{"task": "find_the_hang", "functions": ["find_the_hang"], "ranks": 4}]}


@pytest.mark.parametrize("lab", registry.names())
def test_every_lab_has_its_notebook_script_and_reference(lab):
    entry = registry.lab(lab)
    assert (REPO / entry.notebook).is_file() and (REPO / entry.script).is_file()
    assert (REPO / "src" / "commlab" / "labs" / "solutions" / f"{lab}.py").is_file()


def test_relative_class_and_mine_folders_are_graded_like_absolute_ones(tmp_path):
    """`commlab labs check --class submissions/` run from the folder that holds it (the instructor's page)."""
    write(tmp_path / "submissions" / "ada", "ring_vs_tree", right("ring_vs_tree"))
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    for args in (["--class", "submissions"], ["--mine", "submissions/ada"]):
        start = {"COMMLAB_GRADER_START": "spawn"} if args[0] == "--mine" else {}   # no fork server: the same rows
        done = subprocess.run([sys.executable, "-m", "commlab", "labs", "check", "ring_vs_tree", *args, "--json"],
                              capture_output=True, text=True, timeout=600, env={**env, **start}, cwd=tmp_path)
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        found = json.loads(done.stdout)
        public = [r for r in found["results"] if r["kind"] == "public"]
        assert found["failed"] == 0 and len(public) == len(registry.lab("ring_vs_tree").tasks)
        assert found["passed"] == len(found["results"])
        first = found["results"][0]
        assert set(first) == {"learner", "lab", "task", "passed", "problem", "seconds", "module", "status", "kind",
                              "points", "points_possible"}
        assert first["learner"] == (None if args[0] == "--mine" else "ada") and first["passed"] is True
        assert sum(r["points"] for r in found["results"]) == sum(t.points for t in registry.lab("ring_vs_tree").tasks)
