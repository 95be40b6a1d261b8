"""The ring vs tree lab: the reference models against closed forms and commlab.cost, the crossover against the
models themselves, the script's worker on 4 real gloo ranks (it checks ring and tree against dist.all_reduce),
and what the script says NCCL's tuner picks (against commlab.tuner.predict.predict) and what NCCL_ALGO did."""
from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from commlab import cost, launch
from commlab.tuner.predict import predict
from commlab.labs.code import Code
from commlab.labs.solutions.ring_vs_tree import predict_crossover_nbytes, ring_time_s, tree_time_s

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "labs" / "scripts" / "ring_vs_tree.py"
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")
CASES = [(n, a, b) for n in (2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 64, 1000, 1024)
         for a, b in ((1e-6, 1e9), (5e-6, 50e9), (3e-4, 5e8), (2e-5, 450e9))]


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def load_script():
    spec = importlib.util.spec_from_file_location("ring_vs_tree_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_models_are_the_closed_forms_and_commlab_cost():
    sizes = np.array([0.0, 1.0, 4096.0, 1e6, 3e9])
    for n, a, b in CASES:
        depth = 0
        while 2**depth < n:                                  # ceil(log2 n) by counting, not by log
            depth += 1
        np.testing.assert_allclose(ring_time_s(sizes, n, a, b), 2 * (n - 1) * (a + sizes / (n * b)), rtol=1e-12)
        np.testing.assert_allclose(tree_time_s(sizes, n, a, b), 2 * depth * (a + sizes / b), rtol=1e-12)
        np.testing.assert_allclose(ring_time_s(sizes, n, a, b), cost.ring_all_reduce_time_s(sizes, n, a, b))
        np.testing.assert_allclose(tree_time_s(sizes, n, a, b), cost.tree_all_reduce_time_s(sizes, n, a, b))


@pytest.mark.parametrize("n, alpha_s, bw_Bps", CASES)
def test_crossover_is_where_the_models_meet(n, alpha_s, bw_Bps):
    s_star = predict_crossover_nbytes(n, alpha_s, bw_Bps)
    numeric = cost.crossover_nbytes("ring", "tree", n, alpha_s, bw_Bps)
    if n <= 3:                                               # N-1 <= ceil(log2 N): the ring is never slower
        assert math.isnan(s_star) and math.isnan(numeric)
        sizes = np.geomspace(1, 1e12, 50)
        assert np.all(ring_time_s(sizes, n, alpha_s, bw_Bps) <= tree_time_s(sizes, n, alpha_s, bw_Bps))
        return
    assert s_star > 0 and math.isclose(s_star, numeric, rel_tol=1e-6)
    ring, tree = ring_time_s(s_star, n, alpha_s, bw_Bps), tree_time_s(s_star, n, alpha_s, bw_Bps)
    assert math.isclose(float(ring), float(tree), rel_tol=1e-9)
    assert tree_time_s(s_star / 2, n, alpha_s, bw_Bps) < ring_time_s(s_star / 2, n, alpha_s, bw_Bps)
    assert ring_time_s(s_star * 2, n, alpha_s, bw_Bps) < tree_time_s(s_star * 2, n, alpha_s, bw_Bps)


def test_script_worker_checks_and_times_on_four_gloo_ranks(no_child_left):
    script = load_script()
    code = Code("ring_vs_tree", None, "test")
    values = launch.run(script.worker, 4, code, [4096, 65536], 1, backend="gloo", timeout_s=90, verbose=False)
    out, rest = values[0], values[1:]
    assert rest == [None, None, None]                        # only rank 0 reports
    assert out["backend"] == "gloo" and out["n_ranks"] == 4
    assert [nbytes for nbytes, _ in out["rows"]] == [4096, 65536]
    for _, times in out["rows"]:
        assert set(times) == set(script.ALGOS) and all(t > 0 for t in times.values())
    text = script.report(out, code)
    assert "all-reduce on 4 ranks (gloo)" in text and "fitted from the ring's times" in text
    assert out["n_gpus"] == 0 and out["local_ranks"] == 4 and "NCCL_ALGO" not in text
    assert text.count("NCCL's tuner on DGX H100 x ") == 2 * len(script.DGX_NODES)


def test_nccl_lines_are_what_cost_predict_picks_and_the_plain_crossover():
    """Each machine's line lists predict's first pair and every switch; the DGX machines add the plain crossover
    from the learner's function with the link's numbers (here the reference, checked against commlab.cost)."""
    from commlab import cluster, hardware
    from commlab.units import format_nbytes

    script = load_script()
    code = Code("ring_vs_tree", None, "test")
    lines = script.nccl_lines(code)
    m16 = cluster.preset("dgx-h100-ndr").machine(16)
    p = predict("all_reduce", script.PICK_SIZES, m16)
    line16 = next(x for x in lines if "DGX H100 x 16 (128 GPUs), NVLS on" in x)
    assert line16.split(": ", 1)[1].startswith(p.pairs()[0] + ", ")
    for at, _, new in p.switches():
        assert f"{new} from {format_nbytes(at, binary=True)}" in line16
    ndr = hardware.link("ib-ndr")
    s_star = cost.crossover_nbytes("ring", "tree", 128, ndr.latency_s, ndr.unidir_Bps)
    assert line16.endswith(f"plain ring = tree at {format_nbytes(s_star)} (ib-ndr)")
    mine = script.nccl_lines(code, "gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=4,nic_Gbps=100,net=efa")
    assert len(mine) == 2 and "gpu=a100" in mine[1] and "plain ring" not in mine[1]


@pytest.mark.parametrize("out, says", [
    ({"backend": "gloo", "n_ranks": 8, "nccl_algo": "Ring", "n_gpus": 0}, "this machine has no CUDA GPU"),
    ({"backend": "gloo", "n_ranks": 8, "nccl_algo": "Tree", "n_gpus": 1, "local_ranks": 8},
     "8 ranks on 1 GPU(s) here, and NCCL refuses two ranks on one GPU"),
    ({"backend": "gloo", "n_ranks": 2, "nccl_algo": "Ring", "n_gpus": 2, "nccl_built": False}, "built without NCCL"),
    ({"backend": "nccl", "n_ranks": 8, "nccl_algo": "Tree", "n_gpus": 8}, "ran NCCL with NCCL_ALGO=Tree"),
    ({"backend": "gloo", "n_ranks": 8, "nccl_algo": None, "n_gpus": 0}, None),
])
def test_the_script_says_what_nccl_algo_did(out, says):
    note = load_script().algo_note(out)
    assert (note == []) if says is None else (len(note) == 1 and says in note[0]), note


def test_script_runs_on_its_own():
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    done = subprocess.run([sys.executable, str(SCRIPT), "--ranks", "4", "--sizes", "1K,64K,1M", "--repeats", "1"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "all-reduce on 4 ranks (gloo)" in done.stdout
    assert sum(line.strip().startswith(("1 KiB", "64 KiB", "1 MiB")) for line in done.stdout.splitlines()) == 3


def test_script_refuses_bad_sizes_in_one_line(capsys):
    script = load_script()
    assert script.main(["--sizes", "1K,6"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ring_vs_tree.py: error: --sizes must be positive multiples of 4") and err.count("\n") == 1
    assert script.main(["--repeats", "0"]) == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err
    assert script.main(["--machine", "gpu=h100,gpus=8"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ring_vs_tree.py: error: unknown machine field 'gpus'") and err.count("\n") == 1
