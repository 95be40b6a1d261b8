"""Memory, context parallelism, gradient accumulation under ZeRO-2, and the layout planner (``commlab plan``).

The references are the papers' closed forms written out here by hand, and plain arithmetic on the layouts.
"""
from __future__ import annotations

import json

import pytest

from commlab.cli import main
from commlab.errors import CommlabError
from commlab.parallelism import (
    ModelConfig, ParallelConfig, activation_bytes_per_layer, cp_traffic, dp_traffic, model_state_bytes, plan,
    tp_traffic,
)
from commlab.parallelism.estimate import flops_per_micro_batch

# --- ZeRO-2 under gradient accumulation ---------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 4, 64])
def test_zero2_reduce_scatters_every_micro_batch_and_zero1_once(m):
    model = ModelConfig(n_params=10**9, hidden=1024, n_layers=8, seq_len=1024, n_micro_batches=m)
    z1, z2 = (dp_traffic(model, ParallelConfig(dp=8, zero=z)) for z in (1, 2))
    calls = {(i.strategy, i.primitive): i.calls_per_step for i in z1 + z2}
    assert calls == {("ZeRO-1", "reduce_scatter"): 1, ("ZeRO-1", "all_gather"): 1,
                     ("ZeRO-2", "reduce_scatter"): m, ("ZeRO-2", "all_gather"): 1}
    ddp = dp_traffic(model, ParallelConfig(dp=8))
    assert ddp.bytes_per_rank_per_step == pytest.approx(2 * 7 / 8 * 2e9)      # no_sync: once per step
    assert z2.bytes_per_rank_per_step == pytest.approx((m + 1) * 7 / 8 * 2e9)


def test_the_data_parallel_group_spans_dp_and_cp():
    model = ModelConfig(n_params=10**9, hidden=1024, n_layers=8, seq_len=1024)
    (item,) = dp_traffic(model, ParallelConfig(dp=2, cp=4))
    assert item.n_ranks == 8


# --- context parallelism ------------------------------------------------------------------------------

def test_ring_attention_passes_kv_blocks_c_minus_1_times_each_way():
    model = ModelConfig(n_params=10**9, hidden=4096, n_layers=4, seq_len=32768, micro_batch=2, n_micro_batches=3,
                        kv_hidden=1024)
    t = cp_traffic(model, ParallelConfig(cp=4, pp=2))
    block = 2 * 2 * (32768 // 4) * 1024 * 2                                # K and V, b (s/c) w bytes each
    assert [(i.primitive, i.nbytes_per_call, i.calls_per_step) for i in t] == [("sendrecv", block, 3 * 2 * 3)] * 3
    assert t.bytes_per_rank_per_step == 3 * 3 * 2 * 3 * block              # forward, backward K/V, backward dK/dV
    full = cp_traffic(model, ParallelConfig(cp=4, pp=2, recompute="full"))
    assert len(full) == 4


def test_ulysses_all_to_alls_carry_qkv_and_the_output():
    model = ModelConfig(n_params=10**9, hidden=4096, n_layers=2, seq_len=8192, kv_hidden=1024)
    t = cp_traffic(model, ParallelConfig(cp=8, cp_kind="ulysses"))
    tokens = 8192 // 8 * 2
    assert sorted(i.nbytes_per_call for i in t) == sorted([tokens * (4096 + 2048)] * 2 + [tokens * 4096] * 2)
    assert all(i.primitive == "all_to_all" and i.calls_per_step == 2 for i in t)


def test_cp_shrinks_the_tp_buffers_by_c_and_full_recomputation_repeats_the_forward():
    model = ModelConfig(n_params=10**9, hidden=1024, n_layers=4, seq_len=4096)
    plain = tp_traffic(model, ParallelConfig(tp=4))
    split = tp_traffic(model, ParallelConfig(tp=4, cp=2))
    assert split.items[0].nbytes_per_call * 2 == plain.items[0].nbytes_per_call
    full = tp_traffic(model, ParallelConfig(tp=4, recompute="full"))
    assert sum(i.calls_per_step for i in full) == 6 * 4                    # 2 forward, 2 backward, 2 recomputed


def test_parallel_config_refuses_unknown_kinds():
    with pytest.raises(CommlabError, match="cp_kind must be one of ring, ulysses, got 'tree'"):
        ParallelConfig(cp=2, cp_kind="tree")
    with pytest.raises(CommlabError, match="recompute must be one of none, selective, full, got 'some'"):
        ParallelConfig(recompute="some")


# --- memory -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("s, b, h, a, t", [(2048, 1, 12288, 96, 8), (4096, 2, 8192, 64, 4), (1024, 4, 2048, 16, 2)])
def test_activations_follow_korthikanti_table_2(s, b, h, a, t):
    sbh = s * b * h
    f = activation_bytes_per_layer
    assert f(s, b, h, a, recompute="none") == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert f(s, b, h, a, tp=t, sp=False, recompute="none") == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert f(s, b, h, a, tp=t, recompute="none") == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    assert f(s, b, h, a, tp=t, sp=False) == pytest.approx(sbh * (10 + 24 / t))
    assert f(s, b, h, a, tp=t) == pytest.approx(34 * sbh / t)
    assert f(s, b, h, a, recompute="full") == pytest.approx(2 * sbh)
    assert f(s, b, h, a, tp=t, cp=4) == pytest.approx(34 * sbh / t / 4)


def test_model_states_match_the_zero_papers_example():
    # Rajbhandari et al. 2020, figure 1: 7.5B parameters, 64 GPUs: 120, 31.4, 16.6 and 1.9 GB
    got = [sum(model_state_bytes(7.5e9, 1, 1, 64, z, n_layers=10**9)) / 1e9 for z in range(4)]
    assert [round(x, 1) for x in got] == [120.0, 31.4, 16.6, 1.9]


# --- the planner --------------------------------------------------------------------------------------

def test_70b_on_32_h100_puts_tp8_first_and_refuses_the_deep_pipeline():
    result = plan("70B", 32, "h100")
    best = result.best
    assert (best.tp, best.cp, best.pp, best.dp) == (8, 1, 1, 4)
    old = [x for x in result.rejected if (x.tp, x.cp, x.pp, x.dp, x.zero) == (2, 1, 8, 2, 1)]
    assert len(old) == 1 and "more than" in old[0].reason
    assert 44e9 < old[0].memory.activations < 47e9                       # the first 1F1B stage's ~46 GB
    tp16 = [x for x in result.rejected if x.tp == 16]
    assert tp16 and all("key-value heads" in x.reason for x in tp16)      # 8 KV heads: TP 16 cannot split them


def test_every_ranked_layout_fits_and_every_memory_refusal_does_not():
    result = plan("70B", 32, "h100")
    usable = result.config.usable_bytes
    assert all(x.memory.total <= usable for x in result.ranked)
    over = [x for x in result.rejected if x.reason.startswith("needs")]
    assert over and all(x.memory.total > usable for x in over)
    assert all(x.pp == 1 for x in result.ranked if x.zero >= 2)           # no ZeRO-2/3 with a pipeline
    speeds = [x.tokens_per_s for x in result.ranked]
    assert speeds == sorted(speeds, reverse=True)
    for x in result.ranked:
        assert x.tp * x.cp * x.pp * x.dp == 32


@pytest.mark.parametrize("size, gpus, want_tp", [("7B", 8, 1), ("175B", 1024, 8), ("1.3B", 32, 1), ("13B", 16, None)])
def test_other_answers_are_sane(size, gpus, want_tp):
    best = plan(size, gpus, "h100").best
    if want_tp is not None:
        assert best.tp == want_tp
    assert best.tp <= 8                                                    # TP never leaves the node


def test_a_model_that_fits_nowhere_says_so():
    result = plan("405B", 32, "h100")
    assert not result.ranked
    with pytest.raises(CommlabError, match="405B does not fit on 32 h100 GPUs"):
        _ = result.best


def test_a_lone_gpu_step_is_its_flops_over_the_assumed_rate():
    result = plan("1.3B", 1, "h100", n_micro_batches=4, recompute="none")
    (only,) = result.ranked
    fwd, bwd = flops_per_micro_batch(result.config.model, 4096, 1, "none")
    assert only.placed == () and only.step_s == pytest.approx(4 * (fwd + bwd) / (989e12 * 0.4))
    s, h, L, n = 4096, 2048, 24, 1.3e9
    # Korthikanti et al. 2022: 72 b s h^2 L (1 + s/6h)
    assert fwd + bwd == pytest.approx(6 * n * s + 12 * s**2 * h * L)


# --- the command line ---------------------------------------------------------------------------------

def test_plan_json_contract(capsys):
    assert main(["plan", "--model", "70B", "--gpus", "32", "--gpu", "h100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    first = out["layouts"][0]
    assert (first["tp"], first["pp"], first["dp"]) == (8, 1, 4) and first["rank"] == 1
    assert {"tp", "pp", "dp", "zero", "memory_GB", "communication_s"} <= set(first)
    assert set(first["memory_GB"]) == {"parameters", "gradients", "optimizer_states", "activations", "total"}
    assert sum(first["memory_GB"][k] for k in ("parameters", "gradients", "optimizer_states", "activations")) == \
        pytest.approx(first["memory_GB"]["total"], abs=0.03)
    assert set(first["communication_s"]) == {"SP all_gather", "SP reduce_scatter", "ZeRO-1 reduce_scatter",
                                             "ZeRO-1 all_gather"}                  # TP 8 with SP, ZeRO-1 over 4
    assert sum(first["communication_s"].values()) == pytest.approx(sum(i["time_s"] for i in first["communication"]),
                                                                   abs=1e-5)
    assert out["rejected"] and all(r["reason"] for r in out["rejected"])
    assert all(r["memory_GB"]["total"] > out["gpu"]["usable_GB"] for r in out["rejected"]
               if r["reason"].startswith("needs"))


def test_plan_text_and_options(capsys):
    assert main(["plan", "--model", "7b", "--gpus", "8", "--gpu", "H100", "--seq", "2048", "--micro-batches", "4",
                 "--recompute", "full"]) == 0
    text = capsys.readouterr().out
    assert "  1. TP 1 x PP 1 x DP 8" in text and "full recomputation" in text


@pytest.mark.parametrize("argv, needle", [
    (["--gpu", "h800"], "known GPUs: a100, h100, h200, b200"),
    (["--model", "71B"], "known models: 1.3B, 7B, 13B, 70B, 175B, 405B"),
    (["--gpus", "12"], "--gpus 12 is not a whole number of 8-GPU nodes"),
    (["--gpus", "zero"], "--gpus must be a whole number >= 1, got 'zero'"),
    (["--micro-batches", "0"], "--micro-batches must be a whole number >= 1, got '0'"),
])
def test_plan_errors_are_one_line(argv, needle, capsys):
    base = {"--model": "70B", "--gpus": "32", "--gpu": "h100"}
    base.update(dict(zip(argv[::2], argv[1::2])))
    args = ["plan"] + [x for kv in base.items() for x in kv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


# --- hybrid sharding ----------------------------------------------------------------------------------

def test_hsdp_sends_only_one_shard_across_nodes():
    from commlab.parallelism import hsdp_traffic

    model = ModelConfig(n_params=8 * 10**9, hidden=4096, n_layers=32, seq_len=4096, n_micro_batches=2)
    t = hsdp_traffic(model, shard=8, replicate=4)
    P = model.params_nbytes
    across = t.only("HSDP replicate").bytes_per_rank_per_step
    inside = t.only("HSDP shard").bytes_per_rank_per_step
    assert across == pytest.approx(2 * 2 * 3 / 4 * P / 8, rel=1e-6)          # m x 2 (r-1)/r x P/s
    assert inside == pytest.approx(2 * 3 * 7 / 8 * P, rel=1e-6)             # m x 3 (s-1)/s x P
    full = dp_traffic(model, ParallelConfig(dp=32, zero=3)).bytes_per_rank_per_step
    assert full == pytest.approx(2 * 3 * 31 / 32 * P, rel=1e-6) and across < full / 10
    no_reshard = hsdp_traffic(model, shard=8, replicate=4, reshard_after_forward=False)
    assert sum(i.primitive == "all_gather" for i in no_reshard) == 1
