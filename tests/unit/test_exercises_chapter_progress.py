"""chapter_progress: one learner's progress file summed per chapter (chapter 10's progress bars)."""
from __future__ import annotations

import json

import pytest

from commlab import exercises as ex
from commlab.errors import CommlabError
from commlab.exercises import progress as store


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("COMMLAB_PROGRESS", str(tmp_path / "default" / "progress.json"))
    monkeypatch.setenv("COMMLAB_LEARNER", "")          # recorded, so set_learner's change is undone after
    monkeypatch.delenv("COMMLAB_LEARNER")


def write_progress(path, learners):
    """A progress file written by hand in the documented layout (not by the code under test)."""
    path.write_text(json.dumps({"format": "commlab-progress", "version": 1, "learners": learners}))


def record(attempts, solved):
    return {"attempts": attempts, "solved": solved, "first_solved": "2025-01-01T00:00:00+00:00" if solved else None}


def test_without_a_file_everything_is_untouched(tmp_path):
    counts = ex.chapter_progress(path=tmp_path / "none.json")
    assert list(counts) == sorted({e.chapter for e in ex.exercises()})
    for chapter, c in counts.items():
        assert (c.solved, c.attempted, c.untouched) == (0, 0, len(ex.ids(chapter)))
    assert sum(c.total for c in counts.values()) == len(ex.ids())


def test_counts_from_a_hand_written_file(tmp_path):
    ch05, ch09 = ex.ids("05"), ex.ids("09")
    path = tmp_path / "p.json"
    write_progress(path, {
        "ada": {ch05[0]: record(2, True), ch05[1]: record(1, False), ch05[2]: record(0, False),
                ch09[0]: record(5, False), "ch99.gone": record(3, True)},
        "bob": {x: record(1, True) for x in ch05},
    })
    counts = ex.chapter_progress("ada", path)
    assert counts["05"] == ex.ChapterProgress(solved=1, attempted=1, untouched=len(ch05) - 2)
    assert counts["09"] == ex.ChapterProgress(solved=0, attempted=1, untouched=len(ch09) - 1)
    assert counts["01"] == ex.ChapterProgress(untouched=len(ex.ids("01")))
    assert sum(c.total for c in counts.values()) == len(ex.ids())          # the unknown id is not counted
    assert ex.chapter_progress("bob", path)["05"] == ex.ChapterProgress(solved=len(ch05))


def test_follows_real_attempts_and_the_learner_from_the_environment():
    first, second = ex.ids("05")[:2]
    store.record_attempt(first, "ada lovelace", False)
    store.record_attempt(first, "ada lovelace", True)
    store.record_attempt(second, "ada lovelace", False)
    assert ex.chapter_progress(" Ada  Lovelace ")["05"].solved == 1                   # the name is normalised
    assert ex.chapter_progress(" Ada  Lovelace ")["05"].attempted == 1
    assert ex.chapter_progress()["05"].solved == 0                                     # the default learner
    ex.set_learner("Ada Lovelace")
    assert ex.chapter_progress()["05"] == ex.chapter_progress("ada lovelace")["05"]


def test_checks_through_the_public_api_count(tmp_path):
    right, wrong = ex.ids("09")[:2]
    path = tmp_path / "p.json"
    assert ex.check(right, ex.worked(right, "grace").expected, learner="grace", progress=path).correct
    assert not ex.check(wrong, -1.0, learner="grace", progress=path).correct
    counts = ex.chapter_progress("grace", path)["09"]
    assert counts == ex.ChapterProgress(solved=1, attempted=1, untouched=len(ex.ids("09")) - 2)


def test_bad_learner_is_a_commlab_error(tmp_path):
    with pytest.raises(CommlabError, match="learner"):
        ex.chapter_progress("   ", tmp_path / "p.json")
