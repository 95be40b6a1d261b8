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


@pytest.mark.parametrize("content, learners", [
    ("[]", {}), ('{"format": "other"}', {}), ("\xff\xfe", {}), ("", {}),
    ('{"format": "commlab-progress", "version": 1, "learners": {"a": {"x": '
     '{"attempts": -1, "solved": false, "first_solved": null}}}}', {"a": {}})])
def test_reading_a_damaged_file_warns_and_leaves_it_where_it_is(tmp_path, content, learners):
    path = tmp_path / "progress.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.warns(store.ProgressWarning, match="damaged .*the file was left as it is"):
        data = store.load(path)
    assert data["learners"] == learners
    assert path.read_bytes() == content.encode("latin-1") and list(tmp_path.iterdir()) == [path]


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
    with open(path) as f:
        data = json.load(f)
    shared = data["learners"]["shared"]
    assert sum(r["attempts"] for r in shared.values()) == n_tasks // 2
    assert all(data["learners"][f"worker-{w}"]["ch01.own"]["attempts"] == n_tasks // 2 // n_workers
               for w in range(n_workers))
    assert sorted(e.attempts for e in entries[: n_tasks // 2]) != [1] * (n_tasks // 2)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp") or ".corrupt-" in p]


GOOD = {"attempts": 2, "solved": True, "first_solved": "2025-01-01T00:00:00+00:00"}


def test_a_newer_versions_extra_keys_are_ignored_and_kept(tmp_path):
    path = tmp_path / "progress.json"
    newer = {**GOOD, "solved": False, "first_solved": None, "hint_level": 2}
    path.write_text(json.dumps({"format": "commlab-progress", "version": 1, "learners": {"ada": {
        "ch05.ring-volume": newer}}}))
    assert store.entry("ch05.ring-volume", "ada", path) == store.Entry(2, False, None)
    assert not ex.solution("ch05.ring-volume", learner="ada", progress=path).unlocked
    feedback = ex.check("ch05.ring-volume", "1 GB", learner="ada", progress=path)  # the third attempt
    assert "solution('ch05.ring-volume')" in feedback.message
    assert json.loads(path.read_text())["learners"]["ada"]["ch05.ring-volume"] == {**newer, "attempts": 3}


def _cut_file(tmp_path):
    """A progress file of two complete entries, cut off in the middle of a third."""
    whole = json.dumps({"format": "commlab-progress", "learners": {"ada": {
        "ch01.a": GOOD, "ch01.b": GOOD, "ch01.c": GOOD}}, "version": 1}, indent=1, sort_keys=True)
    path = tmp_path / "progress.json"
    path.write_text(whole[:whole.rindex('"ch01.c"') + 20])
    return path


def test_a_cut_off_file_gives_up_only_what_is_missing(tmp_path):
    path = _cut_file(tmp_path)
    before = path.read_text()
    with pytest.warns(store.ProgressWarning, match="2 entries could be read; the file was left as it is"):
        data = store.load(path)
    assert data["learners"] == {"ada": {"ch01.a": GOOD, "ch01.b": GOOD}}
    assert path.read_text() == before


def test_writing_to_a_damaged_file_moves_it_aside_whole_and_keeps_its_good_entries(tmp_path):
    path = _cut_file(tmp_path)
    before = path.read_text()
    with pytest.warns(store.ProgressWarning, match="moved to .*: 2 entries could be read"):
        store.record_attempt("ch01.d", "ada", False, path)
    aside = list(tmp_path.glob("progress.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == before
    assert set(json.loads(path.read_text())["learners"]["ada"]) == {"ch01.a", "ch01.b", "ch01.d"}


def test_an_invalid_entry_is_dropped_and_counted_the_others_kept(tmp_path):
    path = tmp_path / "progress.json"
    path.write_text(json.dumps({"format": "commlab-progress", "version": 1, "learners": {
        "ada": {"ch01.a": GOOD, "ch01.b": {"attempts": "two"}}, "bob": {"ch01.a": GOOD}}}))
    with pytest.warns(store.ProgressWarning, match="2 entries could be read, 1 could not"):
        data = store.load(path)
    assert data["learners"] == {"ada": {"ch01.a": GOOD}, "bob": {"ch01.a": GOOD}}


def test_the_lock_is_filelocks_and_a_held_lock_times_out_with_its_path(tmp_path):
    from filelock import FileLock

    from commlab.errors import CommlabError
    from commlab.exercises import locking

    path = tmp_path / "progress.json"
    with (FileLock(str(path) + ".lock"),
          pytest.raises(CommlabError, match=r"could not lock .*progress\.json\.lock within 0\.2 s"),
          locking.locked(path, timeout_s=0.2)):
        pass
    with locking.locked(path, timeout_s=0.2):  # free again once the other holder let go
        pass
    with open(locking.__file__) as f:
        assert "O_EXCL" not in f.read().split('"""', 2)[2]
