"""``commlab exercises``: list, key, check (exit 0/1/2) and progress."""
from __future__ import annotations

import json

import pytest

from commlab import exercises as ex
from commlab.cli import main


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("COMMLAB_PROGRESS", str(tmp_path / "progress.json"))
    monkeypatch.setenv("COMMLAB_LEARNER", "")
    monkeypatch.delenv("COMMLAB_LEARNER")


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_list(capsys):
    rows = _json(capsys, ["exercises", "list", "--json"])
    assert [r["id"] for r in rows] == list(ex.ids())
    assert {r["chapter"] for r in _json(capsys, ["exercises", "list", "--chapter", "5", "--json"])} == {"05"}
    assert main(["exercises", "list"]) == 0
    assert "ch05.ring-volume" in capsys.readouterr().out


def test_key_matches_the_library(capsys):
    rows = _json(capsys, ["exercises", "key", "--seed", "ada", "--json", "--solutions"])
    assert [r["answer"] for r in rows] == [e.answer for e in ex.key("ada")]
    assert all(r["seed"] == "ada" and r["solution"] for r in rows)
    assert main(["exercises", "key", "--seed", "ada", "--chapter", "09"]) == 0
    text = capsys.readouterr().out
    assert "ch09.dp-sync" in text and "ch05" not in text and "A: " in text


@pytest.mark.parametrize("answer, code", [("right", 0), ("wrong", 1), ("5 GB", 2), ("", 2), ("nan", 2)])
def test_check_exit_codes(capsys, answer, code):
    expected = ex.worked("ch09.dp-sync", "bob").expected
    given = {"right": f"{expected * 1e3} ms", "wrong": f"{expected * 7} s"}.get(answer, answer)
    assert main(["exercises", "check", "ch09.dp-sync", given, "--seed", "bob"]) == code
    assert capsys.readouterr().out.strip()


def test_check_unknown_id_is_one_line_exit_2(capsys):
    assert main(["exercises", "check", "ch99.nothing", "1", "--seed", "bob"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown exercise" in err


def test_check_records_only_when_asked(capsys, tmp_path):
    assert main(["exercises", "check", "ch01.mesh-links", "3", "--seed", "bob"]) in (0, 1)
    assert not (tmp_path / "progress.json").exists()
    assert main(["exercises", "check", "ch01.mesh-links", "3", "--seed", "bob", "--record"]) in (0, 1)
    capsys.readouterr()
    data = _json(capsys, ["exercises", "progress", "--json"])
    assert data["learners"]["bob"]["ch01.mesh-links"]["attempts"] == 1
    assert main(["exercises", "progress", "--file", str(tmp_path / "progress.json")]) == 0
    assert "bob: " in capsys.readouterr().out


def test_progress_reports_a_corrupt_file_in_one_line_and_leaves_it_alone(capsys, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{{{")
    assert main(["exercises", "progress", "--file", str(path)]) == 0
    captured = capsys.readouterr()
    assert "warning" in captured.err and "left as it is" in captured.err and "no progress" in captured.out
    assert captured.err.count("\n") == 1


def test_progress_never_moves_the_file_it_was_pointed_at(capsys, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes on chapter 5\n")
    assert main(["exercises", "progress", "--file", str(notes)]) == 0
    assert notes.read_text() == "my notes on chapter 5\n" and list(tmp_path.iterdir()) == [notes]
    assert "not a commlab-progress file" in capsys.readouterr().err


def test_progress_on_a_directory_or_an_unreadable_file_is_one_line_exit_2(capsys, tmp_path):
    import os

    assert main(["exercises", "progress", "--file", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read the progress file" in err and str(tmp_path) in err
    if os.geteuid() != 0:  # root reads anything
        locked_out = tmp_path / "p.json"
        locked_out.write_text("{}")
        locked_out.chmod(0)
        assert main(["exercises", "progress", "--file", str(locked_out)]) == 2
        assert "Permission denied" in capsys.readouterr().err


def test_missing_action_is_exit_2(capsys):
    assert main(["exercises"]) == 2
