"""Exercises of chapters 05, 06 and 08 that rest on the cost model: the effective per-step alpha where
an answer depends on alpha, NVLS's busbw above the link, and a fitted regime's half-bandwidth size. Each answer
is recomputed here from closed forms and NCCL's own constants, independently of the bank's code."""
from __future__ import annotations

import math
import re

import pytest

from commlab import cost, exercises as ex, hardware, nccl
from commlab.tuner import nccl_constants
from commlab.exercises.bank.ch05 import alpha_step_s
from commlab.exercises.bank.ch08 import regime_half_size_logs

SEEDS = [f"learner-{i}" for i in range(40)]
#: tuning.cc hwLat for Ring/Simple, us per hop, by kind of link (NVIDIA/nccl v2.30.7 src/graph/tuning.cc:159-173)
HW_LAT_RING_SIMPLE_US = {"nvlink": 3.4, "nvswitch": 3.4, "pcie": 5.7, "infiniband": 14.0, "roce": 14.0,
                         "ethernet": 14.0}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("COMMLAB_PROGRESS", str(tmp_path / "progress.json"))
    monkeypatch.delenv("COMMLAB_LEARNER", raising=False)


def test_alpha_step_is_nccls_per_hop_latency_not_the_wire():
    for name in ("nvlink4", "nvswitch3", "pcie5", "ib-ndr", "roce-400", "eth-100-tcp"):
        link = hardware.link(name)
        assert alpha_step_s(name) == pytest.approx(HW_LAT_RING_SIMPLE_US[link.kind] * 1e-6)
        assert alpha_step_s(name) > link.latency_s or link.kind == "ethernet"
    assert nccl_constants.HW_LAT_US[("net", "Ring", "Simple")] == 14.0


def _link(params):
    return hardware.link(params["link"])


#: the cluster preset whose card a single-GPU server has, per network link the banks draw
_ONE_GPU_SERVER = {"ib-ndr": "dgx-h100-ndr", "roce-400": "h100-16k-roce"}


def ring_B(link, n_ranks):
    """A ring rank's B: the link inside a server; across single-GPU servers, the server's card as the cluster model
    drives it (never the card's line rate, chapter 5)."""
    if link.kind not in ("infiniband", "roce", "ethernet"):
        return link.unidir_Bps
    from commlab import cluster
    from commlab.cluster.groups import group_view

    return cluster.Shape.of(group_view(cluster.preset(_ONE_GPU_SERVER[link.name]), 1), n_ranks).network_GBps * 1e9


def test_network_questions_take_B_from_the_cluster_model_not_the_line_rate():
    seen = set()
    for exercise_id in ("ch05.half-busbw", "ch06.crossover", "ch06.tree-time", "ch07.bucket-time"):
        for seed in SEEDS:
            w = ex.worked(exercise_id, seed)
            link, n = _link(w.params), w.params["n_ranks"]
            if link.kind in ("infiniband", "roce"):
                seen.add(exercise_id)
                assert ring_B(link, n) < link.unidir_Bps                    # NCCL drives a 400 Gb/s card at 48 GB/s
                assert f"B = {format_bw(ring_B(link, n))}" in w.question, (exercise_id, w.question)
            else:
                assert n <= 8 or link.kind == "nvlink", (exercise_id, n, link.name)   # one server's GPUs
    assert seen == {"ch05.half-busbw", "ch06.crossover", "ch06.tree-time", "ch07.bucket-time"}


def format_bw(bw_Bps):
    from commlab.exercises.bank.common import rate

    return rate(bw_Bps)


def test_crossover_uses_alpha_step_and_names_the_wire_slip():
    for seed in SEEDS:
        w = ex.worked("ch06.crossover", seed)
        link, n = _link(w.params), w.params["n_ranks"]
        a, b, d = alpha_step_s(link.name), ring_B(link, n), math.ceil(math.log2(n))
        closed = (n - 1 - d) * a * b / (d - (n - 1) / n)                # S* of 2(N-1)(a + S/NB) = 2D(a + S/B)
        assert w.expected == pytest.approx(closed / 1e3, rel=1e-6)
        assert "the wire's latency" in w.question and "alpha_step" in w.question
        wire_answer = closed * link.latency_s / a / 1e3                # S* is proportional to alpha
        feedback = ex.check("ch06.crossover", wire_answer, learner=seed, record=False)
        assert not feedback.correct and feedback.mistake == "used the wire's latency", (seed, feedback.message)


def test_tree_time_of_a_small_message_pays_alpha_step_per_level():
    for seed in SEEDS:
        w = ex.worked("ch06.tree-time", seed)
        link, n = _link(w.params), w.params["n_ranks"]
        nbytes = float(re.search(r"tree all-reduce of ([\d.]+) (K?i?B)", w.question).group(1)) * (
            1024 if "KiB" in w.question.split(" on ")[0] else 1)
        depth = math.ceil(math.log2(n))
        assert w.expected == pytest.approx(2 * depth * (alpha_step_s(link.name) + nbytes / ring_B(link, n)) * 1e6)


def test_half_busbw_is_where_the_ring_model_reaches_half_the_link():
    for seed in SEEDS:
        w = ex.worked("ch05.half-busbw", seed)
        link, n = _link(w.params), w.params["n_ranks"]
        s_half, b = w.expected * 1e6, ring_B(link, n)
        assert s_half == pytest.approx(n * alpha_step_s(link.name) * b)
        # independently: the ring's time at that size gives busbw = B / 2 (nccl-tests' busbw, 2(N-1)/N)
        t_s = 2 * (n - 1) * (alpha_step_s(link.name) + s_half / (n * b))
        assert s_half / t_s * 2 * (n - 1) / n == pytest.approx(b / 2)
        assert "MiB" not in w.question + w.solution                     # one unit, the decimal MB asked for
        feedback = ex.check("ch05.half-busbw", n * link.latency_s * b / 1e6, learner=seed, record=False)
        assert not feedback.correct and feedback.mistake == "used the wire's latency", (seed, feedback.message)


def test_ring_time_says_its_alpha_is_the_wires():
    for seed in SEEDS[:10]:
        w = ex.worked("ch05.ring-time", seed)
        assert "the wire's latency" in w.question and "ideal ring" in w.question


def test_nvls_busbw_passes_the_link_by_the_ring_factor():
    for seed in SEEDS:
        w = ex.worked("ch08.nvls-busbw", seed)
        link, n = _link(w.params), w.params["n_ranks"]
        share = float(re.search(r"both at ([\d.]+)% of that rate", w.question).group(1)) / 100
        assert w.expected == pytest.approx(share * link.unidir_GBps * 2 * (n - 1) / n)
        assert w.expected > link.unidir_GBps                          # above the link, as fixture 07 is
        capped = ex.check("ch08.nvls-busbw", link.unidir_GBps, learner=seed, record=False)
        assert not capped.correct


def test_regime_half_size_is_alpha_times_b_of_a_real_fit():
    logs = {p.name for p in regime_half_size_logs()}
    assert len(logs) == 16                                            # the logs the fitted goals apply to
    seen = set()
    for seed in SEEDS:
        w = ex.worked("ch08.regime-half-size", seed)
        alpha_us, bw_GBps = (float(x) for x in re.search(r"alpha = ([\d.e+]+) us and a bandwidth B = ([\d.e+]+) "
                                                         r"GB/s", w.question).groups())
        assert w.expected == pytest.approx(alpha_us * bw_GBps / 1e3)    # us x GB/s = kB; / 1e3 = MB
        log = nccl.parse_log(next(p for p in nccl.nccl_tests_logs() if p.name == w.params["log"]).read_text())
        rows = [r for r in log.rows if r.size_bytes > 0]
        fit = cost.fit_protocol_model([r.size_bytes for r in rows], [r.fastest.time_us * 1e-6 for r in rows])
        assert w.expected == pytest.approx(fit.nbytes_at_fraction(0.5) / 1e6, rel=1e-3)   # rounding of the text
        seen.add(w.params["log"])
        slip = ex.check("ch08.regime-half-size", w.expected * 1e3, learner=seed, record=False)
        assert not slip.correct and slip.mistake == "us x GB/s read as MB"
    assert seen <= logs and len(seen) >= 8
