"""NCCL's tuner by generation (commlab.tuner.generations): the data files against the current constants module and
NCCL's own formulas, the version -> generation choice, and the replay against the predictive model it generalises."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from commlab.tuner import nccl_constants as K
from commlab.tuner.machine import parse_machine
from commlab.tuner.predict import predict
from commlab.tuner.settings import TUNED_OPS
from commlab.errors import CommlabError
from commlab.tuner import generations as G

SIZES = 2.0 ** np.arange(3, 34)


def test_every_generation_reads_and_states_its_tag_commit_and_every_line():
    gens = G.generations()
    assert [g.name for g in gens] == list(G.GENERATION_NAMES)
    for g in gens:
        assert re.fullmatch(r"v2\.\d+\.\d+-1", g.tag) and re.fullmatch(r"[0-9a-f]{40}", g.commit)
        for name in G.RULES + ("base_lat_us", "ll_max_bw_GBps", "tree_max_bw_per_ch_GBps", "tree_correction"):
            line = g.line(name)
            assert line.startswith(f"{g.tag} src/graph/tuning.cc:")
            assert re.match(r"\d+(-\d+)?(, \d+(-\d+)?)*$|none: ", g.lines[name]), (g.name, name, g.lines[name])


def test_the_generations_cover_every_release_from_2_4_without_a_gap():
    gens = G.generations()
    assert gens[0].first == (2, 4) and gens[-1].current
    for a, b in zip(gens, gens[1:]):
        assert b.first == (a.last[0], a.last[1] + 1), (a.name, b.name)


def test_the_current_generation_is_the_constants_the_predictive_model_reads_entry_by_entry():
    g = G.current()
    assert g.tag == f"v{K.NCCL_VERSION}-1"
    assert dict(g.base_lat_us) == {k: K.BASE_LAT_US.get(k, 0.0) for k in g.base_lat_us}
    assert all(g.hw_lat_us[k] == v for k, v in K.HW_LAT_US.items())
    assert all(v == 0.0 for k, v in g.hw_lat_us.items() if k not in K.HW_LAT_US)
    assert dict(g.ll_max_bw_GBps) == dict(K.LL_MAX_BW_GBPS)
    assert dict(g.ring_ll128_max_bw_per_ch_GBps) == dict(K.RING_LL128_MAX_BW_PER_CH_GBPS)
    assert dict(g.tree_ll128_max_bw_per_ch_GBps) == dict(K.TREE_LL128_MAX_BW_PER_CH_GBPS)
    assert dict(g.tree_max_bw_per_ch_GBps) == dict(K.TREE_MAX_BW_PER_CH_GBPS)
    assert dict(g.tree_correction) == dict(K.TREE_CORRECTION)
    r = g.rules
    assert r["ring_ll_factor"] == (K.LL_BW_FACTOR,) * 2 and r["ring_ll128_factor"] == (K.LL128_BW_FACTOR,) * 2
    assert r["tree_factor"] == K.TREE_ALL_REDUCE_FACTOR and r["tree_ll_factor"] == pytest.approx(K.TREE_LL_FACTOR)
    assert r["tree_ll128_factor"] == pytest.approx((K.TREE_LL128_FACTOR_ONE_NODE, K.TREE_LL128_FACTOR_NODES))
    assert r["plateau"] == (K.RING_PLATEAU_FACTOR["pre_sm80"], K.RING_PLATEAU_FACTOR["sm80_up"])


@pytest.mark.parametrize("version, name, assumed", [
    ((2, 5, 6), "2.4-2.8", False), ((2, 8, 3), "2.4-2.8", False), ((2, 12, 7), "2.9-2.17", False),
    ((2, 18, 5), "2.18-2.23", False), ((2, 21, 5), "2.18-2.23", False), ((2, 26, 6), "2.24-2.30", False),
    ((2, 3, 7), "2.4-2.8", True), ((2, 31, 1), "2.24-2.30", True), ((3, 0, 0), "2.24-2.30", True)])
def test_a_version_picks_its_generation_and_one_outside_them_says_it_was_assumed(version, name, assumed):
    choice = G.generation_for(version)
    assert choice.generation.name == name and choice.assumed is assumed
    assert ("assumed" in choice.why) is assumed and ".".join(map(str, version)) in choice.why


def test_a_log_without_a_version_says_which_generation_it_assumed_from_its_format():
    legacy, modern = G.generation_for(None, "legacy"), G.generation_for(None, "modern")
    assert legacy.assumed and legacy.generation.name == "2.4-2.8" and "legacy" in legacy.why
    assert modern.assumed and modern.generation.current and "assumed the current" in modern.why
    assert modern.to_json()["assumed"] is True and modern.to_json()["nccl_version"] is None


def test_an_unknown_generation_names_the_known_ones():
    with pytest.raises(CommlabError, match="unknown NCCL tuner generation '2.99'.*2.4-2.8, 2.9-2.17"):
        G.load_generation("2.99")


def test_a_broken_generation_file_is_one_clear_error():
    with pytest.raises(CommlabError, match="bad.toml: not a generation of NCCL's tuner"):
        G._parse({"name": "x", "first": "2.1", "last": "2.2"}, "bad.toml")


# -- the replay, against the predictive model it generalises -------------------------------------------------------
GENERIC_NOW = replace(G.current(), current=False)        # today's numbers through the generation replay's code
ONE_NODE = ["gpu=a100,gpus_per_node=8", "gpu=v100,gpus_per_node=8", "gpu=a40,gpus_per_node=4,p2p=0",
            "gpu=a40,gpus_per_node=2", "gpu=a100,gpus_per_node=4,nvlink_topology=mesh", "gpu=rtx2080ti,gpus_per_node=2"]


@pytest.mark.parametrize("desc", ONE_NODE)
@pytest.mark.parametrize("op", TUNED_OPS)
def test_the_replay_with_todays_numbers_is_the_predictive_model_on_one_node(desc, op):
    """On one node without NVLS the predictive model adds nothing the replay leaves out (its fills are NVLS's and the
    inter-node tree's), so the two codes must agree to the last bit: a check of the replay's formulas."""
    m = parse_machine(desc)
    ours, theirs = G.replay(op, SIZES, m, GENERIC_NOW), predict(op, SIZES, m)
    assert ours.pairs() == theirs.pairs()
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=1e-12)
    np.testing.assert_allclose(ours.nccl_time_us, theirs.nccl_time_us, rtol=1e-12)
    assert set(ours.table) == set(theirs.table)
    for pair in theirs.table:                     # every enabled pair, not only the picked ones
        np.testing.assert_allclose(ours.nccl_table[pair], theirs.nccl_table[pair], rtol=1e-12)
        np.testing.assert_allclose(ours.table[pair], theirs.table[pair], rtol=1e-12)


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter", "broadcast", "reduce"])
@pytest.mark.parametrize("nodes", [2, 4])
def test_the_replay_with_todays_numbers_is_the_predictive_model_across_nodes_for_rings(op, nodes):
    m = parse_machine(f"gpu=a100,gpus_per_node=8,nodes={nodes},nics_per_node=8,nic_Gbps=200,net=ib")
    ours, theirs = G.replay(op, SIZES, m, GENERIC_NOW), predict(op, SIZES, m)
    assert ours.pairs() == theirs.pairs() and set(ours.table) == set(theirs.table)
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=1e-12)
    for pair in theirs.table:
        np.testing.assert_allclose(ours.table[pair], theirs.table[pair], rtol=1e-12)


def test_the_current_generation_is_handed_to_the_predictive_model_unchanged():
    m = parse_machine("gpu=h100,gpus_per_node=8,nodes=4,nics_per_node=8,nic_Gbps=400,net=ib")
    ours, theirs = G.replay("all_reduce", SIZES, m, G.current()), predict("all_reduce", SIZES, m)
    assert ours.pairs() == theirs.pairs() and np.array_equal(ours.time_s, theirs.time_s)


def test_nccl_2_8s_ring_ll_costs_by_its_own_formula():
    """v2.8.4-1 tuning.cc:125 and :138-152 by hand: one node of 8 A100, all-reduce, Ring/LL: bus bandwidth a quarter of
    the channels' (capped by llMaxBw[Ampere][1 node] = 87.7), latency baseLat 3.6 + 14 steps x NVLink hwLat 0.47."""
    from commlab.tuner.graphs import nccl_graphs

    m = parse_machine("gpu=a100,gpus_per_node=8")
    g = nccl_graphs(m)["Ring"]
    e = G.tuning_table("all_reduce", m, G.load_generation("2.4-2.8"))[("Ring", "LL")]
    bus = min(87.7, min(g.n_channels * g.bw_intra_GBps, 235.0) / 4)
    assert e.algbw_GBps == pytest.approx(bus * 8 / 14) and e.latency_us == pytest.approx(3.6 + 14 * 0.47)
    now = G.tuning_table("all_reduce", m, GENERIC_NOW)[("Ring", "LL")]
    assert now.latency_us == pytest.approx(6.6 + 14 * 0.6)


def test_ll128_is_off_for_hopper_before_2_9_and_on_from_it():
    m = parse_machine("gpu=h100,gpus_per_node=8")
    protos = {g.name: {p for _, p in G.tuning_table("all_reduce", m, g)} for g in G.generations()}
    assert "LL128" not in protos["2.4-2.8"] and "LL128" in protos["2.9-2.17"] and "LL128" in protos["2.24-2.30"]


def test_nvls_is_replayed_only_from_the_generation_that_has_it():
    m = parse_machine("gpu=h100,gpus_per_node=8")
    algos = {g.name: {a for a, _ in G.tuning_table("all_reduce", m, g)} for g in G.generations()}
    assert "NVLS" not in algos["2.4-2.8"] | algos["2.9-2.17"]
    assert "NVLS" in algos["2.18-2.23"] and "NVLS" in algos["2.24-2.30"]


def test_the_ring_plateau_follows_its_generations_rule():
    """2.8: x 1.9 from nRanks / 16 x 64 KiB (v2.8.4-1 :280-281); now x 1.4 (sm80) from 64 bytes a channel a rank."""
    m = parse_machine("gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=200,net=ib,algo=Ring,proto=Simple")
    old, new = G.load_generation("2.4-2.8"), GENERIC_NOW
    s = np.array([16 / 16 * 65536 - 1, 16 / 16 * 65536])
    e_old = G.tuning_table("all_reduce", m, old)[("Ring", "Simple")]
    t_old = G.replay("all_reduce", s, m, old).nccl_time_us
    assert t_old[0] == pytest.approx(e_old.latency_us + s[0] / (1000 * e_old.algbw_GBps))
    assert t_old[1] == pytest.approx(1.9 * e_old.latency_us + s[1] / (1000 * e_old.algbw_GBps))
    assert new.rules["plateau"][1] == 1.4


def test_bad_sizes_are_one_clear_error():
    with pytest.raises(CommlabError, match="nbytes must be finite and >= 0"):
        G.replay("all_reduce", [-1.0], parse_machine("gpu=a100,gpus_per_node=8"), G.load_generation("2.4-2.8"))
    with pytest.raises(CommlabError, match="NCCL's tuner models"):
        G.tuning_table("alltoall", parse_machine("gpu=a100,gpus_per_node=8"), G.load_generation("2.4-2.8"))
