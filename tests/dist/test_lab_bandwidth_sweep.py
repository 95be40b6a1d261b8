"""The bandwidth sweep lab: its reference solutions against independent references (nccl-tests' factor table,
numpy, commlab.cost's fits), the protocol_time_s check against the mistakes it must catch, and its script run for
real on gloo ranks, alone and under torchrun."""
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
from commlab.tuner.predict import predict
from commlab.errors import CommlabError
from commlab.labs.checks import bandwidth_sweep as checks
from commlab.labs.solutions.bandwidth_sweep import bus_factor, least_squares_alpha_beta, protocol_time_s

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


def _by_hand(nbytes, regimes) -> list[float]:
    """The model's time written out size by size: the last regime that starts at or below the size."""
    out = []
    for s in np.atleast_1d(nbytes):
        mine = [r for r in regimes if r.first_nbytes <= s][-1]
        out.append(mine.alpha_s + mine.beta_s_per_byte * s)
    return out


@pytest.mark.parametrize("key", [7, 8, 9, 11, 12, 13, 14, 19, 20, 23])
def test_protocol_time_s_is_the_fitted_model_on_real_logs(key):
    rows = nccl.parse_log(nccl.nccl_tests_log(key).read_text()).rows
    sizes = np.array([r.size_bytes for r in rows], dtype=float)
    fit = cost.fit_protocol_model(sizes, np.array([r.oop.time_us for r in rows]) * 1e-6)
    probe = np.concatenate([sizes, [b for r in fit.regimes[1:] for b in (r.first_nbytes, r.first_nbytes * 0.999)]])
    np.testing.assert_allclose(protocol_time_s(probe, fit.regimes), _by_hand(probe, fit.regimes), rtol=1e-12)
    np.testing.assert_allclose(protocol_time_s(probe, fit.regimes), fit.time_s(probe), rtol=1e-12)


def _lower_envelope(nbytes, regimes):
    s = np.asarray(nbytes, dtype=float)
    return np.min([r.alpha_s + r.beta_s_per_byte * s for r in regimes], axis=0)


def _boundary_to_old_regime(nbytes, regimes):
    s = np.asarray(nbytes, dtype=float)
    k = np.searchsorted([r.first_nbytes for r in regimes[1:]], s, side="left")
    return np.array([r.alpha_s for r in regimes])[k] + np.array([r.beta_s_per_byte for r in regimes])[k] * s


def _gb_per_s_as_bytes(nbytes, regimes):
    s = np.asarray(nbytes, dtype=float)
    k = np.searchsorted([r.first_nbytes for r in regimes[1:]], s, side="right")
    return np.array([r.alpha_s for r in regimes])[k] + s / np.array([r.bw_GBps for r in regimes])[k]


def _first_regime_only(nbytes, regimes):
    return regimes[0].alpha_s + regimes[0].beta_s_per_byte * np.asarray(nbytes, dtype=float)


@pytest.mark.parametrize("wrong, says", [
    (_lower_envelope, "you took the fastest line"), (_boundary_to_old_regime, "belongs to it"),
    (_gb_per_s_as_bytes, "seconds per byte"), (_first_regime_only, "it lies in regime LL128"),
    (lambda nbytes, regimes: float(protocol_time_s(np.asarray(nbytes).ravel()[0], regimes)), "returned shape"),
])
def test_protocol_time_s_check_catches_realistic_mistakes(wrong, says):
    outcome = checks.check_protocol_time_s(wrong)
    assert not outcome.ok and says in outcome.problem, outcome.problem
    assert checks.check_protocol_time_s(protocol_time_s).ok


def test_protocol_time_s_cases_hold_a_size_where_the_fastest_line_is_not_the_regimes():
    """Every made-up case and at least two real fits have sizes where the lower envelope differs from the model:
    otherwise the check could not tell the two apart."""
    differs = [what for regimes, sizes, what in checks.protocol_cases()
               if np.any(~np.isclose(_lower_envelope(sizes, regimes), cost.ProtocolFit(tuple(regimes), 0, 0.0)
                                     .time_s(sizes), rtol=1e-6))]
    assert sum(w.startswith("made-up") for w in differs) == 2 and len(differs) >= 4, differs


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
    assert "protocol-aware fit (" in done.stdout and "alpha_Simple_us = " in done.stdout    # 3 sizes: one regime
    h100 = nccl.parse_log(nccl.nccl_tests_log(7).read_text())          # fixture 07: what NCCL's tuner picks
    from commlab.scorecard.fixture_machines import fixture_machine
    (at, old, new), = predict("all_reduce", [r.size_bytes for r in h100.rows], fixture_machine(7).machine).switches()
    assert f"{old} -> {new} at {at // 2**20} MiB" in done.stdout


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
