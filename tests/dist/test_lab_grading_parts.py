"""The parts of grading a class, each alone: the wire (only plain values come back), the escaping of the
table and of JUnit (valid against tests/data/junit.xsd whatever a message holds), the gradebook, safe
unpacking of hand-ins (``labs collect``), what ``labs check --class`` skips, hidden checks and the per-student
time limit."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import grading_helpers
import pytest

from commlab.errors import CommlabError
from commlab.labs import collect, gradebook, wire
from commlab.labs.grade import Graded

REPO = Path(__file__).resolve().parents[2]


def _round_trip(value):
    return wire.decode(*wire.split(wire.encode(value)))


def test_plain_values_cross_the_wire_unchanged():
    import torch

    from commlab.cost import Regime

    value = {"a": (1, 2.5, None, True), 3: [float("inf"), -float("inf")], "s": {1, 2}, "big": 2**70,
             "arr": np.arange(6, dtype=np.int32).reshape(2, 3), "t": torch.arange(4, dtype=torch.float32),
             "regime": Regime("LL", 1e-6, 1e-9, 0.0, 3), "np": np.float64(0.5)}
    got = _round_trip(value)
    assert got["a"] == (1, 2.5, None, True) and got[3] == [float("inf"), -float("inf")] and got["s"] == {1, 2}
    assert got["big"] == 2**70 and np.array_equal(got["arr"], value["arr"]) and got["arr"].dtype == np.int32
    assert torch.equal(got["t"], value["t"]) and got["regime"] == value["regime"] and got["np"] == 0.5
    assert np.isnan(_round_trip(float("nan")))


def test_objects_of_their_own_never_come_back():
    class Yes:
        def __eq__(self, other):
            return True

    for bad in (Yes(), lambda: 0, object(), np.array([object()], dtype=object)):
        with pytest.raises(wire.WireError, match="cannot be sent"):
            wire.encode(bad)

    @dataclasses.dataclass
    class Mine:
        x: int = 1

    header, blobs = wire.split(wire.encode(Mine()))
    with pytest.raises(wire.WireError, match="only commlab's"):
        wire.decode(header, blobs)
    forged = {"v": {"$": "dataclass", "cls": "commlab.labs.grade:Options", "fields": {"jobs": -1}}, "blobs": []}
    with pytest.raises(wire.WireError, match="rejects the fields"):
        wire.decode(forged, [])
    with pytest.raises(wire.WireError, match="unknown kind"):
        wire.decode({"v": {"$": "pickle", "v": "..."}, "blobs": []}, [])
    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(wire.WireError, match="nested"):
        wire.encode(deep)


def test_frames_over_the_limit_or_of_the_wrong_kind_are_refused():
    a, b = socket.socketpair()
    with a, b:
        b.sendall(wire._HEADER.pack(wire.MAX_FRAME_BYTES + 10) + b"J")
        with pytest.raises(wire.WireError, match="limit"):
            wire.recv_frame(a)
    a, b = socket.socketpair()
    with a, b:
        wire.send_frame(b, "P", b"\x80\x04N.")
        with pytest.raises(wire.WireError, match="kind 'P'"):
            wire.recv_frame(a, "J")


NASTY = "".join(chr(c) for c in range(32)) + "\x7f\x85\u2028\u202e\ufffe\ud800 <&>\"' ]]> FAIL\r\x1b[2Kpass"


def test_the_table_and_junit_escape_whatever_a_message_holds(tmp_path):
    import xml.etree.ElementTree as ET

    import xmlschema

    rows = [Graded("eve\r\x1b[2K\x00", "ring_vs_tree", "models", False, NASTY, 0.5, "m", "fail"),
            Graded("ada", "ring_vs_tree", "models", True, "", 0.1, "m", "pass", "public", 1.0, 1.0),
            Graded("ada", "p2p", "ping_pong", False, "not handed in", 0.0, "m", "skipped"),
            Graded("ada", "topology", "my_sizes", False, "the grader failed", 0.0, "m", "error")]
    line = gradebook.line(rows[0], gradebook.widths(rows, [rows[0].learner, "ada"], ["ring_vs_tree"]), True)
    assert all(ch.isprintable() for ch in line) and line.split()[3] == "FAIL" and "\\x1b[2Kpass" in line
    path = tmp_path / "grades.xml"
    path.write_text(gradebook.junit_xml(rows, seed=7), encoding="utf-8")
    xmlschema.XMLSchema(str(REPO / "tests" / "data" / "junit.xsd")).validate(str(path))
    root = ET.parse(path).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("4", "1", "1", "1")
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    assert cases["ada.p2p", "ping_pong"].find("skipped") is not None
    assert cases["ada.topology", "my_sizes"].find("error") is not None


def test_the_gradebook_sums_points_per_lab_and_defuses_formulas():
    rows = [Graded("=HYPERLINK(\"x\")", "ring_vs_tree", "models", True, "", 0, "m", "pass", "public", 2.0, 2.0),
            Graded("=HYPERLINK(\"x\")", "ring_vs_tree", "faster", False, "no", 0, "m", "fail", "public", 0.0, 1.0),
            Graded("bo", "topology", "my_sizes", True, "", 0, "m", "pass", "public", 1.0, 1.0)]
    table = list(csv.reader(io.StringIO(gradebook.gradebook_csv(rows, ["ring_vs_tree", "topology"]))))
    assert table[0] == ["student", "ring_vs_tree", "topology", "total", "possible"]
    assert table[1] == ["'=HYPERLINK(\"x\")", "2", "0", "2", "3"] and table[2] == ["bo", "0", "1", "1", "1"]


def _zip(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, "/etc/passwd")
    return path


def test_collect_unpacks_safely_and_finds_a_nested_labs_mine(tmp_path):
    good = _zip(tmp_path / "Ada Lovelace_4711_assignsubmission_file_labs.zip",
                {"repo/labs/mine/ring_vs_tree.py": b"x = 1\n", "repo/labs/mine/.history/old.py": b"",
                 "repo/README.md": b"hi"})
    escape = _zip(tmp_path / "eve.zip", {"../../evil.py": b"boom"})
    linked = _zip(tmp_path / "mal.zip", {"labs/mine/topology.py": b"x = 1\n"}, link="labs/mine/p2p.py")
    tar = tmp_path / "tom.tgz"
    with tarfile.open(tar, "w:gz") as t:
        data = b"y = 2\n"
        info = tarfile.TarInfo("mine/p2p.py")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
        sym = tarfile.TarInfo("mine/topology.py")
        sym.type, sym.linkname = tarfile.SYMTYPE, "/etc/shadow"
        t.addfile(sym)
    honest_tar = tmp_path / "una.tar"
    with tarfile.open(honest_tar, "w") as t:
        data = b"z = 3\n"
        info = tarfile.TarInfo("mine/ring_vs_tree.py")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    lines = collect.collect([good, escape, linked, tar, honest_tar, tmp_path / "notes.txt"], tmp_path / "class")
    assert (tmp_path / "class" / "Ada_Lovelace" / "ring_vs_tree.py").read_text() == "x = 1\n"
    assert sorted(p.name for p in (tmp_path / "class").iterdir()) == ["Ada_Lovelace", "una"]
    assert not (tmp_path / "evil.py").exists() and not (tmp_path.parent / "evil.py").exists()
    text = "\n".join(lines)
    assert "eve.zip: refused" in text and "outside its folder" in text
    assert "mal.zip: refused" in text and "link" in text and "tom.tgz: refused" in text
    assert "notes.txt: skipped" in text


def test_collect_refuses_an_archive_too_large_to_unpack(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "MAX_TOTAL_BYTES", 1000)
    bomb = _zip(tmp_path / "bomb.zip", {f"labs/mine/f{i}.py": b"0" * 600 for i in range(3)})
    assert "refused" in collect.collect([bomb], tmp_path / "class")[0]


def _commlab(*args, cwd=REPO, timeout_s=300):
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    return subprocess.run([sys.executable, "-m", "commlab", "labs", *args], capture_output=True, text=True,
                          timeout=timeout_s, env=env, cwd=cwd)


def test_check_class_says_what_it_skipped_and_grades_a_nested_mine(tmp_path, no_child_left):
    klass = tmp_path / "class"
    honest = grading_helpers.honest_source("ring_vs_tree")
    (klass / ".git").mkdir(parents=True)
    (klass / "bo.zip").write_bytes(b"")
    (klass / "readme.txt").write_text("hi")
    (klass / "a-very-long-student-name-that-is-not-cut").mkdir()
    (klass / "a-very-long-student-name-that-is-not-cut" / "ring_vs_tree.py").write_text(honest)
    (klass / "cy" / "repo" / "labs" / "mine").mkdir(parents=True)
    (klass / "cy" / "repo" / "labs" / "mine" / "ring_vs_tree.py").write_text(honest)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "ring_vs_tree.py").write_text(
        "POINTS = {'check_huge_n': 2}\n"
        "def check_huge_n(ring_time_s):\n"
        "    got = ring_time_s([1e9], 5000, 1e-6, 1e9)\n"
        "    return '' if abs(got[0] - 2 * 4999 * 1e-6 - 2 * 4999 / 5000) < 1e-9 else f'N=5000: {got}'\n"
        "def check_always_fails(faster_algorithm):\n"
        "    return 'an instructor check that fails'\n")
    done = _commlab("check", "ring_vs_tree", "--class", str(klass), "--checks", str(hidden), "--json", "--seed", "4")
    assert done.returncode == 0, done.stderr[-3000:]
    for said in ("skipped '.git': a hidden entry", "skipped 'bo.zip': an archive; unpack it first: commlab labs "
                 "collect", "skipped 'readme.txt': a file", "cy: grading cy/repo/labs/mine"):
        assert said in done.stderr, done.stderr
    rows = json.loads(done.stdout)["results"]
    assert {r["learner"] for r in rows} == {"a-very-long-student-name-that-is-not-cut", "cy"}
    hidden_rows = [r for r in rows if r["kind"] == "hidden" and r["learner"] == "cy"]
    assert {(r["task"], r["passed"], r["points"], r["points_possible"]) for r in hidden_rows} == {
        ("check_huge_n", True, 2.0, 2.0), ("check_always_fails", False, 0.0, 1.0)}
    assert all(r["passed"] for r in rows if r["kind"] != "hidden")
    table = _commlab("check", "ring_vs_tree", "--class", str(klass), "--seed", "4")
    assert "a-very-long-student-name-that-is-not-cut ring_vs_tree" in table.stdout


def test_a_student_time_limit_bounds_all_their_labs(tmp_path, no_child_left):
    klass = tmp_path / "class"
    (klass / "slow").mkdir(parents=True)
    for lab in ("ring_vs_tree", "topology", "bandwidth_sweep"):
        (klass / "slow" / f"{lab}.py").write_text("import time\ntime.sleep(600)\n")
    done = _commlab("check", "ring_vs_tree", "topology", "bandwidth_sweep", "--class", str(klass),
                    "--student-timeout", "6", "--json", timeout_s=120)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)["results"]
    by_lab = {r["lab"]: r["problem"] for r in rows}
    assert "did not finish within 6 s" in by_lab["ring_vs_tree"]
    assert "not graded: this student's time (--student-timeout 6 s) ran out" in by_lab["bandwidth_sweep"]


@pytest.mark.parametrize("args, says", [(["--jobs", "0"], "--jobs must be"), (["--timeout", "-1"], "--timeout must"),
                                        (["--student-timeout", "0"], "--student-timeout must"),
                                        (["--checks", "/nowhere"], "--checks '/nowhere' is not a folder")])
def test_bad_options_are_one_line_and_exit_2(tmp_path, args, says):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    done = _commlab("check", "--class", str(tmp_path / "class"), *args)
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_collect_cli_and_a_bad_destination(tmp_path):
    archive = _zip(tmp_path / "ada.zip", {"labs/mine/ring_vs_tree.py": b"x = 1\n"})
    done = _commlab("collect", str(archive), "--to", str(tmp_path / "class"))
    assert done.returncode == 0 and "1 lab modules from labs/mine" in done.stdout
    with pytest.raises(CommlabError):
        collect.student_name(Path("...zip"))


def test_without_bubblewrap_the_fallback_says_what_it_does_not_isolate_and_still_judges(tmp_path, no_child_left):
    klass = tmp_path / "class"
    (klass / "ada").mkdir(parents=True)
    (klass / "ada" / "ring_vs_tree.py").write_text(grading_helpers.honest_source("ring_vs_tree"))
    (klass / "bob").mkdir()
    (klass / "bob" / "ring_vs_tree.py").write_text(
        "import json, os, sys\nprint('all passed')\nos._exit(0)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    env["COMMLAB_SANDBOX"] = "rlimits"
    done = subprocess.run([sys.executable, "-m", "commlab", "labs", "check", "ring_vs_tree", "--class", str(klass),
                           "--json"], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no sandbox: " in done.stderr and "can read every file this user can read" in done.stderr
    found = json.loads(done.stdout)
    assert found["isolation"].startswith("rlimits")
    rows = found["results"]
    assert all(r["passed"] for r in rows if r["learner"] == "ada")
    assert not any(r["passed"] for r in rows if r["learner"] == "bob")


def _descendants(pid: int) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, parent in parents.items() if parent == p]
        found.update(kids)
        todo += kids
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_killing_the_grading_run_ends_every_grader_process_and_sandbox(tmp_path):
    import signal
    import time

    klass = tmp_path / "class"
    (klass / "hangs").mkdir(parents=True)
    (klass / "hangs" / "ring_vs_tree.py").write_text("import time\nwhile True:\n    time.sleep(1)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    run = subprocess.Popen([sys.executable, "-m", "commlab", "labs", "check", "ring_vs_tree", "--class", str(klass),
                            "--timeout", "120"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                           cwd=tmp_path)
    deadline = time.monotonic() + 60
    started: set[int] = set()
    while time.monotonic() < deadline and len(started) < 3:      # labs check's grader process and its sandbox
        time.sleep(0.5)
        started = _descendants(run.pid)
    assert len(started) >= 3, started
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(p) for p in started):
        time.sleep(0.2)
    assert not [p for p in started if _alive(p)]


def test_a_reference_that_does_not_depend_on_the_student_is_computed_once_per_run(tmp_path, monkeypatch):
    from commlab.labs import reference_cache

    calls = []

    def compute():
        calls.append(1)
        return {"rebuilt": [("a model", None, [[1, 0]])], "problem": ""}

    assert reference_cache.cached("k", compute) == {"rebuilt": [["a model", None, [[1, 0]]]], "problem": ""}
    monkeypatch.setenv(reference_cache.ENV_VAR, str(tmp_path))          # inside a grading run
    first = reference_cache.cached("k", compute)
    assert reference_cache.cached("k", compute) == first and len(calls) == 2     # once outside, once in the run
    failed = reference_cache.cached("bad", lambda: {"problem": "DDP failed"}, keep=lambda v: not v["problem"])
    assert failed["problem"] and not (tmp_path / "bad.json").exists()           # a failure is not kept
    from commlab.labs.student_package import HIDDEN

    assert "labs/reference_cache.py" in HIDDEN                                   # not in a student's package
