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
from commlab.tuner.generation import parse_generation

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


def test_the_current_generations_file_is_the_one_home_of_the_constants_the_predictive_model_reads():
    """nccl_constants reads its tuning tables from the current generation's file: the same objects, not a copy."""
    g = G.current()
    assert g.tag == f"v{K.NCCL_VERSION}-1" and g.commit == K.NCCL_COMMIT
    for table, name in ((K.LL_MAX_BW_GBPS, "ll_max_bw_GBps"), (K.TREE_CORRECTION, "tree_correction"),
                        (K.TREE_MAX_BW_PER_CH_GBPS, "tree_max_bw_per_ch_GBps"),
                        (K.RING_LL128_MAX_BW_PER_CH_GBPS, "ring_ll128_max_bw_per_ch_GBps"),
                        (K.TREE_LL128_MAX_BW_PER_CH_GBPS, "tree_ll128_max_bw_per_ch_GBps")):
        assert table is getattr(g, name), name
    assert K.NVLS_CHUNK_RULES is g.chunking["nvls_rules"] and K.TREE_LL128_CHUNK_RULES is g.chunking["tree_ll128_rules"]
    assert all(g.base_lat_us[k] == v for k, v in K.BASE_LAT_US.items())
    assert all(v == 0.0 for k, v in g.hw_lat_us.items() if k not in K.HW_LAT_US)
    r = g.rules
    assert r["ring_ll_factor"] == (K.LL_BW_FACTOR,) * 2 and r["tree_ll128_factor"] == (K.TREE_LL128_FACTOR_ONE_NODE,
                                                                                      K.TREE_LL128_FACTOR_NODES)


def test_the_current_tables_are_tuning_cc_at_v2_30_7():
    """Spot entries read off NVIDIA/nccl v2.30.7-1 src/graph/tuning.cc (the line each comes from), an independent
    check of the data file: baseLat :151, hwLat NET :171-173, llMaxBws :179-182, the Tree LL factor 1/3.8 :332."""
    assert K.BASE_LAT_US[("Ring", "LL")] == 6.6 and K.BASE_LAT_US[("Tree", "Simple")] == 8.4
    assert K.HW_LAT_US[("net", "Ring", "LL128")] == 4.0 and K.HW_LAT_US[("net", "NVLS", "Simple")] == 18.0
    assert K.LL_MAX_BW_GBPS[("ampere", "n2")] == 22.5 and K.TREE_LL_FACTOR == 1.0 / 3.8


def test_every_generation_sizes_its_chunks_from_its_own_enqueue_cc():
    """calcCollChunking by release, each entry from the tag's own file and line: the Tree/LL128 rule in every
    generation, NVLS's chunk rules from 2.18 (v2.23.4-1 enqueue.cc:2035-2050), none before."""
    for g in G.generations():
        assert set(g.chunking) <= set(G.CHUNKING) and "tree_ll128_rules" in g.chunking
        for name in g.chunking:
            assert re.fullmatch(r"v2\.\d+\.\d+-1 src/(enqueue\.cc|transport/nvls\.cc):\d+(-\d+)?", g.line(name)), \
                (g.name, name)
    has_nvls = {g.name for g in G.generations() if "nvls_rules" in g.chunking}
    assert has_nvls == {"2.18-2.23", "2.24-2.30"}
    assert G.load_generation("2.4-2.8").line("tree_ll128_rules") == "v2.8.4-1 src/enqueue.cc:407-409"


def test_an_older_generations_nvlstree_pick_runs_on_the_hardware_not_on_ncclts_line():
    """NCCL 2.18-2.23 budgets NVLSTree at min(bwIntra, bwInter) x 5/6 with no nvlsEfficiency (v2.23.4-1
    tuning.cc:182-183, 224); the switch reduces at 0.85 of its links whatever the release, and each pipe fills for
    two chunks of the generation's own size. The pick is NCCL 2.18's; its time is the hardware's."""
    m = parse_machine("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=ib")
    s = np.array([2.0 ** 26, 2.0 ** 31])
    gen = G.load_generation("2.18-2.23")
    p = G.replay("all_reduce", s, m, gen)
    assert set(p.pairs()) == {"NVLSTree/Simple"}
    assert np.allclose(p.time_s * 1e6, G.nvls_pick_us("all_reduce", "NVLSTree", "Simple", s, m, gen), rtol=1e-12)
    assert np.all(p.time_s * 1e6 > p.nccl_time_us)             # slower than NCCL 2.18's own estimate


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
        parse_generation({"name": "x", "first": "2.1", "last": "2.2"}, "bad.toml")


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
