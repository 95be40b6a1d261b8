"""Exercise rows drawn where real curves are (ch08), DP groups on links they can use, EP with its micro-batch,
and ZeRO-2 under gradient accumulation (ch09)."""
from __future__ import annotations

import re

import pytest

from commlab import exercises as ex
from commlab import hardware, nccl
from commlab.exercises.bank.ch08 import PLATEAU_SIZES

SEEDS = [f"learner-{i}" for i in range(60)]


def test_plateau_sizes_are_where_the_shipped_single_node_curves_are_flat():
    assert min(PLATEAU_SIZES) == 256 * 2**20
    for number in (1, 2, 3, 5, 7):                                   # 4 and 8 GPUs of one node
        rows = [r for r in nccl.parse_log(nccl.nccl_tests_log(number).read_text()).rows if r.oop.busbw_GBps > 0]
        peak = max(r.oop.busbw_GBps for r in rows)
        assert all(r.oop.busbw_GBps >= 0.85 * peak for r in rows if r.size_bytes >= min(PLATEAU_SIZES)), number


@pytest.mark.parametrize("exercise_id", ["ch08.time-from-busbw", "ch08.algbw", "ch08.busbw"])
def test_nccl_tests_rows_are_drawn_at_plateau_sizes(exercise_id):
    for seed in SEEDS:
        question = ex.worked(exercise_id, seed).question
        found = re.search(r"\((\d+) B\)|size (\d+) \(B\)", question)
        assert int(found.group(1) or found.group(2)) >= 256 * 2**20, (seed, question)


def test_a_row_time_is_never_faster_than_the_real_8x_h100_curve_at_its_size():
    # fixture 07: the best measured 8-GPU H100 times; a drawn "healthy" row on any machine in the bank at that
    # size must not beat NVLink 5 by more than its 2x bandwidth over NVLink 4
    real = {r.size_bytes: r.oop.time_us for r in nccl.parse_log(nccl.nccl_tests_log(7).read_text()).rows}
    compared = 0
    for seed in [f"learner-{i}" for i in range(400)]:
        w = ex.worked("ch08.time-from-busbw", seed)
        nbytes = int(re.search(r"\((\d+) B\)", w.question).group(1))
        if nbytes in real and w.question.startswith("A healthy all_reduce on 8 "):
            compared += 1
            assert w.expected >= real[nbytes] / 2 * 0.9, (seed, w.expected, real[nbytes])
    assert compared >= 5


def test_dp_sync_uses_nvlink_only_inside_one_node():
    for seed in SEEDS:
        p = ex.worked("ch09.dp-sync", seed).params
        if hardware.link(p["link"]).kind in ("nvlink", "nvswitch"):
            assert p["n_ranks"] <= 8, p


def test_ep_exercise_counts_the_micro_batch_and_names_e_as_the_group_size():
    for seed in SEEDS[:20]:
        w = ex.worked("ch09.ep-all-to-all", seed)
        b, ep = w.params["b"], w.params["ep"]
        seq, hidden, k = (int(x) for x in re.search(r"(\d+) tokens \(hidden (\d+), BF16\) to top-(\d+)",
                                                    w.question).groups())
        assert f"{b} x {seq} tokens" in w.question and "expert-parallel group of" in w.question
        assert w.expected == pytest.approx(2 * (ep - 1) / ep * b * seq * k * hidden * 2 / 1e6)


def test_zero2_accumulation_ratio_is_m_plus_1_over_2():
    for seed in SEEDS[:20]:
        w = ex.worked("ch09.zero2-accumulation", seed)
        assert w.expected == pytest.approx((w.params["m"] + 1) / 2)


def test_every_self_check_item_names_labs_that_exist():
    from pathlib import Path

    from commlab.exercises.selfcheck import SELF_CHECK, SELF_CHECK_LABS

    labs = Path(__file__).resolve().parents[2] / "labs"
    assert len(SELF_CHECK_LABS) == len(SELF_CHECK)
    assert all((labs / f"{name}.ipynb").is_file() for names in SELF_CHECK_LABS for name in names)
    writing = [i for i, (item, _, _) in enumerate(SELF_CHECK) if "torch.distributed" in item]
    assert writing and set(SELF_CHECK_LABS[writing[0]]) == {"p2p", "collectives", "build_your_own_ring"}
