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

def test_the_global_batch_is_the_users_and_each_layout_splits_it():
    result = plan("70B", 32, "h100", global_batch_tokens=2**21, seq_len=4096)      # 512 sequences
    assert result.ranked
    for x in result.ranked:
        assert x.tp * x.cp * x.pp * x.dp == 32
        assert x.dp * x.micro_batch * x.micro_batches == 512                      # B = T / s, whatever the layout
        assert x.global_batch_tokens == 2**21


def test_a_batch_that_dp_cannot_split_says_why():
    result = plan("7B", 24, "h100", gpus_per_node=8, global_batch_tokens=4096 * 20, seq_len=4096)
    bad = [x for x in result.rejected if x.dp == 3]
    assert bad and all("does not split over DP 3" in x.reason for x in bad)


def test_every_ranked_layout_fits_and_every_memory_refusal_does_not():
    result = plan("70B", 32, "h100")
    usable = result.config.usable_bytes
    assert all(x.memory.total <= usable for x in result.ranked)
    over = [x for x in result.rejected if x.reason.startswith("needs")]
    assert over and all(x.memory.total > usable for x in over)
    assert any(x.pp > 1 and x.zero >= 2 for x in result.ranked)          # ZeRO-2/3 compose with a pipeline
    from commlab.parallelism.planner import _sig

    speeds = [_sig(x.tokens_per_s) for x in result.ranked]                # ranked to 4 significant figures
    assert speeds == sorted(speeds, reverse=True)
    tp16 = [x for x in result.rejected if x.tp == 16]
    assert tp16 and all("key-value heads" in x.reason for x in tp16)      # 8 KV heads: TP 16 cannot split them


def test_zero2_ranks_above_zero1_at_equal_throughput_and_less_memory():
    result = plan("1.3B", 8, "h100", global_batch_tokens=8 * 2048, seq_len=2048)     # m = 1: equal traffic
    by = {(x.tp, x.cp, x.pp, x.zero): i for i, x in enumerate(result.ranked)}
    one, two = result.ranked[by[(1, 1, 1, 1)]], result.ranked[by[(1, 1, 1, 2)]]
    assert one.micro_batches == two.micro_batches == 1
    assert round(one.tokens_per_s, 0) == round(two.tokens_per_s, 0) and two.memory.total < one.memory.total
    assert by[(1, 1, 1, 2)] < by[(1, 1, 1, 1)]


def test_uneven_stages_let_126_layers_run_on_16_stages():
    from commlab.parallelism.stages import stage_layers

    assert stage_layers(126, 16) == (7,) + (8,) * 14 + (7,)                # Llama 3: one layer less at each end
    result = plan("405B", 16384, "h100")
    assert any(x.pp == 16 for x in result.ranked)
    with pytest.raises(CommlabError, match="PP 200 needs at least one layer per stage"):
        stage_layers(126, 200)


def test_interleaving_shrinks_the_bubble_by_v():
    from commlab.parallelism.planner import evaluate, network_for, PlanConfig
    from commlab.parallelism.catalogue import gpu, model

    cfg = PlanConfig(model=model("70B"), gpu=gpu("h100"), n_gpus=64, global_batch_tokens=64 * 4096)
    net = network_for(cfg)
    one, two = (evaluate(cfg, net, 8, 1, 8, 1, 1, v, micro_batch=1) for v in (1, 2))
    assert one.reason is None and two.reason is None
    slot1 = one.terms_s["bubble"] / (7 / 1)
    slot2 = two.terms_s["bubble"] / (7 / 2)
    assert one.micro_batches == 64
    assert two.terms_s["bubble"] / one.terms_s["bubble"] == pytest.approx(0.5 * slot2 / slot1)
    assert slot2 > slot1                                                 # twice the sends per micro-batch


def test_cp_kv_blocks_are_h_kv_over_t_per_gpu():
    model = ModelConfig(n_params=10**9, hidden=4096, n_layers=4, seq_len=32768, kv_hidden=1024)
    alone, with_tp = (cp_traffic(model, ParallelConfig(cp=4, tp=t, sp=t > 1)) for t in (1, 8))
    assert alone.items[0].nbytes_per_call == 8 * with_tp.items[0].nbytes_per_call


def test_fp32_gradients_cost_memory_and_double_the_dp_bytes():
    fp32, bf16 = (plan("7B", 8, "h100", grad_reduce=g) for g in ("fp32", "bf16"))
    key = (1, 1, 1, 8, 1, 1, "ring")
    a = next(x for x in fp32.ranked if x.key == key)
    b = next(x for x in bf16.ranked if x.key == key)
    assert a.memory.gradients == pytest.approx(2 * b.memory.gradients)
    rs = lambda x: next(p for p in x.placed if p.primitive == "reduce_scatter")      # noqa: E731
    assert rs(a).nbytes_per_call == pytest.approx(2 * rs(b).nbytes_per_call, rel=1e-6)


def test_multi_node_collectives_share_the_nodes_nics():
    from commlab.parallelism.catalogue import gpu
    from commlab.parallelism.network import Network

    net = Network(gpu("h100"), n_gpus=64)
    size = 35e9
    t_rail, _ = net.collective_s("all_reduce", size, 8, 8)             # one GPU a node: one NIC's share each
    ring_one_nic = 2 * 7 / 8 * size / (net.egress_GBps / 8 * 1e9)
    assert t_rail == pytest.approx(ring_one_nic, rel=0.05)
    whole, _ = net.collective_s("all_reduce", 8 * size, 64, 1)          # all 64: a node's eight NICs together
    assert whole < 8 * t_rail / 4


def test_a_model_that_fits_nowhere_names_the_overshoot_and_its_term():
    result = plan("405B", 32, "h100")
    assert not result.ranked
    with pytest.raises(CommlabError, match="405B does not fit on 32 h100 GPUs.*GB over the .* its largest term is"):
        _ = result.best


def test_a_lone_gpu_step_is_its_flops_at_the_measured_gemm_rate():
    result = plan("1.3B", 1, "h100", global_batch_tokens=4 * 2048, seq_len=2048, n_micro_batches=4,
                  recompute="none")
    (only,) = result.ranked
    fwd, bwd = flops_per_micro_batch(result.config.model, 2048, 1, "none")
    assert only.placed == ()
    tokens, h, f, L = 4 * 2048, 2048, 4 * 2048, 24
    elementwise_s = 3 * (20 * h + 4 * f) * tokens * L / 3.35e12         # norms, residuals, GeLU: fwd + 2 x bwd
    # every GEMM's output counted in 128 x 128 tiles on the H100's 132 SMs (the best tile for these shapes):
    # the last wave's idle SMs are the time the full-wave rate does not account for
    def quantized(rows, cols):
        tiles = -(-rows // 128) * -(-cols // 128)
        return rows * cols / (-(-tiles // 132) * 132 * 128 * 128)
    weights = ((h, 3 * h), (h, h), (h, f), (f, h))                       # QKV, O, MLP up, MLP down (K x N)
    mb = 2048                                                            # tokens per micro-batch
    gemm_s = sum(2 * mb * k * n / 794.5e12 * (1 / quantized(mb, n) + 1 / quantized(mb, k) + 1 / quantized(k, n))
                 for k, n in weights) * L * 4
    assert 1 < gemm_s / (4 * 3 * 2 * 24 * (4 * h * h + 2 * h * f) * mb / 794.5e12) < 1.1   # the waves cost a little
    output_s = 4 * 3 * 2 * 50257 * h * mb / 794.5e12                     # the logits GEMM, forward and backward
    attention_s = 4 * 3 * 4 * mb * 2048 * h * L / 2 / (0.35 * 989e12)    # causal half at FlashAttention-2's rate
    assert only.terms_s["compute"] == pytest.approx(gemm_s + output_s + attention_s + elementwise_s, rel=0.02)
    s, h, L, n = 2048, 2048, 24, 1.3e9
    assert fwd + bwd == pytest.approx(6 * n * s + 12 * s**2 * h * L)      # Korthikanti: 72 b s h^2 L (1 + s/6h)
    assert only.mfu == pytest.approx(only.tflops_per_gpu / 989.0)


def test_a_custom_model_counts_its_parameters():
    from commlab.parallelism.catalogue import model

    m = model("layers=80,hidden=8192,heads=64,kv_heads=8,ffn=28672,gated=1,vocab=32000")
    assert m.n_params == pytest.approx(68.98e9, rel=0.01)                   # Llama 2 70B's released count
    with pytest.raises(CommlabError, match="unknown field 'depth'; the fields are layers, hidden, heads"):
        model("depth=3,hidden=8")


# --- the command line ---------------------------------------------------------------------------------

def test_plan_json_contract(capsys):
    assert main(["plan", "--model", "70B", "--gpus", "32", "--gpu", "h100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    first = out["layouts"][0]
    assert first["rank"] == 1 and out["global_batch_tokens"] == 4 * 2**20
    assert {"tp", "cp", "pp", "vp", "dp", "zero", "micro_batch", "micro_batches", "global_batch_tokens", "mfu",
            "tflops_per_gpu", "step_s", "tokens_per_s", "memory_GB", "communication_s", "communication",
            "exposed_communication_s"} <= set(first)
    assert set(first["memory_GB"]) == {"parameters", "gradients", "optimizer_states", "activations", "total"}
    assert sum(first["memory_GB"][k] for k in ("parameters", "gradients", "optimizer_states", "activations")) == \
        pytest.approx(first["memory_GB"]["total"], abs=0.03)
    assert sum(first["communication_s"].values()) == pytest.approx(sum(i["time_s"] for i in first["communication"]),
                                                                   abs=1e-5)
    assert first["dp"] * first["micro_batch"] * first["micro_batches"] * out["seq"] == first["global_batch_tokens"]
    assert out["rejected"] and all(r["reason"] for r in out["rejected"])
    assert all(r["memory_GB"]["total"] > out["gpu"]["usable_GB"] for r in out["rejected"]
               if r["reason"].startswith("needs"))


def test_plan_text_and_options(capsys):
    assert main(["plan", "--model", "7b", "--gpus", "8", "--gpu", "H100", "--seq", "2048", "--micro-batches", "4",
                 "--recompute", "full"]) == 0
    text = capsys.readouterr().out
    assert "  1. TP " in text and "full recomputation" in text and "global batch 4,194,304 tokens" in text


def test_plan_layout_scores_one_layout(capsys):
    assert main(["plan", "--model", "70B", "--gpus", "64", "--gpu", "h100", "--layout", "tp=8,pp=2,zero=1,vp=1"]) == 0
    text = capsys.readouterr().out
    assert "TP 8 x PP 2 x DP 4, ZeRO-1" in text and "rank" in text and "of its throughput" in text
    assert main(["plan", "--model", "70B", "--gpus", "64", "--gpu", "h100", "--layout", "tp=16,pp=2"]) == 0
    assert "does not run: TP 16 does not divide" in capsys.readouterr().out


def test_a_layout_without_zero_or_vp_is_scored_at_the_fastest_that_fits():
    from commlab.parallelism.evaluate import evaluate, network_for
    from commlab.parallelism.planner import score_layout

    result = plan("70B", 64, "h100")
    mine, rank = score_layout(result, "tp=8,pp=2")
    net = network_for(result.config)
    every = [evaluate(result.config, net, 8, 1, 2, 4, z, v) for z in result.config.zero_stages
             for v in range(1, result.config.max_vp + 1)]
    fastest = max(x.tokens_per_s for x in every if x.reason is None)
    assert mine.reason is None and mine.tokens_per_s == pytest.approx(fastest, rel=1e-3)
    given, _ = score_layout(result, "tp=8,pp=2,zero=3,vp=1")
    assert (given.zero, given.vp) == (3, 1)


def test_llama3_layout_as_a_practitioner_types_it(capsys):
    """Llama 3's 405B layout on 16,384 H100 (TP 8, PP 16; arXiv 2407.21783, table 4), typed with nothing else:
    scored at the faster recomputation, interleaving and ZeRO stage that fit, it runs, near the best."""
    argv = ["plan", "--model", "405B", "--gpus", "16384", "--gpu", "h100", "--layout", "tp=8,pp=16"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("recomputation: full (the faster of selective and full")
    share = float(text.rsplit("yours is ", 1)[1].split("%")[0]) / 100
    assert share >= 0.85, text
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["recompute"] == "full" and out["layout"]["tp"] == 8 and out["layout"]["pp"] == 16
    assert main(argv + ["--recompute", "selective"]) == 0
    assert "recomputation:" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, needle", [
    (["--gpu", "h900"], "known GPUs: a100-40gb, a100-80gb (a100), h100, h800, h200, b200"),
    (["--model", "71B"], "known models: 1.3B, 7B, 13B, 70B, 175B, 405B"),
    (["--model", "layers=2,width=3"], "unknown field 'width'"),
    (["--layout", "tp=8,pq=2"], "unknown key 'pq'; the keys are tp, pp, vp, cp, dp, zero"),
    (["--layout", "tp=8,pp=3"], "tp x pp x cp = 24 does not divide 32 GPUs"),
    (["--gpus", "12"], "--gpus 12 is not a whole number of 8-GPU nodes"),
    (["--gpus", "zero"], "--gpus must be a whole number >= 1, got 'zero'"),
    (["--micro-batches", "0"], "--micro-batches must be a whole number >= 1, got '0'"),
    (["--global-batch-tokens", "1000"], "is not a whole number of 4,096-token sequences"),
    (["--nic-gbps", "fast"], "--nic-gbps must be a rate in Gb/s > 0, got 'fast'"),
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


def test_fewer_nics_slow_what_crosses_nodes_and_nothing_else():
    from commlab.parallelism.planner import PlanConfig, evaluate, network_for
    from commlab.parallelism.catalogue import gpu, model

    def one(nics):
        cfg = PlanConfig(model=model("70B"), gpu=gpu("h100"), n_gpus=64, nics_per_node=nics)
        return evaluate(cfg, network_for(cfg), 8, 1, 1, 8, 1, micro_batch=1)

    full, starved = one(8), one(2)
    dp = lambda x: sum(p.time_s for p in x.placed if p.strategy.startswith("ZeRO"))      # noqa: E731
    tp = lambda x: sum(p.time_s for p in x.placed if p.strategy == "SP")                 # noqa: E731
    assert dp(starved) == pytest.approx(4 * dp(full), rel=0.1)             # a quarter of the node's egress
    assert tp(starved) == pytest.approx(tp(full))                          # NVLink is untouched


def test_plan_layout_json_and_the_retired_mfu_input(capsys):
    assert main(["plan", "--model", "7B", "--gpus", "16", "--gpu", "h100", "--layout", "tp=2,zero=1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["layout"]["tp"] == 2 and out["layout"]["dp"] == 8 and out["rank"] >= 1 and out["best"]["rank"] == 1
    with pytest.raises(CommlabError, match="mfu=0.4 is no longer an input"):
        plan("7B", 8, "h100", mfu=0.4)


def _one_layout(**options):
    from commlab.parallelism.catalogue import gpu, model
    from commlab.parallelism.evaluate import evaluate, network_for
    from commlab.parallelism.plan_config import PlanConfig

    cfg = PlanConfig(model=model("7B"), gpu=gpu("h100"), n_gpus=64, global_batch_tokens=64 * 4096, **options)
    x = evaluate(cfg, network_for(cfg), 8, 1, 1, 8, 0, micro_batch=1)        # TP 8 in a node, DDP over 8 nodes
    assert x.reason is None, x.reason
    return cfg, x


def test_a_late_gradient_reduction_is_exposed_in_full():
    """DDP of 7B over 8 nodes: overlapped, the all-reduce hides behind the last backward and only its SMs cost time;
    after the last backward (the frameworks of 2021-22) all of it is on the step."""
    _, overlapped = _one_layout()
    _, late = _one_layout(overlap_grad_reduce=False)
    (ar,) = [p.time_s for p in late.placed if p.strategy == "DP"]
    assert late.terms_s["DP"] == pytest.approx(ar) and late.terms_s.get("NCCL SMs", 0.0) == 0.0
    assert overlapped.terms_s["DP"] < ar and overlapped.terms_s["NCCL SMs"] > 0
    assert late.step_s - overlapped.step_s == pytest.approx(
        ar - overlapped.terms_s["DP"] - overlapped.terms_s["NCCL SMs"], rel=1e-6)


def test_an_overlapped_collective_takes_its_channels_sms_from_compute():
    """The SMs' cost is what the collective overlaps times NCCL's channels over the GPU's SMs (never more than
    the collective's own time), and it is counted apart from the exposed communication."""
    cfg, x = _one_layout()
    net_channels = 2 * 8                                        # NCCL: twice the ring graph's 8 channels across nodes
    from commlab.parallelism.evaluate import network_for

    assert network_for(cfg).channels(crosses_nodes=True) == net_channels
    (ar,) = [p.time_s for p in x.placed if p.strategy == "DP"]
    hidden = ar - x.terms_s["DP"]
    assert x.terms_s["NCCL SMs"] == pytest.approx(hidden * net_channels / cfg.gpu.sms)
    assert x.exposed_comm_s == pytest.approx(sum(v for k, v in x.terms_s.items()
                                                 if k not in ("compute", "bubble", "optimizer", "NCCL SMs")))


def test_memory_bound_kernels_run_at_the_measured_streaming_rate():
    from commlab.parallelism import estimate

    assert 0.8 < estimate.HBM_ACHIEVED_FRACTION < 1
    _, x = _one_layout()
    # the optimizer step: 30 bytes per parameter of the stage's shard at the achieved, not the datasheet, rate
    from commlab.parallelism.catalogue import gpu, model

    m = model("7B")
    stage = (m.n_layers * m.layer_params + 2 * m.embedding_params) / 8
    assert x.terms_s["optimizer"] == pytest.approx(
        stage * estimate.ADAM_BYTES_PER_PARAM / (gpu("h100").hbm_TBps * 1e12 * estimate.HBM_ACHIEVED_FRACTION))


def test_zero_2_and_3_hold_two_layers_whole_gradients_until_their_reduce_scatter():
    from commlab.parallelism.catalogue import gpu, model
    from commlab.parallelism.layout_memory import UNSHARDED_GRAD_LAYERS, memory_of
    from commlab.parallelism.plan_config import PlanConfig

    cfg = PlanConfig(model=model("7B"), gpu=gpu("h100"), n_gpus=64)
    m = cfg.model
    whole = (m.n_layers * m.layer_params + 2 * m.embedding_params) * cfg.grad_nbytes      # TP 1, PP 1
    one, two = (memory_of(cfg, 1, 1, 1, 64, z) for z in (1, 2))
    assert one.gradients == pytest.approx(whole)
    assert two.gradients == pytest.approx(whole / 64 + UNSHARDED_GRAD_LAYERS * cfg.grad_nbytes * m.layer_params)


def test_16_bit_gradients_add_an_fp32_copy_sharded_with_the_optimizer_states():
    """Megatron-LM's FP16 optimizer: 2 + 2 + 12 + 4 = 20 bytes per parameter with 16-bit gradients, against
    2 + 4 + 12 = 18 with FP32 ones, the copy sharded as the optimizer states are under ZeRO-1."""
    from commlab.parallelism.catalogue import gpu, model
    from commlab.parallelism.layout_memory import memory_of
    from commlab.parallelism.plan_config import PlanConfig

    m = model("7B")
    n = m.n_layers * m.layer_params + 2 * m.embedding_params                               # TP 1, PP 1
    for zero, shards in ((0, 1), (1, 8)):
        b16, f32 = (memory_of(PlanConfig(model=m, gpu=gpu("h100"), n_gpus=8, grad_reduce=g), 1, 1, 1, 8, zero)
                    for g in ("bf16", "fp32"))
        states16 = b16.parameters + b16.gradients + b16.optimizer_states
        states32 = f32.parameters + f32.gradients + f32.optimizer_states
        assert states16 == pytest.approx(n * (2 + 2 + 16 / shards)), zero
        assert states32 == pytest.approx(n * (2 + 4 + 12 / shards)), zero


def test_a_pipeline_that_leaves_the_node_sends_at_the_network_boundarys_pace():
    """Stages 4 ranks apart on 8-GPU nodes: every other boundary crosses the network, and every micro-batch
    passes it; a pipeline inside one node stays on NVLink."""
    from commlab.parallelism.catalogue import gpu, model
    from commlab.parallelism.evaluate import evaluate, network_for
    from commlab.parallelism.plan_config import PlanConfig

    def pp_link(n_gpus, tp, cp, pp):
        cfg = PlanConfig(model=model("7B"), gpu=gpu("h100"), n_gpus=n_gpus, global_batch_tokens=64 * 4096)
        x = evaluate(cfg, network_for(cfg), tp, cp, pp, n_gpus // (tp * cp * pp), 1, micro_batch=1)
        assert x.reason is None, x.reason
        return next(p.link for p in x.placed if p.strategy == "PP")

    assert pp_link(16, 1, 4, 4) == "send, nic"                  # 4 stages x 4 ranks on two nodes
    assert pp_link(8, 1, 2, 4) == "send, nvlink"                # the whole pipeline in one node


def test_each_gemm_sits_on_its_roofline():
    """A few tokens against a layer's weights wait on HBM (the operands' bytes over the bandwidth); many tokens
    are compute-bound and the memory term changes nothing."""
    from commlab.parallelism.gemm import layer_gemm_s

    rate, hbm, h, f = 794.5e12, 3.35e12 * 0.88, 8192, 28672
    few = layer_gemm_s(128, h, 1024, f, True, 1, 132, rate, hbm)         # one tile's rows
    few_compute = layer_gemm_s(128, h, 1024, f, True, 1, 132, rate)
    weights_bytes = 2 * (h * (h + 2 * 1024) + h * h + h * 2 * f + f * h)
    assert few[0] >= weights_bytes / hbm > few_compute[0]               # below the ridge: HBM decides
    assert few[2] >= 4 * weights_bytes / hbm                            # FP32 accumulator read and written
    many, many_compute = (layer_gemm_s(16384, h, 1024, f, True, 1, 132, rate, *x) for x in ((hbm,), ()))
    assert many == pytest.approx(many_compute)
