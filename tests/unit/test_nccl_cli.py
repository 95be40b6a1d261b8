"""``commlab nccl-tests`` through ``commlab.cli.main``."""
from __future__ import annotations

import io
import json
import re

import pytest

from commlab.cli import main
from commlab.nccl.examples import nccl_tests_log


def strip_meta(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines()
                     if not re.match(r"#\s*(source|command|nranks|collective|hardware|format):", ln))


def test_text_report(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(7)), "--link", "nvlink4"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^collective\s+all_reduce$", out, re.M)
    assert re.search(r"^ranks\s+8$", out, re.M)
    assert "483.35 GB/s" in out and "above the link" in out and "107.4 %" in out
    assert re.search(r"^half peak from\s+32 MiB$", out, re.M)
    assert re.search(r"^avg busbw\s+156.742 GB/s$", out, re.M)


def test_json_report(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(14)), "--json", "--link", "pcie3"]) == 0
    obj = json.loads(capsys.readouterr().out)
    for key in ("collective", "n_ranks", "format", "peak_busbw_GBps", "half_peak_size_bytes", "alpha_s",
                "beta_s_per_byte", "avg_busbw_GBps", "verdict", "unreadable", "rows"):
        assert key in obj
    assert (obj["collective"], obj["n_ranks"], obj["format"]) == ("all_reduce", 2, "modern")
    assert obj["peak_busbw_GBps"] == 4.0 and obj["half_peak_size_bytes"] == 131072
    assert obj["verdict"]["verdict"] == "low" and obj["verdict"]["percent"] == pytest.approx(25.0)
    assert len(obj["rows"]) == 28 and obj["rows"][0]["oop"]["time_us"] == 12.25 and obj["unreadable"] == []


def test_json_without_link_has_a_null_verdict(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(19)), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["verdict"] is None and obj["format"] == "legacy" and obj["bandwidth_rule"] == "legacy"


def test_stdin(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(nccl_tests_log(3).read_text()))
    assert main(["nccl-tests", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_ranks"] == 4


def test_unreadable_rows_are_listed(capsys, tmp_path):
    lines = nccl_tests_log(14).read_text().splitlines()
    cut = [i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit()][-1]
    lines = lines[:cut] + [lines[cut][:40]]
    path = tmp_path / "cut.txt"
    path.write_text("\n".join(lines))
    assert main(["nccl-tests", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unreadable"] == [{"line": cut + 1, "text": lines[cut]}]


def test_ranks_from_the_caller(capsys, tmp_path):
    path = tmp_path / "bare.txt"
    path.write_text(strip_meta(nccl_tests_log(1).read_text()))
    assert main(["nccl-tests", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ranks" in err and err.startswith("commlab nccl-tests: error:")
    assert main(["nccl-tests", str(path), "--ranks", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_ranks"] == 4


@pytest.mark.parametrize("argv, words", [
    (["nccl-tests", "/no/such/file.txt"], "cannot read LOG"),
    (["nccl-tests", "LOG", "--link", "nvlink9"], "unknown link"),
    (["nccl-tests", "LOG", "--ranks", "0"], "n_ranks"),
])
def test_user_errors_are_one_line_and_exit_2(argv, words, capsys):
    argv = [str(nccl_tests_log(1)) if a == "LOG" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_a_file_without_rows(capsys, tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("nothing to see\n")
    assert main(["nccl-tests", str(path)]) == 2
    assert "no nccl-tests table rows" in capsys.readouterr().err
