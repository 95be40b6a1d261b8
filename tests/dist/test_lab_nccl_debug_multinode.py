"""The NCCL debug and multi-node lab: the log answers against commlab.nccl.read_debug_log (two independent
readers of the same real logs), the verdict rule against commlab.nccl.verdict on the real nccl-tests runs, and
the script run for real as two torchrun "nodes" on this machine."""
from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from commlab import hardware, nccl
from commlab.labs.solutions.nccl_debug_multinode import (
    GOALS, answer_log_questions, classify_run, env_for_goals, peak_busbw_GBps,
)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "labs" / "scripts" / "nccl_debug_multinode.py"
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")

SYNTHETIC_LOG = """\
gpu7:101:101 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>
NCCL version 2.19.3+cuda12.3
gpu7:101:120 [0] NCCL INFO Channel 00/04 :    0   1
gpu7:101:120 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
gpu8:202:230 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct
gpu8:202:230 [1] NCCL INFO 4 coll channels, 0 collnet channels, 0 nvls channels, 4 p2p channels
"""


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


@pytest.mark.parametrize("path", nccl.debug_logs(), ids=lambda p: p.stem)


def test_log_answers_agree_with_read_debug_log(path):
    text = path.read_text()
    ref = nccl.read_debug_log(text)
    got = answer_log_questions(text)
    assert got["nccl_version"] == (None if ref.nccl_version is None else ref.nccl_version.split("+")[0])
    assert got["n_channels"] == ref.n_channels
    assert got["n_hosts"] == len(ref.hosts)
    between = [c.transport for c in ref.connections if {c.src, c.dst} == {0, 1}]
    assert got["transport_0_1"] == (between[0] if between else None)


def test_log_answers_on_a_hand_written_log():
    assert answer_log_questions(SYNTHETIC_LOG) == {"nccl_version": "2.19.3", "n_channels": 4,
                                                   "transport_0_1": "SHM/direct/direct", "n_hosts": 2}
    assert answer_log_questions("no NCCL here") == {"nccl_version": None, "n_channels": None,
                                                    "transport_0_1": None, "n_hosts": 0}


def test_every_goal_names_a_catalogued_variable_by_its_current_name():
    answers = env_for_goals()
    assert set(answers) == set(GOALS) and len(answers) == 8
    for answer in answers.values():
        names = [answer] if isinstance(answer, str) else [n for n in answer if n != "timeout"]
        for name in names:
            assert name in nccl.names() and nccl.lookup(name).name == name
    assert answers["make a hung collective fail the job instead of hanging"] == ("TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                                                 "timeout")


@pytest.mark.parametrize("path", nccl.nccl_tests_logs(), ids=lambda p: p.stem)
def test_peak_busbw_is_the_summary_peak(path):
    log = nccl.parse_log(path.read_text())
    assert peak_busbw_GBps(log.rows) == nccl.summarize(log).peak_busbw_GBps


def test_classify_run_agrees_with_verdict_around_the_thresholds():
    for link in ("pcie3", "nvlink4", "ib-ndr"):
        unidir = hardware.link(link).unidir_GBps
        for fraction in (0.0, 0.25, 0.6999, 0.70, 0.85, 1.0, 1.0001, 1.07, 3.0):
            peak = fraction * unidir
            assert classify_run(peak, unidir) == nccl.verdict(peak, link).verdict, (link, fraction)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_script_as_two_torchrun_nodes_on_this_machine(tmp_path):
    port, env = _free_port(), {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    procs = []
    for node in (0, 1):
        command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank", str(node),
                   "--nproc-per-node", "1", "--rdzv-endpoint", f"127.0.0.1:{port}", str(SCRIPT), "--size", "64K",
                   "--backend", "gloo",  # two "nodes" on one machine would share its GPU, which NCCL refuses
                   "--nccl-debug-dir", str(tmp_path / "logs")]
        procs.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                      cwd=tmp_path, start_new_session=True))
    try:
        outputs = [proc.communicate(timeout=150) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    for proc, (_, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-3000:]
    node0, node1 = outputs[0][0], outputs[1][0]
    assert "2 ranks on 1 host(s), gloo" in node0 and "rendezvous at 127.0.0.1:" in node0
    rows = [line.split() for line in node0.splitlines() if line.split()[:1] in (["0"], ["1"])]
    assert [(r[0], r[1], r[2], r[-1]) for r in rows] == [("0", "0", "0", "correct"), ("1", "1", "0", "correct")]
    assert "no NCCL log: this run used gloo" in node0
    assert node0.startswith("nccl_debug_multinode: running the reference solution")   # one notice per node
    assert node1.splitlines()[0].startswith("nccl_debug_multinode: running the reference solution")
    assert node1.splitlines()[1].startswith("rank 1 of 2 (node 1, local rank 0)") and "2 ranks on" not in node1


def test_script_refuses_a_bad_size_in_one_line(capsys):
    spec = importlib.util.spec_from_file_location("nccl_debug_multinode_script", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--size", "6"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nccl_debug_multinode.py: error: --size must be a positive multiple of 4") and \
        err.count("\n") == 1
    assert script.debug_environment("/tmp/x")["NCCL_DEBUG_FILE"] == "/tmp/x/nccl.%h.%p.log"
