"""A class of hostile submissions graded once, beside honest students who must still pass.

Every probe an instructor met (importing the reference, taking answers from commlab.cost or the answer key,
writing results then ``os._exit(0)``, reading and overwriting another student's files, patching the installed
package, control characters, malformed values, killing the grader, orphans, listening sockets, detached
children, children holding the output pipes, 2 GB at import, hanging at import) and a few more (an object
whose ``__eq__`` always says yes, garbage on the grader's socket, the instructor's environment) must fail or
be contained: the honest students pass, no process is left, the package is unchanged, the JUnit file is
well-formed and valid against tests/data/junit.xsd and nothing rewrites it afterwards.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import grading_helpers
import pytest

from commlab.labs import registry, sandbox


honest_source = grading_helpers.honest_source

REPO = Path(__file__).resolve().parents[2]
MARKER = "commlab-hostile-probe-7f3a"
SECRET = "instructor-secret-91c2"
LABS = ("ring_vs_tree", "topology", "nccl_debug_multinode")
BWRAP = sandbox.bwrap_path() is not None


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _marked_processes() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if MARKER.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _probes(klass: Path, junit: Path) -> dict[str, dict[str, str]]:
    """{student: {lab: source}}: each probe's files."""
    ring_right = honest_source("ring_vs_tree")
    ada_file = klass / "ada" / "ring_vs_tree.py"
    package = Path(__import__("commlab").__file__).resolve().parent
    spawn = (f"import subprocess, sys\n"
             f"CHILD = [sys.executable, '-c', 'import time; time.sleep(600)  # {MARKER}']\n")
    probes = {
        "p_imports_reference": {"ring_vs_tree": "from commlab.labs.solutions.ring_vs_tree import *  # noqa\n"},
        "p_answers_from_cost": {"ring_vs_tree": textwrap.dedent("""\
            from commlab.cost import ring_all_reduce_time_s as ring_time_s, tree_all_reduce_time_s as tree_time_s
            from commlab.cost import crossover_nbytes, all_reduce_time_s
            def predict_crossover_nbytes(n, a, b):
                return crossover_nbytes("ring", "tree", n, a, b)
            def faster_algorithm(s, n, a, b):
                tree, ring = all_reduce_time_s("tree", s, n, a, b), all_reduce_time_s("ring", s, n, a, b)
                return "tree" if tree < ring else "ring"
            """)},
        "p_answer_key": {"nccl_debug_multinode": textwrap.dedent("""\
            from commlab.labs.checks.nccl_debug_multinode import ANSWER_KEY
            def env_for_goals():
                return dict(ANSWER_KEY)
            """), "topology": "import commlab.exercises.answers\nfrom commlab.labs.solutions.topology import *\n"},
        "p_writes_results_then_exits": {"ring_vs_tree": textwrap.dedent(f"""\
            import json, os, sys
            for path in sys.argv[1:] + [{str(junit)!r}]:
                try:
                    with open(path, "w") as f:
                        json.dump([{{"task": t, "problem": "", "seconds": 0}} for t in
                                   ("models", "predict_crossover_nbytes", "faster_algorithm")], f)
                except OSError:
                    pass
            print("all passed")
            os._exit(0)
            """)},
        "p_exits_in_a_call": {"ring_vs_tree": ring_right + "\nimport os\ndef faster_algorithm(*a):\n    os._exit(0)\n"},
        "p_reads_and_overwrites_others": {"ring_vs_tree": textwrap.dedent(f"""\
            import os
            STOLEN = []
            for path in ({str(ada_file)!r}, {str(klass)!r}):
                try:
                    STOLEN.append(os.listdir(path) if os.path.isdir(path) else open(path).read())
                    if not os.path.isdir(path):
                        open(path, "w").write("def ring_time_s(*a):\\n    return 0\\n")
                except OSError:
                    pass
            def ring_time_s(sizes, n, a, b):
                raise RuntimeError(f"could read {{len(STOLEN)}} of the others' files")
            """)},
        "p_patches_the_package": {"ring_vs_tree": textwrap.dedent(f"""\
            import commlab, os
            for root in (os.path.dirname(commlab.__file__), {str(package)!r}, {str(REPO / 'src' / 'commlab')!r}):
                for name in ("labs/checks/ring_vs_tree.py", "labs/registry.py", "cost/alpha_beta.py", "__init__.py"):
                    try:
                        with open(os.path.join(root, name), "a") as f:
                            f.write("\\nraise SystemExit('patched')\\n")
                    except OSError:
                        pass
            def ring_time_s(*a):
                return 0
            """)},
        "p_control_characters": {"ring_vs_tree": textwrap.dedent("""\
            def ring_time_s(*a):
                raise ValueError("FAIL\\r\\x1b[2Kpass \\x00\\x07\\x1b]0;title\\x07 <tag> & ]]> \\ud800 \\u202e")
            """), "topology": "def my_sizes():\n    return {'tp': '\\x1b[32mok\\x1b[0m', 'pp': 1, 'dp': 1}\n"},
        "p_malformed_values": {"ring_vs_tree": textwrap.dedent("""\
            class Yes:
                def __eq__(self, other):
                    return True
                __hash__ = object.__hash__
            def ring_time_s(*a):
                return Yes()
            def tree_time_s(*a):
                return lambda: 0
            def predict_crossover_nbytes(*a):
                x = []
                for _ in range(5000):
                    x = [x]
                return x
            def faster_algorithm(*a):
                import gc, socket
                for obj in gc.get_objects():
                    if isinstance(obj, socket.socket):
                        try:
                            obj.sendall(b"\\xff" * 64)
                        except OSError:
                            pass
                return "ring"
            """)},
        "p_orphans_sockets_detached": {"ring_vs_tree": ring_right + spawn + textwrap.dedent(f"""\
            import os, socket
            KIDS = [subprocess.Popen(CHILD) for _ in range(20)]
            LISTENER = socket.socket()
            LISTENER.bind(("127.0.0.1", 0))
            LISTENER.listen()
            if os.fork() == 0:                      # a detached grandchild that waits, then rewrites the JUnit file
                os.setsid()
                if os.fork() == 0:
                    import time
                    time.sleep(8)
                    try:
                        open({str(junit)!r}, "w").write("rewritten")
                    finally:
                        os._exit(0)
                os._exit(0)
            """)},
        "p_children_hold_pipes": {"ring_vs_tree": ring_right + spawn + "HOLDER = subprocess.Popen(CHILD, "
                                                                        "stdout=sys.stdout, stderr=sys.stderr)\n"},
        "p_big_allocation": {"ring_vs_tree": ring_right + "\nBLOCK = bytearray(2 * 2**30)\n"},
        "p_hangs_at_import": dict.fromkeys(LABS, "while True:\n    pass\n"),
        "p_environment": {"ring_vs_tree": textwrap.dedent("""\
            import os
            def ring_time_s(*a):
                raise RuntimeError("my environment: " + repr(dict(os.environ)))
            """)},
    }
    if BWRAP and sandbox.cgroups_work():  # a fork bomb: only where a pids cgroup caps it and a namespace ends it
        probes["p_fork_bomb"] = {"ring_vs_tree": textwrap.dedent("""\
            import os, time
            while True:
                try:
                    os.fork()
                except OSError:
                    time.sleep(0.05)
            """)}
    if BWRAP:  # killing everything it can see: only where a PID namespace holds it (never without one)
        probes["p_kills_the_grader"] = {"ring_vs_tree": textwrap.dedent("""\
            import os, signal
            for target in (os.getppid(), 1):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            """)}
    return probes


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not BWRAP:
        pytest.skip("the hostile class needs bubblewrap (bash scripts/install_sandbox.sh): without it a student's "
                    "code can read and change the files of others, as commlab labs check then says")
    root = tmp_path_factory.mktemp("hostile")
    klass, junit, book = root / "class", root / "grades.xml", root / "grades.csv"
    for name in ("ada", "zoe"):                          # honest, graded before and after the probes
        for lab in LABS:
            (klass / name).mkdir(parents=True, exist_ok=True)
            (klass / name / f"{lab}.py").write_text(honest_source(lab))
    honest_before = {p: p.read_bytes() for p in klass.rglob("*.py")}
    for student, files in _probes(klass, junit).items():
        (klass / student).mkdir(parents=True)
        for lab, text in files.items():
            (klass / student / f"{lab}.py").write_text(text)
    package = Path(__import__("commlab").__file__).resolve().parent
    digest = _tree_digest(package)
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    env["COMMLAB_INSTRUCTOR_VAR"] = SECRET
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "commlab", "labs", "check", *LABS, "--class", str(klass),
                           "--junit", str(junit), "--csv", str(book), "--feedback", str(root / "feedback"),
                           "--logs", str(root / "logs"), "--timeout", "25", "--student-timeout", "30",
                           "--jobs", "2", "--seed", "11", "--json"],
                          capture_output=True, text=True, timeout=900, env=env, cwd=root)
    seconds = time.monotonic() - started
    junit_right_after = junit.read_bytes() if junit.exists() else b""
    time.sleep(9)                                  # the detached grandchild would have rewritten the file by now
    return {"done": done, "root": root, "klass": klass, "junit": junit, "junit_right_after": junit_right_after,
            "csv": book, "digest_before": digest, "digest_after": _tree_digest(package), "package": package,
            "honest_before": honest_before, "seconds": seconds}


def _rows(graded) -> dict:
    found = json.loads(graded["done"].stdout)
    out: dict = {}
    for r in found["results"]:
        out.setdefault(r["learner"], {}).setdefault(r["lab"], []).append(r)
    return out


def test_the_class_run_completes_with_exit_0(graded):
    done = graded["done"]
    assert done.returncode == 0, (done.stdout[-2000:] + done.stderr[-3000:])
    found = json.loads(done.stdout)
    assert found["errors"] == 0 and found["seed"] == 11


def test_honest_students_pass_every_task(graded):
    rows = _rows(graded)
    for name in ("ada", "zoe"):
        for lab in LABS:
            bad = [(r["task"], r["problem"]) for r in rows[name][lab] if not r["passed"]]
            assert not bad, (name, lab, bad)


def _public(rows, student, lab):
    return [r for r in rows[student][lab] if r["kind"] == "public"]


@pytest.mark.parametrize("student", ["p_imports_reference", "p_answers_from_cost", "p_writes_results_then_exits",
                                     "p_reads_and_overwrites_others", "p_patches_the_package", "p_control_characters",
                                     "p_malformed_values", "p_big_allocation", "p_hangs_at_import", "p_environment"])
def test_every_probe_fails_ring_vs_tree(graded, student):
    rows = _rows(graded)
    verdicts = _public(rows, student, "ring_vs_tree")
    assert verdicts and not any(r["passed"] for r in verdicts), verdicts
    assert all(r["status"] == "fail" for r in verdicts), verdicts       # the student's fault, never the grader's


def test_the_reasons_name_what_the_probe_did(graded):
    rows = _rows(graded)

    def problem(student, lab="ring_vs_tree", i=0):
        return _public(rows, student, lab)[i]["problem"]

    assert "No module named 'commlab.labs.solutions'" in problem("p_imports_reference")
    assert "not available while a lab is graded" in problem("p_answers_from_cost")
    assert "No module named 'commlab.labs.checks'" in problem("p_answer_key", "nccl_debug_multinode")
    assert "No module named 'commlab.exercises'" in problem("p_answer_key", "topology")
    assert "while the module was imported" in problem("p_writes_results_then_exits") or \
        "did not answer the grader" in problem("p_writes_results_then_exits")
    assert "could read 0 of the others' files" in problem("p_reads_and_overwrites_others")
    assert "MemoryError" in problem("p_big_allocation")
    assert "did not finish within" in problem("p_hangs_at_import")
    assert "not graded: this student's time" in problem("p_hangs_at_import", "nccl_debug_multinode")
    assert "cannot be sent back" in problem("p_malformed_values")
    assert SECRET not in graded["done"].stdout and "COMMLAB_INSTRUCTOR_VAR" not in problem("p_environment")
    ended = [r for r in _public(rows, "p_exits_in_a_call", "ring_vs_tree") if r["task"] == "faster_algorithm"]
    assert "ended during the call" in ended[0]["problem"]


def test_contained_probes_with_correct_code_still_pass(graded):
    """Orphans, sockets, a detached child, children holding the output: contained, and the code is right."""
    rows = _rows(graded)
    for student in ("p_orphans_sockets_detached", "p_children_hold_pipes"):
        verdicts = _public(rows, student, "ring_vs_tree")
        assert all(r["passed"] for r in verdicts), verdicts
        assert max(r["seconds"] for r in verdicts) < 20, verdicts          # not a 600 s "hang"


def test_no_process_is_left_and_nothing_rewrote_the_junit_file(graded):
    assert _marked_processes() == []
    assert graded["junit"].read_bytes() == graded["junit_right_after"] != b""


def test_the_package_and_the_other_students_files_are_unchanged(graded):
    assert graded["digest_after"] == graded["digest_before"]
    for path, text in graded["honest_before"].items():
        assert path.read_bytes() == text, path


def test_the_junit_file_is_valid_and_keys_every_student_task(graded):
    import xmlschema

    schema = xmlschema.XMLSchema(str(REPO / "tests" / "data" / "junit.xsd"))
    schema.validate(str(graded["junit"]))
    suites = ET.parse(graded["junit"]).getroot()
    keys = [(c.get("classname"), c.get("name")) for s in suites for c in s.iter("testcase")]
    assert len(keys) == len(set(keys))                                  # GitLab folds nothing
    assert ("ada.ring_vs_tree", "models") in keys
    text = graded["junit"].read_text()
    assert "\x1b" not in text and "\\x1b[2K" in text and "\r" not in text
    skipped = [c for s in suites for c in s.iter("testcase") if c.find("skipped") is not None]
    assert any(c.get("classname") == "p_imports_reference.topology" for c in skipped)


def test_the_table_escapes_control_characters(graded, tmp_path):
    from commlab.labs import gradebook
    from commlab.labs.grade import Graded

    row = Graded("p_control_characters", "ring_vs_tree", "models", False, "FAIL\r\x1b[2Kpass", 0.0, "m", "fail")
    shown = gradebook.line(row, (24, 12, 8), True)
    assert "\r" not in shown and "\x1b" not in shown and shown.split()[3] == "FAIL"
    assert "p_control_characters" in shown                                   # the whole name, never cut


def test_the_gradebook_has_a_row_per_student_and_points_per_lab(graded):
    rows = list(csv.reader(graded["csv"].open()))
    assert rows[0] == ["student", *LABS, "total", "possible"]
    by_name = {r[0]: r for r in rows[1:]}
    full = sum(t.points for lab in LABS for t in registry.lab(lab).tasks)
    assert float(by_name["ada"][-2]) == full and float(by_name["p_imports_reference"][-2]) == 0.0
    assert (graded["root"] / "feedback" / "p_answers_from_cost.txt").read_text().count("FAILED") >= 1
    assert "all passed" in (graded["root"] / "logs" / "p_writes_results_then_exits" / "ring_vs_tree.log").read_text()


@pytest.mark.skipif(not (BWRAP and sandbox.cgroups_work()), reason="a fork bomb is only safe in a pids cgroup")
def test_a_fork_bomb_is_capped_and_fails_alone(graded):
    rows = _rows(graded)
    verdicts = _public(rows, "p_fork_bomb", "ring_vs_tree")
    assert verdicts and not any(r["passed"] for r in verdicts) and all(r["status"] == "fail" for r in verdicts)
    assert all("did not finish within" in r["problem"] for r in verdicts), verdicts   # capped, then timed out


@pytest.mark.skipif(not BWRAP, reason="killing every process it can see is only safe inside a PID namespace")
def test_a_student_who_kills_everything_fails_alone(graded):
    rows = _rows(graded)
    verdicts = _public(rows, "p_kills_the_grader", "ring_vs_tree")
    assert verdicts and not any(r["passed"] for r in verdicts)


FORGED_RING = '''
import torch.distributed as dist


def _claim_the_ring(tracer, first_step=0, reduce=True, n_steps=None):
    n, r = tracer.n_ranks, tracer.rank
    for s in range(n_steps or n - 1):
        tracer.record((r + 1) % n, step=first_step + s, chunk=(r - s - (1 if reduce else 0)) % n, reduce=reduce)


def reduce_scatter_steps(buffer, tracer, first_step=0):
    _claim_the_ring(tracer, first_step, True)        # the record of a ring ...
    dist.all_reduce(buffer)                          # ... and a collective doing the work


def all_gather_steps(buffer, tracer, first_step=0):
    _claim_the_ring(tracer, first_step, False)       # a record, and nothing sent at all


def ring_all_reduce(x, tracer):
    out = x.clone()
    _claim_the_ring(tracer, 0, True)
    _claim_the_ring(tracer, tracer.n_ranks - 1, False)
    dist.all_reduce(out)
    return out
'''


def test_a_forged_trace_with_a_collective_fails_and_an_honest_ring_passes(tmp_path, no_child_left):
    klass = tmp_path / "class"
    (klass / "honest").mkdir(parents=True)
    (klass / "honest" / "build_your_own_ring.py").write_text(honest_source("build_your_own_ring"))
    (klass / "forger").mkdir()
    (klass / "forger" / "build_your_own_ring.py").write_text(FORGED_RING)
    (klass / "borrower").mkdir()          # the package's own ring (commlab.p2p.ring) is the lab's reference
    (klass / "borrower" / "build_your_own_ring.py").write_text(
        "from commlab.p2p.ring import all_gather_steps, reduce_scatter_steps  # noqa: F401\n"
        "from commlab.p2p.ring import ring_all_reduce as _ring\n\n\n"
        "def ring_all_reduce(x, tracer):\n    return _ring(x, tracer)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    done = subprocess.run([sys.executable, "-m", "commlab", "labs", "check", "build_your_own_ring", "--class",
                           str(klass), "--jobs", "2", "--timeout", "120", "--json"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)["results"]
    honest = [r for r in rows if r["learner"] == "honest"]
    assert honest and all(r["passed"] for r in honest), honest
    forged = {r["task"]: r["problem"] for r in rows if r["learner"] == "forger" and r["kind"] == "public"}
    assert set(forged) == {"reduce_scatter_steps", "all_gather_steps", "ring_all_reduce"}
    assert "refuses collectives" in forged["reduce_scatter_steps"], forged
    assert "no message of" in forged["all_gather_steps"], forged
    assert "refuses collectives" in forged["ring_all_reduce"] or "no message of" in forged["ring_all_reduce"]
    borrowed = [r for r in rows if r["learner"] == "borrower" and r["kind"] == "public"]
    assert len(borrowed) == 3 and not any(r["passed"] for r in borrowed), borrowed
    assert all("not available while a lab is graded" in r["problem"] for r in borrowed), borrowed
