"""Traffic per strategy against the volumes the papers state, worked out by hand here."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commlab.errors import CommlabError
from commlab.hardware import link
from commlab.parallelism import (
    ModelConfig, ParallelConfig, Traffic, TrafficItem, dp_traffic, ep_traffic, pp_traffic, tp_traffic, traffic,
)

# 8 layers, h = 1024, s = 2048, b = 2, m = 4: A = 2 * 2048 * 1024 * 2 bytes
MODEL = ModelConfig(n_params=8 * 10**8, hidden=1024, n_layers=8, seq_len=2048, micro_batch=2, n_micro_batches=4)
A = 2 * 2048 * 1024 * 2


def _per_rank(t: Traffic) -> float:
    return sum(item.bytes_per_rank_per_step for item in t)


def test_dp_all_reduces_the_model_parallel_shard_of_the_gradients():
    (item,) = dp_traffic(MODEL, ParallelConfig(dp=4, tp=2, pp=2))
    assert (item.primitive, item.what, item.calls_per_step, item.n_ranks) == ("all_reduce", "gradients", 1, 4)
    assert item.nbytes_per_call == 8 * 10**8 * 2 // 4
    assert item.bytes_per_rank_per_step == pytest.approx(2 * 3 / 4 * 4 * 10**8)


def test_zero_1_and_2_move_what_dp_moves_and_zero_3_half_as_much_again():
    # ZeRO paper, sec. 7: stages 1 and 2 move 2 P per rank like DP; stage 3 moves 3 P (per micro-batch)
    one_mb = ModelConfig(n_params=8 * 10**8, hidden=1024, n_layers=8, seq_len=2048)
    dp = _per_rank(dp_traffic(one_mb, ParallelConfig(dp=8)))
    assert dp == pytest.approx(2 * 7 / 8 * 16 * 10**8)
    for stage in (1, 2):
        t = dp_traffic(one_mb, ParallelConfig(dp=8, zero=stage))
        assert sorted(i.primitive for i in t) == ["all_gather", "reduce_scatter"]
        assert _per_rank(t) == pytest.approx(dp)
    z3 = dp_traffic(one_mb, ParallelConfig(dp=8, zero=3))
    assert _per_rank(z3) == pytest.approx(1.5 * dp)
    assert all(i.calls_per_step == 8 and i.nbytes_per_call == 16 * 10**8 // 8 for i in z3)


def test_zero_3_gathers_again_for_every_micro_batch():
    t = dp_traffic(MODEL, ParallelConfig(dp=8, zero=3))
    assert all(i.calls_per_step == 8 * 4 for i in t)


def test_tp_two_all_reduces_per_layer_each_way():
    t = tp_traffic(MODEL, ParallelConfig(tp=4, pp=2))
    assert [(i.primitive, i.nbytes_per_call, i.calls_per_step, i.n_ranks) for i in t] == [
        ("all_reduce", A, 2 * 4 * 4, 4)] * 2                        # 4 layers per stage, 4 micro-batches
    assert _per_rank(t) == pytest.approx(4 * 4 * 4 * 2 * 3 / 4 * A)


def test_sp_replaces_each_all_reduce_by_all_gather_and_reduce_scatter_with_the_same_volume():
    tp, sp = (tp_traffic(MODEL, ParallelConfig(tp=8, sp=flag)) for flag in (False, True))
    assert sorted(i.primitive for i in sp) == ["all_gather", "all_gather", "reduce_scatter", "reduce_scatter"]
    assert {i.strategy for i in sp} == {"SP"}
    assert _per_rank(sp) == pytest.approx(_per_rank(tp))
    assert sum(i.calls_per_step for i in sp) == 2 * sum(i.calls_per_step for i in tp)


def test_pp_sends_activations_forward_and_gradients_back_per_micro_batch():
    t = pp_traffic(MODEL, ParallelConfig(pp=4))
    assert [(i.primitive, i.nbytes_per_call, i.calls_per_step, i.n_ranks) for i in t] == [("sendrecv", A, 4, 2)] * 2
    assert _per_rank(t) == 2 * 4 * A
    interleaved = pp_traffic(MODEL, ParallelConfig(pp=4, pp_virtual=2))
    assert _per_rank(interleaved) == 2 * _per_rank(t)
    with_sp = pp_traffic(MODEL, ParallelConfig(pp=4, tp=4, sp=True))
    assert with_sp.items[0].nbytes_per_call == A // 4                # sequence-sharded hidden states


def test_ep_four_all_to_alls_per_moe_layer():
    moe = ModelConfig(n_params=10**9, hidden=1024, n_layers=8, seq_len=2048, micro_batch=2, n_micro_batches=4,
                      n_moe_layers=4, top_k=2)
    t = ep_traffic(moe, ParallelConfig(dp=8, ep=4, pp=2))
    tokens = 2 * 2048 * 2 * 1024 * 2                                 # b s k h bytes
    assert [(i.primitive, i.nbytes_per_call, i.calls_per_step, i.n_ranks) for i in t] == [
        ("all_to_all", tokens, 2 * 2 * 4, 4)] * 2                    # 2 MoE layers per stage, 4 micro-batches
    assert _per_rank(t) == pytest.approx(4 * 2 * 4 * 3 / 4 * tokens)
    assert len(ep_traffic(MODEL, ParallelConfig(dp=8, ep=4))) == 0   # a dense model has no all-to-all


def test_traffic_combines_the_strategies_and_skips_groups_of_one():
    assert len(traffic(MODEL, ParallelConfig())) == 0
    t = traffic(MODEL, ParallelConfig(dp=2, tp=2, pp=2, zero=1))
    assert [i.strategy for i in t] == ["ZeRO-1", "ZeRO-1", "TP", "TP", "PP", "PP"]
    assert t.bytes_per_rank_per_step == pytest.approx(sum(_per_rank(t.only(s)) for s in ("ZeRO-1", "TP", "PP")))
    assert len(t.rows("nvlink4")) == 6 and "time_s" in t.rows("nvlink4")[0]


def test_item_times_follow_the_alpha_beta_forms_by_hand():
    nvl = link("nvlink4")
    a, b = nvl.latency_s, nvl.unidir_GBps * 1e9
    s = 3 * 10**8
    cases = {"all_reduce": 2 * 7 * (a + s / (8 * b)), "all_gather": 7 * (a + s / (8 * b)),
             "reduce_scatter": 7 * (a + s / (8 * b)), "all_to_all": 7 * (a + s / (8 * b))}
    for primitive, by_hand in cases.items():
        item = TrafficItem("X", primitive, "x", "x", s, 3, 8)
        assert item.time_s(nvl) == pytest.approx(3 * by_hand)
    p2p = TrafficItem("PP", "sendrecv", "x", "x", s, 5, 2)
    assert p2p.time_s("nvlink4") == pytest.approx(5 * (a + s / b))
    t = Traffic((p2p, TrafficItem("X", "all_reduce", "x", "x", s, 1, 8)))
    assert t.time_s(nvl) == pytest.approx(5 * (a + s / b) + cases["all_reduce"])


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_params=0), "n_params must be a whole number >= 1, got 0"),
    (dict(hidden=2.5), "hidden"),
    (dict(n_moe_layers=9), "n_moe_layers=9"),
    (dict(top_k=0), "top_k"),
])
def test_model_config_errors_print_the_values(kwargs, match):
    base = dict(n_params=10**9, hidden=1024, n_layers=8, seq_len=2048)
    with pytest.raises(CommlabError, match=match):
        ModelConfig(**(base | kwargs))


@pytest.mark.parametrize("kwargs, match", [
    (dict(dp=0), "dp must be a whole number >= 1, got 0"),
    (dict(zero=4), "zero must be 0, 1, 2 or 3, got 4"),
    (dict(dp=6, ep=4), "ep=4, dp=6"),
    (dict(tp=1, sp=True), "tp=1"),
    (dict(pp_virtual=2), "pp_virtual=2"),
])
def test_parallel_config_errors_print_the_values(kwargs, match):
    with pytest.raises(CommlabError, match=match):
        ParallelConfig(**kwargs)


def test_layers_must_split_evenly_over_stages():
    with pytest.raises(CommlabError, match="n_layers=8 must be divisible by pp=3"):
        tp_traffic(MODEL, ParallelConfig(tp=2, pp=3))


def test_bad_traffic_item_names_the_value():
    with pytest.raises(CommlabError, match="broadcastt"):
        TrafficItem("X", "broadcastt", "x", "x", 1, 1, 2)
    with pytest.raises(CommlabError, match="n_ranks"):
        TrafficItem("X", "all_reduce", "x", "x", 1, 1, 1)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(1, 16), st.integers(1, 8), st.integers(1, 4), st.integers(1, 8))
def test_per_rank_volumes_match_the_closed_forms(layers_per_stage, dp, tp, pp, m):
    model = ModelConfig(n_params=3 * 10**8, hidden=512, n_layers=layers_per_stage * pp, seq_len=1024,
                        n_micro_batches=m)
    par = ParallelConfig(dp=dp, tp=tp, pp=pp)
    act = 512 * 1024 * 2
    shard = 6 * 10**8 / (tp * pp)
    dp_expected = 2 * (dp - 1) / dp * shard
    tp_expected = 4 * layers_per_stage * m * 2 * (tp - 1) / tp * act
    pp_expected = 2 * m * act if pp > 1 else 0
    t = traffic(model, par)
    assert _per_rank(t.only("DP")) == pytest.approx(dp_expected, rel=1e-6)
    assert _per_rank(t.only("TP")) == pytest.approx(tp_expected)
    assert _per_rank(t.only("PP")) == pytest.approx(pp_expected)
