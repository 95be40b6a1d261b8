"""The find-the-hang lab: the faults on real gloo ranks (what each rank's error and Flight Recorder say), the
reference diagnosis against each fault's own truth and against the unseen cases built by construction, the
realistic wrong answers the check catches, and the script alone and under torchrun."""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from commlab.errors import CommlabError
from commlab.labs import hang
from commlab.labs.checks import find_the_hang as checks
from commlab.labs.solutions.find_the_hang import call_key, find_the_hang

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "labs" / "scripts" / "find_the_hang.py"
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE")


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def test_faults_change_one_ranks_calls_and_know_their_answer():
    names = lambda fault, rank: [op.name for op in fault.calls_of(rank)]   # noqa: E731
    assert names(hang.FAULTS["skip"], 2) == ["all_reduce", "broadcast", "barrier"]
    assert names(hang.FAULTS["order"], 1) == ["all_reduce", "broadcast", "all_reduce", "barrier"]
    assert [op.numel for op in hang.FAULTS["size"].calls_of(3)] == [4, 2, 4, 0]
    assert names(hang.FAULTS["dies"], 2) == ["all_reduce", "all_reduce"]
    assert all(names(f, 0) == [op.name for op in hang.STEP] for f in hang.FAULTS.values())
    assert hang.FAULTS["dies"].truth == {"rank": 2, "call": 3} and hang.FAULTS["ifname"].truth is None
    for bad, words in (((hang.Fault, "hang", 1), "unknown fault 'hang'"), ((hang.Fault, "skip", 4, 1), "from 0 to 3"),
                       ((hang.Fault, "order", 1, 4), "call from 1 to 3")):
        with pytest.raises(CommlabError, match=words):
            bad[0](*bad[1:])


def test_a_bad_interface_is_not_one_of_this_machines():
    import socket

    assert hang.bad_interface() not in {name for _, name in socket.if_nameindex()}


@pytest.mark.parametrize("name", ["skip", "order", "size", "dies", "ifname"])
def test_each_fault_on_real_ranks_leaves_what_the_lab_says(name, no_child_left):
    run = hang.run_fault(name)
    fault = run.fault
    assert find_the_hang(run.records) == fault.truth, hang.run_lines(run)
    if name == "dies":
        assert run.records[2] is None and "exited with code 3" in run.launch
        assert all(r in run.errors for r in (0, 1, 3))             # the survivors wrote their records
    elif name == "ifname":
        assert "Unable to find address for" in run.errors[2] and all(run.records[r] == [] for r in range(4))
    else:
        assert not run.launch and all("Timed out waiting 2000ms" in run.errors[r] or "Connection" in run.errors[r]
                                      for r in range(4))
        k = fault.call
        culprit = [e for e in run.records[fault.rank] if e["collective_seq_id"] == k][0]
        others = {call_key(e) for r in range(4) if r != fault.rank for e in run.records[r] if e["collective_seq_id"] == k}
        assert call_key(culprit) not in others
    entries = [e for rec in run.records.values() if rec for e in rec]
    assert run.source == "the Flight Recorder" and all(e["state"] == "scheduled" for e in entries)


def test_detail_names_the_mismatch_at_once(no_child_left):
    run = hang.run_fault("order", debug="DETAIL")
    assert all("Detected mismatch between collectives" in e for e in run.errors.values())
    assert "OpType=BROADCAST" in run.errors[1] and "SequenceNumber=1" in run.errors[1]
    assert "TensorDeviceTypes" not in hang.shorten(run.errors[1], 1000)


def test_the_launchers_timeout_names_where_each_rank_waits(no_child_left):
    # 12 s: every rank must reach its hung call before the timeout, also on a loaded 2-core CI machine
    run = hang.run_fault("order", group_timeout_s=None, launch_timeout_s=12)
    assert "did not finish within 12 s" in run.launch and "rank 1 in dist.broadcast" in run.launch
    assert all(record is None for record in run.records.values())


def test_the_reference_is_right_on_every_unseen_case():
    for what, records, want in checks.unseen_cases():
        assert find_the_hang(records) == want, what
    assert checks.check_find_the_hang(find_the_hang, live=False).ok


def _vs_rank_0(records):
    base = records[0] or []
    for rank, entries in sorted(records.items()):
        for a, b in zip(base, entries or []):
            if call_key(a) != call_key(b):
                return {"rank": rank, "call": b["collective_seq_id"]}
    return None


def _by_position(records):
    present = {r: [call_key(e) for e in es] for r, es in records.items() if es is not None}
    for i in range(min(len(v) for v in present.values())):
        keys = {r: v[i] for r, v in present.items()}
        if len(set(keys.values())) > 1:
            usual = Counter(keys.values()).most_common(1)[0][0]
            return {"rank": min(r for r, k in keys.items() if k != usual), "call": i + 1}
    return find_the_hang(records)


def _names_only(records):
    return find_the_hang({r: None if es is None else [{**e, "input_sizes": [], "input_dtypes": []} for e in es]
                          for r, es in records.items()})


def _fewest_entries(records):
    lengths = {r: -1 if es is None else len(es) for r, es in records.items()}
    if len(set(lengths.values())) == 1:
        return find_the_hang(records)
    return {"rank": min(lengths, key=lengths.get), "call": max(lengths.values())}


def _zero_based(records):
    found = find_the_hang(records)
    return found and {"rank": found["rank"], "call": found["call"] - 1}


def _ignores_silent_ranks(records):
    return find_the_hang({r: es for r, es in records.items() if es is not None})


def _majority_when_behind(records):
    last = {r: max((e["collective_seq_id"] for e in es), default=0) for r, es in records.items() if es is not None}
    if None not in records.values() and len(set(last.values())) > 1:
        usual = Counter(last.values()).most_common(1)[0][0]
        return {"rank": min(r for r, end in last.items() if end != usual), "call": min(last.values()) + 1}
    return find_the_hang(records)


@pytest.mark.parametrize("wrong, words", [
    (_vs_rank_0, "rank 0 skips call 2"), (_by_position, "ring buffers dropped"), (_names_only, "8 elements"),
    (_fewest_entries, "rank 0 got one call further"), (_zero_based, "collective_seq_id, from 1"),
    (_ignores_silent_ranks, "left no record"), (_majority_when_behind, "the four are behind"),
], ids=lambda v: getattr(v, "__name__", "")[1:] if callable(v) else "")
def test_realistic_wrong_answers_are_caught_and_named(wrong, words):
    problem = checks.check_find_the_hang(wrong, live=False).problem
    assert problem.startswith("an unseen fault (") and words in problem, problem


def test_the_check_reads_the_skeleton_and_wrong_shapes():
    def skeleton(records):
        raise NotImplementedError("write find_the_hang")

    assert "find_the_hang is not written yet (write find_the_hang)" in checks.check_find_the_hang(skeleton, live=False).problem
    assert "must return {'rank': ..., 'call': ...} or None, got (0, 2)" in checks.check_find_the_hang(
        lambda records: (0, 2), live=False).problem


def _script(args, torchrun=False):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    head = (["-m", "torch.distributed.run", "--nproc-per-node", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
             "127.0.0.1:0"] if torchrun else [])
    return subprocess.run([sys.executable, *head, str(SCRIPT), *args], capture_output=True, text=True, timeout=240,
                          env=env)


def test_script_alone_runs_every_fault_and_under_torchrun_the_survivable_ones(no_child_left):
    alone = _script(["--ranks", "4"])
    assert alone.returncode == 0, (alone.stdout + alone.stderr)[-3000:]
    assert alone.stdout.splitlines()[0].startswith("find_the_hang: running the reference solution")
    assert alone.stdout.count("(right)") == 5 and "find_the_hang on 12 unseen faults: right" in alone.stdout
    launched = _script(["--group-timeout", "1"], torchrun=True)
    assert launched.returncode == 0, (launched.stdout + launched.stderr)[-3000:]
    assert launched.stdout.count("(right)") == 3 and "2 ranks: rank 1 swaps calls 2 and 3" in launched.stdout


def test_script_on_two_ranks_skips_the_size_fault_and_says_why():
    done = _script(["--ranks", "2"])
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "size: skipped on 2 ranks" in done.stdout and done.stdout.count("(right)") == 4


def test_script_refuses_a_bad_group_timeout():
    done = _script(["--group-timeout", "0"])
    assert done.returncode == 2 and "--group-timeout must be a number of seconds > 0, got 0.0" in done.stderr
