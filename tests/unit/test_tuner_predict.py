"""The predictive model against NCCL's tuning.cc worked by hand, and against the real logs' bandwidth regime."""
from __future__ import annotations

import json

import numpy as np
import pytest

from commlab.tuner import nccl_constants as K
from commlab.tuner.machine import parse_machine
from commlab.tuner.graphs import nccl_graphs
from commlab.tuner.predict import nccl_tuning_table, predict
from commlab.errors import CommlabError

H100x8 = parse_machine("gpu=h100,gpus_per_node=8")
A100x2x8 = parse_machine("gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=4,nic_Gbps=100,net=efa")


def test_h100_channel_search_by_hand():
    # total 18 x 20.6 = 370.8; ring: 60 GB/s x 6 = 360 (the best product), doubled to 12 x 30 (search.cc:1036)
    g = nccl_graphs(H100x8)
    assert (g["Ring"].n_channels, g["Ring"].bw_intra_GBps) == (12, 30.0)
    # tree: the ring's 12 channels, 12 x 30 <= 370.8 x 8/7 < 12 x 40
    assert (g["Tree"].n_channels, g["Tree"].bw_intra_GBps) == (12, 30.0)
    # NVLS: one head per GPU; 8 x 40 <= 370.8 < 8 x 50; pass 2 raises bwInter to the top of the list, 60
    assert (g["NVLS"].n_channels, g["NVLS"].bw_intra_GBps, g["NVLS"].bw_inter_GBps) == (8, 40.0, 60.0)


def test_h100_tuning_table_by_hand():
    t = nccl_tuning_table("all_reduce", H100x8)
    # Ring LL: latency 6.6 + 14 x 0.6 = 15.0 us; bus min(llMaxBw 141, 0.5 x 360) = 141; algbw 141 x 8/14
    assert t[("Ring", "LL")].latency_us == pytest.approx(15.0)
    assert t[("Ring", "LL")].busbw_GBps == pytest.approx(141.0)
    assert t[("Ring", "LL")].algbw_GBps == pytest.approx(141.0 * 8 / 14)
    # Ring LL128: min(0.92 x 360, 12 x 36.7); latency 14 + 14 x 1.9
    assert t[("Ring", "LL128")].busbw_GBps == pytest.approx(min(0.92 * 360, 12 * 36.7))
    assert t[("Ring", "LL128")].latency_us == pytest.approx(14 + 14 * 1.9)
    # Tree Simple all-reduce: min(0.92 x 360, 12 x 38.7), algbw x 1/2; latency 8.4 + 2 x 7 x 4.0
    assert t[("Tree", "Simple")].algbw_GBps == pytest.approx(min(0.92 * 360, 12 * 38.7) / 2)
    assert t[("Tree", "Simple")].latency_us == pytest.approx(8.4 + 2 * 7 * 4.0)
    # Tree LL: the Tree factor first, then / 3.8, capped by llMaxBw
    assert t[("Tree", "LL")].busbw_GBps == pytest.approx(min(min(0.92 * 360, 12 * 38.7) / 3.8, 141.0))
    # NVLS: 8 x min(40 x 0.85 x 7/8 x 2, 60) = 476 GB/s of bus, algbw x 8/14; latency one NVLink NVLS hop, 25 us
    assert t[("NVLS", "Simple")].busbw_GBps == pytest.approx(8 * min(40 * 0.85 * 7 / 8 * 2, 60))
    assert t[("NVLS", "Simple")].latency_us == pytest.approx(25.0)
    assert ("NVLSTree", "Simple") not in t                          # one node: NVLS Tree is off


def test_two_nodes_of_a100_over_efa_by_hand():
    g = nccl_graphs(A100x2x8)
    # one channel per 12.5 GB/s EFA device at 12 GB/s (the first speed <= the NIC); the tree's intra-node speed
    # is raised to 2 x 12 = 24 (search.cc:1270)
    assert (g["Ring"].n_channels, g["Ring"].bw_intra_GBps) == (4, 12.0)
    assert (g["Tree"].n_channels, g["Tree"].bw_intra_GBps, g["Tree"].bw_inter_GBps) == (4, 24.0, 12.0)
    t = nccl_tuning_table("all_reduce", A100x2x8)
    # Tree Simple: 2 nodes use bwIntra: min(0.92 x 4 x 24, 4 x 23.6) = 88.32, algbw / 2
    assert t[("Tree", "Simple")].algbw_GBps == pytest.approx(88.32 / 2)
    # Tree LL latency: 6.8 + 2 x (7 x 0.6 + log2(2) x (5.0 + 75 us of the EFA plugin))
    assert t[("Tree", "LL")].latency_us == pytest.approx(6.8 + 2 * (7 * 0.6 + 1 * (5.0 + 75.0)))
    # Ring Simple across nodes: each hop at least 3 x the 1 us post overhead; 2 network hops, each 14 + 2 x 75
    ring = 8.4 + (30 - 2) * max(3.4, 3.0) + 2 * (14.0 + 75 + 75)
    assert t[("Ring", "Simple")].latency_us == pytest.approx(ring)
    # the ring plateau: x 1.4 once each rank's share per channel reaches 64 bytes (tuning.cc:647)
    p = predict("all_reduce", [2**10, 2**20], A100x2x8)
    bw = t[("Ring", "Simple")].algbw_GBps
    assert p.table[("Ring", "Simple")][1] == pytest.approx(ring * 1.4 + 2**20 / (1000 * bw))


def test_the_pick_is_the_least_time_and_the_smallest_sizes_use_ll():
    sizes = 2.0 ** np.arange(0, 35)
    p = predict("all_reduce", sizes, H100x8)
    assert p.proto[0] == "LL" and p.pairs()[-1] == "NVLS/Simple"
    stacked = np.stack([p.table[k] for k in p.table])
    # NCCL's choice is by its budget; on one NVSwitch node the realised times differ only for Ring/Tree
    assert np.all(p.time_s * 1e6 <= stacked.max(axis=0))
    # NVLS: budget = realised but for the pipeline fill: 2 chunks of 128 KiB (>= 1 GiB) on 16 channels x 8 heads
    fill_us = 2 * 131072 * 16 * 8 / (1000 * nccl_tuning_table("all_reduce", H100x8)[("NVLS", "Simple")].algbw_GBps)
    assert p.time_s[-1] * 1e6 == pytest.approx(p.nccl_time_us[-1] + fill_us)
    assert p.busbw_GBps[-1] == pytest.approx(476.0, rel=0.01)


@pytest.mark.parametrize("desc, algo, sizes_chunks", [
    # one H100 node, NVLS: 128 KiB halved under 64, 8, 2 x (16 channels x 8 heads) chunks (enqueue.cc:2272-2274)
    ("gpu=h100,gpus_per_node=8", "NVLS",
     [(2**23 - 1, 16384), (2**23, 32768), (2**26, 65536), (2**30 - 1, 65536), (2**30, 131072)]),
    # 2 H100 nodes, NVLSTree: 128 KiB; 64 KiB under 4 x 128 chunks of 128 KiB; 32 KiB under 128 of 64 KiB
    ("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400", "NVLSTree",
     [(2**23 - 1, 32768), (2**23, 65536), (2**26 - 1, 65536), (2**26, 131072)]),
    # 4+ nodes: NVLSTree's chunk is capped at 64 KiB (nvls.cc:227-229)
    ("gpu=h100,gpus_per_node=8,nodes=8,nics_per_node=8,nic_Gbps=400", "NVLSTree", [(2**23, 65536), (2**33, 65536)]),
])
def test_nvls_chunk_follows_calc_coll_chunking(desc, algo, sizes_chunks):
    from commlab.tuner.table import nvls_chunk_bytes
    m = parse_machine(desc)
    heads = nccl_graphs(m)[algo].n_channels
    assert [nvls_chunk_bytes(algo, s, m, heads) for s, _ in sizes_chunks] == [c for _, c in sizes_chunks]


def test_pipeline_fill_only_on_nvls_all_reduce():
    m = parse_machine("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400")
    sizes = np.array([2.0**22, 2.0**26])
    p = predict("all_reduce", sizes, m)
    real = nccl_tuning_table("all_reduce", m, realized=True)
    ring = real[("Ring", "Simple")]
    bare = ring.latency_us * 1.4 + sizes / (1000 * ring.algbw_GBps)             # ring plateau, no fill
    assert p.table[("Ring", "Simple")] == pytest.approx(bare)
    nvt = real[("NVLSTree", "Simple")]
    fill = 2 * np.array([32768, 131072]) * 16 * 8 / (1000 * nvt.algbw_GBps)   # 32 KiB at 4 MiB, 128 KiB at 64
    assert p.table[("NVLSTree", "Simple")] == pytest.approx(nvt.latency_us + sizes / (1000 * nvt.algbw_GBps) + fill)


def test_vectorised_equals_scalar_calls():
    sizes = [1024.0, 2.0**20, 2.0**27]
    p = predict("all_gather", sizes, A100x2x8)
    for i, s in enumerate(sizes):
        q = predict("all_gather", s, A100x2x8)
        assert float(q.time_s) == pytest.approx(p.time_s[i]) and str(q.algo) == p.algo[i]


def test_ll128_only_over_nvlink_and_tree_only_for_all_reduce():
    pcie = parse_machine("gpu=rtx2080ti,gpus_per_node=2,pcie=3")
    assert all(proto != "LL128" for _, proto in nccl_tuning_table("all_reduce", pcie))
    assert {a for a, _ in nccl_tuning_table("broadcast", H100x8)} == {"Ring"}
    assert {a for a, _ in nccl_tuning_table("all_gather", H100x8)} == {"Ring", "NVLS"}


def test_the_16x8_conclusion_ring_takes_over_from_the_tree_at_large_sizes():
    """Chapter 06 with the Tree factor and caps: on 16 nodes x 8 H100 (8 x 400 Gb/s IB) the tree does not win
    at every size."""
    m = parse_machine("gpu=h100,gpus_per_node=8,nodes=16,nics_per_node=8,nic_Gbps=400,net=ib,nvls=0")
    p = predict("all_reduce", 2.0 ** np.arange(10, 36), m)
    assert p.algo[0] == "Tree" and "Ring" in set(p.algo)


@pytest.mark.parametrize("op, words", [("all_to_all", "grouped send/recv"), ("sendrecv", "grouped send/recv"),
                                       ("allreduce_typo", "unknown collective")])
def test_untuned_collectives_are_refused(op, words):
    with pytest.raises(CommlabError, match=words):
        predict(op, [1024], H100x8)


def test_constants_name_their_source():
    assert K.NCCL_VERSION == "2.30.7" and K.NCCL_COMMIT.startswith("73cf1122")   # git rev-parse v2.30.7-1
    assert K.BASE_LAT_US[("Tree", "LL")] == 6.8 and K.HW_LAT_US[("net", "NVLSTree", "Simple")] == 20.9
    assert K.LL_MAX_BW_GBPS[("blackwell", "n1")] == 2 * 141.0 and K.TREE_MAX_BW_PER_CH_GBPS[("hopper", "n2")] == 41.4
    json.dumps({f"{a}/{p}": v for (a, p), v in K.BASE_LAT_US.items()}, allow_nan=False)


def test_blackwell_constants_match_tuning_cc():
    """Read against NVIDIA/nccl v2.30.7 tuning.cc:139-210 and topo.h:24: NVLink 5 at 40.1 GB/s
    a link, LL on one node 2 x 141, LL128 40 a channel, Tree caps 70 / 42.8 / 24, NVLS efficiency 0.74."""
    assert K.nvlink_bw_GBps(100) == 40.1 and K.arch_of(100) == "blackwell"
    assert [K.LL_MAX_BW_GBPS[("blackwell", n)] for n in ("n1", "n2", "n4")] == [282.0, 90.0, 70.0]
    assert {K.RING_LL128_MAX_BW_PER_CH_GBPS[("blackwell", n)] for n in ("n1", "n2", "n4")} == {40.0}
    assert [K.TREE_LL128_MAX_BW_PER_CH_GBPS[("blackwell", n)] for n in ("n1", "n2", "n4")] == [55.6, 31.67, 20.0]
    assert [K.TREE_MAX_BW_PER_CH_GBPS[("blackwell", n)] for n in ("n1", "n2", "n4")] == [70.0, 42.8, 24.0]
    assert [K.NVLS_TREE_MAX_BW_PER_CH_GBPS[("blackwell", n)] for n in ("n1", "n2", "n4")] == [0.0, 96.0, 80.0]
    assert K.NVLS_EFFICIENCY["blackwell"] == 0.74
    # across nodes the LL cap follows the CPU, not the GPU (tuning.cc:270-272): an Intel B200 pair of nodes gets 39
    b200 = parse_machine("gpu=b200,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=roce")
    assert nccl_tuning_table("all_gather", b200)[("Ring", "LL")].busbw_GBps == pytest.approx(39.0)


def test_the_tree_fill_is_one_chunk_time_per_network_hop_up_and_down():
    """Tree/LL128 and Tree/Simple all-reduce across nodes: 2 log2(nodes) chunk times of one channel's pipe
    (tree_chunk_bytes), only in the realised time; none for LL, rings, one node or other collectives."""
    import math

    from commlab.tuner import nccl_constants as K
    from commlab.tuner.machine import parse_machine
    from commlab.tuner.predict import _tree_fill_us
    from commlab.tuner.table import nccl_tuning_table, tree_chunk_bytes

    m = parse_machine("gpu=h100,gpus_per_node=8,nodes=4,nics_per_node=8,nic_Gbps=400,net=ib")
    s = np.array([2.0**20, 2.0**23])
    table = nccl_tuning_table("all_reduce", m, realized=True)
    e = table[("Tree", "LL128")]
    fill = _tree_fill_us("all_reduce", "Tree", "LL128", e, s, m, 16)
    chunks = [tree_chunk_bytes("LL128", x, m, 16) for x in s]
    assert chunks[0] == 17280                      # by hand: 576000 halved to 72000, then 18000, in 1920 B grains
    expect = [2 * math.log2(4) * c * 16 / (1000 * e.algbw_GBps) for c in chunks]
    assert np.allclose(fill, expect) and K.TREE_FILL_HOPS_PER_LEVEL == 2
    for algo, proto in (("Tree", "LL"), ("Ring", "LL128"), ("Ring", "Simple")):
        assert not np.any(_tree_fill_us("all_reduce", algo, proto, table[(algo, proto)], s, m, 16))
    one = parse_machine("gpu=h100,gpus_per_node=8,nvls=0")
    assert not np.any(_tree_fill_us("all_reduce", "Tree", "LL128", nccl_tuning_table("all_reduce", one)[
        ("Tree", "LL128")], s, one, 16))
    p = predict("all_reduce", s, m)
    tree = p.algo == "Tree"
    assert np.all(p.time_s[tree] * 1e6 >= p.nccl_time_us[tree])


def test_nvlstree_estimate_takes_the_tree_correction_on_blackwell_x86_only():
    # v2.30.7-1 tuning.cc:643-646: bw x treeCorrectionFactor[Simple][log2(nBytes / 64)] for NVLSTree all-reduce when
    # minCompCap >= 100 and the host is x86; the factors are the Tree's row (tuning.cc:623-627), worked here by hand
    simple = [0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8,
              0.9, 0.9, 0.9]
    s = np.array([2.0 ** 20, 2.0 ** 24, 2.0 ** 29, 2.0 ** 31])
    for desc, corrected in (("gpu=b200,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=ib", True),
                            ("gpu=gb200,gpus_per_node=4,nodes=2,nics_per_node=4,nic_Gbps=400,net=ib", False),
                            ("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=ib", False)):
        m = parse_machine(desc)
        e = nccl_tuning_table("all_reduce", m)[("NVLSTree", "Simple")]
        p = predict("all_reduce", s, m)
        factor = np.array([simple[int(np.log2(x / 64))] if np.log2(x / 64) < 24 else 1.0 for x in s])
        want = e.latency_us + s / (1000.0 * e.algbw_GBps * (factor if corrected else 1.0))
        assert p.nccl_table[("NVLSTree", "Simple")] == pytest.approx(want), desc
