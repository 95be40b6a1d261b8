"""The bandwidth sweep lab: its reference solutions against independent references (nccl-tests' factor table,
numpy, commlab.cost's fit), and its script run for real on gloo ranks, alone and under torchrun."""
from __future__ import annotations

import importlib.util
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from commlab import collectives, cost, nccl
from commlab.errors import CommlabError
from commlab.labs.solutions.bandwidth_sweep import bus_factor, least_squares_alpha_beta

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "labs" / "scripts" / "bandwidth_sweep.py"
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")

# nccl-tests doc/PERFORMANCE.md, written out here independently of commlab.collectives
NCCL_TESTS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n, "scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0,
}


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}


def load_script():
    spec = importlib.util.spec_from_file_location("bandwidth_sweep_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("op", sorted(NCCL_TESTS_FACTOR))
def test_bus_factor_is_nccl_tests_table(op):
    for n in range(2, 33):
        assert math.isclose(bus_factor(op, n), NCCL_TESTS_FACTOR[op](n))
        assert math.isclose(bus_factor(op, n), collectives.busbw_factor(op, n))
    assert set(NCCL_TESTS_FACTOR) == set(collectives.OPS)


def test_bus_factor_refuses_an_unknown_collective():
    with pytest.raises(CommlabError, match="unknown collective 'allgather_v'"):
        bus_factor("allgather_v", 4)


def test_fit_recovers_an_exact_line_like_numpy():
    sizes = 2.0 ** np.arange(3, 24, 2)
    t_s = 7e-6 + sizes / 25e9
    alpha, beta = least_squares_alpha_beta(sizes, t_s)
    slope, intercept = np.polyfit(sizes, t_s, 1)            # exact data: every least squares agrees
    assert math.isclose(alpha, intercept, rel_tol=1e-6) and math.isclose(beta, slope, rel_tol=1e-6)
    assert math.isclose(alpha, 7e-6, rel_tol=1e-9) and math.isclose(1 / beta, 25e9, rel_tol=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_fit_equals_commlab_fit_on_noisy_sweeps(seed):
    rng = np.random.default_rng(seed)
    sizes = 4.0 ** np.arange(2, 12)
    alpha = rng.choice([0.0, 1e-6, 3e-4])                   # 0: the free fit often goes negative
    t_s = (alpha + sizes / rng.uniform(0.1e9, 50e9)) * rng.lognormal(0, 0.3, sizes.size) + 1e-9
    got = least_squares_alpha_beta(sizes, t_s)
    ref = cost.fit_alpha_beta(sizes, t_s)
    assert got[0] >= 0 and got[1] >= 0
    assert math.isclose(got[0], ref.alpha_s, rel_tol=1e-7, abs_tol=1e-15)
    assert math.isclose(got[1], ref.beta_s_per_byte, rel_tol=1e-7, abs_tol=1e-21)


def test_fit_pins_a_negative_alpha_to_zero():
    sizes, t_s = np.array([1e3, 1e4, 1e5, 1e6]), np.array([0.2e-6, 8e-6, 1e-4, 1e-3])
    free = np.linalg.lstsq(np.column_stack([np.ones(4), sizes]) / t_s[:, None], np.ones(4), rcond=None)[0]
    assert free[0] < 0
    alpha, beta = least_squares_alpha_beta(sizes, t_s)
    assert alpha == 0.0
    assert math.isclose(beta, np.sum(sizes / t_s) / np.sum((sizes / t_s) ** 2))   # closed form, alpha = 0


def test_script_sweeps_two_ranks_and_reports():
    done = subprocess.run([sys.executable, str(SCRIPT), "--ranks", "2", "-b", "1K", "-e", "16K", "-f", "4",
                           "-n", "2", "-w", "1"], capture_output=True, text=True, timeout=120, env=clean_env())
    assert done.returncode == 0, done.stderr[-3000:]
    log = nccl.parse_log(done.stdout)
    assert (log.collective, log.n_ranks) == ("all_reduce", 2)
    assert [row.size_bytes for row in log.rows] == [1024, 4096, 16384]
    assert all(m.wrong == 0 for row in log.rows for m in (row.oop, row.ip))
    assert "largest difference from the table's busbw column 0 GB/s" in done.stdout
    assert "8x H100 (fixture 07)" in done.stdout and "above the link" in done.stdout


def test_script_under_torchrun_prints_once_from_rank_0(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip(f"no torchrun next to {sys.executable}")
    command = [str(torchrun), "--nproc-per-node", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:0",
               str(SCRIPT), "--op", "all_gather", "-b", "256", "-e", "1K", "-f", "2", "-n", "2", "-w", "1"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
                            cwd=tmp_path, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=150)
    finally:                                      # torchrun's workers too: kill the whole session on a timeout
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert out.count("# Collective test starting: all_gather_perf") == 1
    log = nccl.parse_log(out)
    assert log.n_ranks == 2 and [row.size_bytes for row in log.rows] == [256, 512, 1024]


def test_script_turns_a_bad_flag_into_one_line(capsys):
    script = load_script()
    assert script.main(["--op", "allgatherv"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bandwidth_sweep.py: error: unknown collective") and err.count("\n") == 1
    assert script.main(["--link", "nvlink9"]) == 2
    assert "nvlink9" in capsys.readouterr().err
