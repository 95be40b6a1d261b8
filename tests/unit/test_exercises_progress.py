"""The progress file: counts, atomic writes, two writers at once, a corrupt file set aside and reported."""
from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from commlab import exercises as ex
from commlab.exercises import progress as store


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("COMMLAB_PROGRESS", str(tmp_path / "default" / "progress.json"))
    monkeypatch.setenv("COMMLAB_LEARNER", "")
    monkeypatch.delenv("COMMLAB_LEARNER")


def test_path_precedence(monkeypatch, tmp_path):
    assert store.progress_path(tmp_path / "x.json") == tmp_path / "x.json"
    assert store.progress_path() == tmp_path / "default" / "progress.json"
    monkeypatch.delenv("COMMLAB_PROGRESS")
    assert store.progress_path() == store.Path.home() / ".commlab" / "progress.json"


def test_attempts_solved_and_first_solved(tmp_path):
    path = tmp_path / "p.json"
    assert store.entry("ch05.ring-volume", "ada", path) == store.Entry()
    assert store.record_attempt("ch05.ring-volume", "ada", False, path).attempts == 1
    solved = store.record_attempt("ch05.ring-volume", "ada", True, path)
    assert solved.attempts == 2 and solved.solved and solved.first_solved
    again = store.record_attempt("ch05.ring-volume", "ada", False, path)
    assert again.solved and again.first_solved == solved.first_solved and again.attempts == 3
    data = json.loads(path.read_text())
    assert data["format"] == "commlab-progress" and data["learners"]["ada"]["ch05.ring-volume"]["attempts"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json", "p.json.lock"]  # no temporary file left


def test_check_records_and_unlocks_the_solution(tmp_path):
    path = tmp_path / "p.json"
    expected = ex.worked("ch05.ring-volume", "ada").expected
    assert not ex.solution("ch05.ring-volume", learner="ada", progress=path).unlocked
    first = ex.check("ch05.ring-volume", expected * 1.5, learner="ada", progress=path)
    assert first.expected is None
    assert ex.check("ch05.ring-volume", "words", learner="ada", progress=path).readable is False  # not counted
    ex.check("ch05.ring-volume", expected * 1.5, learner="ada", progress=path)
    assert store.entry("ch05.ring-volume", "ada", path).attempts == 2
    third = ex.check("ch05.ring-volume", expected * 1.5, learner="ada", progress=path)
    assert third.expected == expected and "solution('ch05.ring-volume')" in third.message
    shown = ex.solution("ch05.ring-volume", learner="ada", progress=path)
    assert shown.unlocked and "Worked solution" in shown.text and shown._repr_html_().startswith("<div")
    assert not ex.solution("ch05.ring-volume", learner="bob", progress=path).unlocked


def test_corrupt_file_is_set_aside_and_reported(tmp_path):
    path = tmp_path / "progress.json"
    path.write_text('{"format": "commlab-progress", "version": 1, "learn')
    with pytest.warns(store.ProgressWarning, match=str(path).replace("\\", "\\\\")) as caught:
        entry = store.record_attempt("ch01.move-time", "ada", True, path)
    assert entry.attempts == 1
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("progress.json.corrupt-")]
    assert len(aside) == 1 and aside[0].read_text().endswith('"learn')
    assert aside[0].name in str(caught[0].message)
    assert json.loads(path.read_text())["learners"]["ada"]["ch01.move-time"]["solved"] is True


@pytest.mark.parametrize("content", ["[]", '{"format": "other"}', "\xff\xfe", "",
                                     '{"format": "commlab-progress", "version": 1, "learners": {"a": {"x": '
                                     '{"attempts": -1, "solved": false, "first_solved": null}}}}'])
def test_unreadable_layouts_are_set_aside_on_load(tmp_path, content):
    path = tmp_path / "progress.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.warns(store.ProgressWarning, match="could not be read"):
        data = store.load(path)
    assert data["learners"] == {}
    assert not path.exists() and len(list(tmp_path.glob("progress.json.corrupt-*"))) == 1


def test_unwritable_progress_does_not_break_check(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.warns(store.ProgressWarning, match="not saved"):
        feedback = ex.check("ch05.ring-volume", "1 GB", learner="ada", progress=blocker / "p.json")
    assert feedback.readable


def test_concurrent_writers_never_corrupt_the_file(tmp_path):
    """Four processes record 200 attempts into one file at once; every attempt is counted."""
    path = str(tmp_path / "progress.json")
    n_workers, n_tasks = 4, 200
    tasks = [(f"ch05.ex-{k % 3}", "shared", k % 2 == 0, path) for k in range(n_tasks // 2)]
    tasks += [("ch01.own", f"worker-{k % n_workers}", False, path) for k in range(n_tasks // 2)]
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(n_workers)
    try:
        result = pool.starmap_async(store.record_attempt, tasks, chunksize=1)
        entries = result.get(timeout=120)
    finally:
        pool.terminate()
        pool.join()
    assert len(entries) == n_tasks
    data = json.loads(open(path).read())
    shared = data["learners"]["shared"]
    assert sum(r["attempts"] for r in shared.values()) == n_tasks // 2
    assert all(data["learners"][f"worker-{w}"]["ch01.own"]["attempts"] == n_tasks // 2 // n_workers
               for w in range(n_workers))
    assert sorted(e.attempts for e in entries[: n_tasks // 2]) != [1] * (n_tasks // 2)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp") or ".corrupt-" in p]
