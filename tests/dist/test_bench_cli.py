"""`commlab bench` end to end on real gloo ranks: --json on stdout, -J / --csv / --plot files, nccl-tests' exit
status, and a sweep stopped by a failed rank, the timeout or Ctrl-C that still prints and saves its rows."""
from __future__ import annotations

import csv
import json
import os
import signal
import sys
import threading
import time

import pytest

from commlab.cli import main
from commlab.nccl import parse_log

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SMALL = ["all_reduce", "-b", "1k", "-e", "8k", "-n", "2", "-w", "1", "--ranks", "2"]


def test_json_prints_json_and_the_files_hold_the_same_rows(tmp_path, capsys):
    paths = {k: tmp_path / f"out.{k}" for k in ("json", "csv", "png")}
    nccl = tmp_path / "nccl.json"
    assert main(["bench", *SMALL, "--json", "--json-out", str(paths["json"]), "-J", str(nccl),
                 "--csv", str(paths["csv"]), "--plot", str(paths["png"]), "--link", "pcie4"]) == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert printed == json.loads(paths["json"].read_text())
    sizes = [r["size_bytes"] for r in printed["rows"]]
    assert sizes == [1024, 2048, 4096, 8192] and "partial" not in printed
    doc = json.loads(nccl.read_text())
    assert [r["size"] for r in doc["results"]] == sizes and doc["version"] == 3
    assert doc["args"][:1] == sys.argv[:1] and f"# Writing JSON output to {nccl}" in err
    assert [int(r["size_bytes"]) for r in csv.DictReader(paths["csv"].open())] == sizes
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_first_line_names_commlab_and_torch(capsys):
    import torch

    from commlab import __version__

    assert main(["bench", *SMALL]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"# commlab version {__version__} torch={torch.__version__}"


def test_wrong_results_exit_1(monkeypatch, capsys):
    from commlab.bench import colls

    real_run = colls._run

    def corrupting_run(op, inp, out, *args):
        real_run(op, inp, out, *args)
        out[:1] += 1

    monkeypatch.setattr(colls, "_run", corrupting_run)  # forked ranks inherit the patch
    assert main(["bench", *SMALL, "-c", "3"]) == 1
    out, err = capsys.readouterr()
    assert "# Out of bounds values : 8 FAILED" in out and "with wrong elements (#wrong > 0)" in err


@pytest.mark.parametrize("min_bw, code, word", [("1000000", 1, "FAILED"), ("0", 0, "OK")])
def test_nccl_tests_min_bw_decides_the_exit_status(monkeypatch, capsys, min_bw, code, word):
    monkeypatch.setenv("NCCL_TESTS_MIN_BW", min_bw)
    assert main(["bench", *SMALL]) == code
    footer = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("# Avg bus bandwidth")]
    assert footer[0].endswith(" " + word)


def _fails_at_4k(op, inp, out, rank, *args):
    from commlab.bench.colls import _real_run

    if rank == 1 and out.numel() * out.element_size() >= 4096:
        raise RuntimeError("rank 1 gave up at 4 KiB")
    _real_run(op, inp, out, rank, *args)


def test_a_failed_rank_keeps_the_rows_measured_before(monkeypatch, tmp_path, capsys):
    from commlab.bench import colls

    monkeypatch.setattr(colls, "_real_run", colls._run, raising=False)
    monkeypatch.setattr(colls, "_run", _fails_at_4k)
    saved = tmp_path / "rows.json"
    assert main(["bench", *SMALL, "-w", "0", "-c", "0", "--json-out", str(saved)]) == 1
    out, err = capsys.readouterr()
    assert [r.size_bytes for r in parse_log(out).rows] == [1024, 2048]
    assert "# partial: rank 1 failed (RuntimeError: rank 1 gave up at 4 KiB); 2 of 4 sizes measured" in out
    assert json.loads(saved.read_text())["partial"].startswith("rank 1 failed")
    assert err.startswith("commlab bench: rank 1 of 2 (gloo) failed: RuntimeError: rank 1 gave up at 4 KiB")


def _hangs_at_4k(op, inp, out, rank, *args):
    import os
    import time

    from commlab.bench.colls import _real_run

    if out.numel() * out.element_size() >= 4096:
        if rank == 0 and os.environ.get("COMMLAB_TEST_MARK"):
            open(os.environ["COMMLAB_TEST_MARK"], "w").close()
        time.sleep(600)
    _real_run(op, inp, out, rank, *args)


def test_an_exceeded_timeout_says_the_sweep_needed_longer_and_keeps_its_rows(monkeypatch, capsys):
    from commlab.bench import colls

    monkeypatch.setattr(colls, "_real_run", colls._run, raising=False)
    monkeypatch.setattr(colls, "_run", _hangs_at_4k)
    assert main(["bench", *SMALL, "-w", "0", "-c", "0", "--timeout", "8"]) == 1
    out, err = capsys.readouterr()
    assert [r.size_bytes for r in parse_log(out).rows] == [1024, 2048]
    assert "# partial: the sweep did not finish within --timeout 8 s; 2 of 4 sizes measured" in out
    assert "the sweep needed longer than --timeout 8 s (2 of 4 sizes measured" in err and "--timeout SECONDS" in err


def test_ctrl_c_prints_and_saves_the_rows_measured(monkeypatch, tmp_path, capsys):
    from commlab.bench import colls

    mark, saved = tmp_path / "at-4k", tmp_path / "rows.csv"
    monkeypatch.setenv("COMMLAB_TEST_MARK", str(mark))
    monkeypatch.setattr(colls, "_real_run", colls._run, raising=False)
    monkeypatch.setattr(colls, "_run", _hangs_at_4k)

    def interrupt_once_hung():
        deadline = time.monotonic() + 120
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # rank 0's report of the 2 KiB row is on its way
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_hung, daemon=True).start()
    assert main(["bench", *SMALL, "-w", "0", "-c", "0", "--timeout", "120", "--csv", str(saved)]) == 130
    out, err = capsys.readouterr()
    assert [r.size_bytes for r in parse_log(out).rows] == [1024, 2048]
    assert "# partial: interrupted (Ctrl-C); 2 of 4 sizes measured" in out and "interrupted" in err
    assert saved.read_text().startswith("# partial: interrupted (Ctrl-C)")
