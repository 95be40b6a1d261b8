"""The collectives lab's answers and checks: the table against closed forms, every collective on real gloo
ranks against the numpy reference, and its script (labs/scripts/collectives.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from commlab.labs.solutions import collectives as lab

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SCRIPT = Path(__file__).resolve().parents[2] / "labs" / "scripts" / "collectives.py"


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def _run(args: list[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout_s)


def test_the_hand_worked_table_agrees_with_commlab_collectives():
    rows, problems = lab.grade_predictions(lab.my_predictions())
    assert problems == [] and len(rows) == 27 and all(right for *_, right in rows)


@pytest.mark.parametrize("n_ranks", [2, 3, 5])
def test_answers_follow_closed_forms(n_ranks):
    """Rank r holds 10 r + [1..L], float32 (4 B); rank 1 sends; closed forms written out independently."""
    length = 2 * n_ranks
    a = lab.answers(n_ranks, length)
    total_last = sum(10 * r + length for r in range(n_ranks))
    assert (a["all_reduce"].n_out, a["all_reduce"].last) == (length, total_last)
    assert a["all_reduce"].sent_nbytes == 2 * (n_ranks - 1) / n_ranks * 4 * length
    assert (a["all_gather"].n_out, a["all_gather"].last) == (n_ranks * length, 10 * (n_ranks - 1) + length)
    assert a["all_gather"].sent_nbytes == (n_ranks - 1) * 4 * length
    assert a["reduce_scatter"].n_out == 2 and a["reduce_scatter"].last == sum(10 * r + 4 for r in range(n_ranks))
    assert a["all_to_all"].last == 10 * (n_ranks - 1) + 4           # chunk 1 = elements 3, 4 of every rank
    assert a["scatter"].sent_nbytes == 0 and a["gather"].sent_nbytes == 4 * length
    assert a["broadcast"].sent_nbytes == (4 * length if n_ranks > 2 else 0)   # rank 1 is last in a 2-rank chain
    assert a["barrier"] == lab.Answer(0, None, 0.0)


def test_grading_names_the_wrong_entries():
    wrong = dict(lab.my_predictions(), all_reduce=(8, 92, 64), gather=(8, 38, 32))
    rows, problems = lab.grade_predictions(wrong)
    assert problems == ["all_reduce: sent_nbytes is 48.0, not 64", "gather: n_out is 32, not 8"]
    assert lab.grade_predictions([1, 2])[1][0].startswith("my_predictions() must return a dict")


@pytest.mark.parametrize("n_ranks,length", [(4, 8), (3, 6)])
def test_every_collective_matches_the_numpy_reference(n_ranks, length):
    outcome = lab.check_collectives(lab.run_collective, n_ranks, length)
    assert outcome.ok, outcome.problem
    assert outcome.details["verdicts"] == dict.fromkeys(lab.OPS)


def _half_written(op, x, rank, n_ranks, root=0):
    """all_gather returns its input; barrier does not wait; the rest is not written."""
    if op in ("broadcast", "all_reduce"):
        return lab.run_collective(op, x, rank, n_ranks, root)
    if op == "all_gather":
        return x.clone()
    if op == "barrier":
        return None
    raise NotImplementedError(f"write {op}")


def test_the_live_check_names_what_is_missing_or_wrong():
    outcome = lab.check_collectives(_half_written, 4, 8)
    verdicts = outcome.details["verdicts"]
    assert verdicts["broadcast"] is None and verdicts["all_reduce"] is None
    assert verdicts["all_gather"] == "all_gather on rank 0: expected 32 elements, got 8"
    assert verdicts["reduce"] == "reduce: not written yet (write reduce)"
    assert "left" in verdicts["barrier"] and "before the last rank arrived" in verdicts["barrier"]
    assert outcome.problem == verdicts["reduce"]


def _only_reduce_scatter(x, n_ranks):
    import torch.distributed as dist

    shard = x.new_empty(x.numel() // n_ranks)
    dist.reduce_scatter_single(shard, x)
    return shard.repeat(n_ranks)


def test_all_reduce_by_halves_against_dist_all_reduce():
    assert lab.check_all_reduce_by_halves(lab.all_reduce_by_halves, 4, length=64).ok
    wrong = lab.check_all_reduce_by_halves(_only_reduce_scatter, 4, length=64)
    assert not wrong.ok and wrong.problem.startswith("all_reduce_by_halves on rank 0: element")


def test_script_runs_by_itself():
    done = _run([str(SCRIPT), "--ranks", "3"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("matches the numpy reference") == 8 and "equals dist.all_reduce" in done.stdout


def test_script_runs_under_torchrun():
    done = _run(["-m", "torch.distributed.run", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                 "--rdzv-endpoint", "127.0.0.1:0", str(SCRIPT)])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "collectives lab on 2 ranks, backend gloo" in done.stdout and "bytes sent per rank" in done.stdout
