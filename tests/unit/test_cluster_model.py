"""The cluster model against independent references: NCCL's tuner (predict) where the fabric adds nothing,
NCCL's own tree code, the closed-form alpha-beta costs, tuning.cc's CollNet formulas by hand, and the fabric's
arithmetic on oversubscribed trees."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from commlab import cost
from commlab.tuner.predict import predict
from commlab.cluster import Fabric, Shape, cluster_cost, preset, sweep_nodes
from commlab.cluster.levels import btree_parents, dtree_parents, tree_pattern
from commlab.tuner import nccl_constants as K
from commlab.tuner.machine import NETS
from commlab.tuner.graphs import nccl_graphs
from commlab.errors import CommlabError

SIZES = 2.0 ** np.arange(3, 35)
NCCL_NAMES = {"ring": ("Ring",), "tree": ("Tree",), "nvls-tree": ("NVLS", "NVLSTree")}


def _nccl_ranked_time(op, sizes, machine, names):
    """Per size, the realised time of the pair (of these algorithms) NCCL's own estimate ranks first."""
    p = predict(op, sizes, machine)
    keys = [k for k in p.table if k[0] in names]
    if not keys:
        return None
    best = np.argmin(np.vstack([p.nccl_table[k] for k in keys]), axis=0)
    return np.choose(best, [p.table[k] for k in keys]) * 1e-6


@pytest.mark.parametrize("name, nodes", [("aws-p5", 1), ("aws-p5", 2), ("aws-p4de", 2), ("gke-a4", 2),
                                         ("oci-a100-roce", 2), ("dgx-h100-ndr", 32), ("gb200-nvl72", 18)])
@pytest.mark.parametrize("op", ["all_reduce", "all_gather"])
def test_ncclS_algorithms_are_predicts_where_the_fabric_adds_nothing(name, nodes, op):
    """All nodes under one leaf per rail, nothing oversubscribed: the cluster model is NCCL's tuner exactly."""
    c = cluster_cost(op, SIZES, name, nodes)
    for algo, names in NCCL_NAMES.items():
        if algo not in c.algos or not c[algo].available:
            continue
        ref = _nccl_ranked_time(op, SIZES, preset(name).machine(nodes), names)
        np.testing.assert_allclose(c[algo].time_s, ref, rtol=1e-12)
    assert c.nccl_pick == tuple({"Ring": "ring", "Tree": "tree", "NVLS": "nvls-tree", "NVLSTree": "nvls-tree"}[a]
                                for a in predict(op, SIZES, preset(name).machine(nodes)).algo)


def _nccl_btree(nranks, rank):
    """src/graph/trees.cc ncclGetBtree, line by line: (up, down0, down1)."""
    bit = 1
    while bit < nranks:
        if bit & rank:
            break
        bit <<= 1
    if rank == 0:
        return -1, -1, (bit >> 1 if nranks > 1 else -1)
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    lowbit = bit >> 1
    down0 = -1 if lowbit == 0 else rank - lowbit
    down1 = -1 if lowbit == 0 else rank + lowbit
    while down1 >= nranks:
        down1 = -1 if lowbit == 0 else rank + lowbit
        lowbit >>= 1
    return up, down0, down1


@pytest.mark.parametrize("n", list(range(1, 40)) + [64, 100, 127, 128, 2048])
def test_tree_parents_follow_ncclS_code(n):
    parents = btree_parents(n)
    for r in range(n):
        up, d0, d1 = _nccl_btree(n, r)
        assert parents[r] == up
        for child in (d0, d1):
            if child != -1:
                assert parents[child] == r
    for tree in dtree_parents(n):
        assert (tree == -1).sum() == 1                                     # one root, every other rank one parent
        depth = np.zeros(n, dtype=int)
        for r in range(n):
            x, steps = r, 0
            while tree[x] != -1:
                x, steps = tree[x], steps + 1
                assert steps <= n
            depth[r] = steps
        assert depth.max() <= math.ceil(math.log2(n)) + 1


def test_a_two_node_tree_sends_each_byte_out_once_and_an_internal_node_twice():
    assert tree_pattern(Shape.of(preset("aws-p5"), 2)).out == 1.0
    assert tree_pattern(Shape.of(preset("dgx-h100-ndr"), 1024)).out == 2.0


def _alpha_beta_min(closed_form, shape, sizes, hop, bw_GBps, algo="Ring"):
    """min over NCCL's protocols of base + closed_form(alpha of the hop, bandwidth x efficiency)."""
    best = None
    eff = {"LL": K.LL_BW_FACTOR, "LL128": K.LL128_BW_FACTOR, "Simple": 1.0}
    for proto in shape.protocols:
        alpha = shape.net_latency_us(proto) if hop == "net" else shape.intra_latency_us(proto)
        t = K.BASE_LAT_US[(algo, proto)] * 1e-6 + closed_form(sizes, shape.gpus, alpha * 1e-6,
                                                                bw_GBps * 1e9 * eff[proto])
        best = t if best is None else np.minimum(best, t)
    return best


def test_flat_ring_is_the_textbook_ring_on_its_slowest_hop():
    one = Shape.of(preset("dgx-h100-ndr"), 1)
    c = cluster_cost("all_reduce", SIZES, "dgx-h100-ndr", 1, "flat-ring")
    ref = _alpha_beta_min(cost.ring_all_reduce_time_s, one, SIZES, "intra", one.nvlink_GBps)
    np.testing.assert_allclose(c["flat-ring"].time_s, ref, rtol=1e-9)
    # across nodes every step waits for a network hop through one NIC (on a rail fabric: via a spine)
    two = Shape.of(preset("h100-1k-superpod"), 2)
    c2 = cluster_cost("all_gather", SIZES, "h100-1k-superpod", 2, "flat-ring")
    hops = 2 * two.cluster.fabric.switch_latency_us * 1e-6

    def ring_ag(s, n, a, b):
        return cost.ring_all_gather_time_s(s, n, a + hops, b)
    ref2 = _alpha_beta_min(ring_ag, two, SIZES, "net", two.nic_GBps)
    np.testing.assert_allclose(c2["flat-ring"].time_s, ref2, rtol=1e-9)


def test_rabenseifner_and_pat_inside_one_node_are_their_closed_forms():
    one = Shape.of(preset("dgx-h100-ndr"), 1)
    ar = cluster_cost("all_reduce", SIZES, "dgx-h100-ndr", 1, "rabenseifner")["rabenseifner"].time_s
    np.testing.assert_allclose(ar, _alpha_beta_min(cost.rabenseifner_all_reduce_time_s, one, SIZES, "intra",
                                                   one.nvlink_GBps), rtol=1e-9)
    ag = cluster_cost("all_gather", SIZES, "dgx-h100-ndr", 1, "pat")["pat"].time_s
    np.testing.assert_allclose(ag, _alpha_beta_min(cost.log_step_all_gather_time_s, one, SIZES, "intra",
                                                   one.nvlink_GBps), rtol=1e-9)


def test_pat_keeps_the_big_pieces_on_nvlink_and_rabenseifner_does_not():
    """All-gather across 2 nodes: PAT sends S/16 per GPU over the network (the far partner first, one chunk);
    recursive doubling sends S/2 (its last, largest step crosses nodes)."""
    big = np.array([2.0**34, 2.0**35])
    c = cluster_cost("all_gather", big, "dgx-h100-ndr", 2, ["pat", "rabenseifner"])
    shape = Shape.of(preset("dgx-h100-ndr"), 2)
    per_gpu = shape.network_GBps / 8 * 1e9
    slope = {a: (c[a].time_s[1] - c[a].time_s[0]) / (big[1] - big[0]) for a in ("pat", "rabenseifner")}
    nvlink = 1 / (shape.nvlink_GBps * 1e9)
    assert slope["pat"] == pytest.approx(1 / 16 / per_gpu + 14 / 16 * nvlink, rel=1e-9)
    assert slope["rabenseifner"] == pytest.approx(1 / 2 / per_gpu + 7 / 16 * nvlink, rel=1e-9)


def _slope(result, algo):
    t, s = result[algo].time_s, result.nbytes
    return (t[-1] - t[-2]) / (s[-1] - s[-2])


def _tor(ratio, rail=False):
    base = preset("h100-1k-superpod")
    fabric = Fabric(levels=2, leaf_nics=32, pod_leaves=32, oversubscription=(ratio,), rail_optimised=rail,
                    sharp=False, radix=64, switch_latency_us=0.13)
    return dataclasses.replace(base, name=f"tor-{ratio}-{rail}", fabric=fabric)


def test_all_to_all_on_an_oversubscribed_tree_slows_by_the_share_that_leaves_the_leaf():
    """Every GPU sends S/N to each GPU: of a leaf's network bytes (D-g)/(D-1) leave it, over 1/r of the bandwidth."""
    big = np.array([2.0**34, 2.0**35])
    flat = cluster_cost("all_to_all", big, _tor(1.0), 128)
    for ratio, rail, g in ((2.0, False, 4), (4.0, False, 4), (2.0, True, 32)):
        slowed = cluster_cost("all_to_all", big, _tor(ratio, rail), 128)
        expected = ratio * (128 - g) / 127
        assert _slope(slowed, "direct") / _slope(flat, "direct") == pytest.approx(expected, rel=1e-9)
        assert slowed["direct"].bottleneck[-1].startswith("leaf:")
    inside = cluster_cost("all_to_all", big, _tor(2.0, True), 32)          # one rail group: nothing goes up
    assert _slope(inside, "direct") == pytest.approx(_slope(cluster_cost("all_to_all", big, _tor(1.0), 32),
                                                            "direct"), rel=1e-9)


def test_rings_hardly_feel_oversubscription_and_trees_neither():
    """One ring stream leaves each leaf group: with g domains per leaf the uplinks carry 1/g of the NICs' bytes."""
    for algo in ("ring", "tree", "nvls-tree"):
        flat = cluster_cost("all_reduce", SIZES, _tor(1.0), 128, algo)[algo].time_s
        two = cluster_cost("all_reduce", SIZES, _tor(2.0), 128, algo)[algo].time_s
        np.testing.assert_allclose(two, flat, rtol=1e-12)
    eight = cluster_cost("all_reduce", SIZES, _tor(8.0), 128, "ring")["ring"]
    assert eight.bottleneck[-1].startswith("leaf:")                       # r = 8 > g = 4: now it binds


def test_collnet_and_nvls_sharp_follow_tuning_cc_by_hand():
    shape = Shape.of(preset("dgx-h100-ndr"), 64)
    c = cluster_cost("all_reduce", [8.0, 2.0**34], "dgx-h100-ndr", 64, ["collnet-direct", "nvls-sharp"])
    plugin = NETS["ib"]
    g = nccl_graphs(shape.machine)["NVLSTree"]
    assert [grp.domains for grp in shape.groups] == [32, 128]             # 64 nodes: two leaves per rail, one pod
    # NVLS with CollNet: latency 25 (NVLink) + 18 (net) + plugin x 2 (Simple), bandwidth per channel min(intra, inter)
    lat = (25.0 + 18.0 + 2 * plugin + shape.extra_hops_us(1)) * 1e-6
    per_ch = min(2 * g.bw_intra_GBps * 0.85 * (g.n_channels - 1) / g.n_channels, g.bw_inter_GBps)
    algbw = g.n_channels * per_ch * 512 / (2 * 511)
    assert c["nvls-sharp"].time_s[0] == pytest.approx(lat + 8.0 / (algbw * 1e9), rel=1e-9)
    # CollNetDirect: busBw = ch x bwIntra / (f - (f-1)/2), f = ppn / ch, x 0.85 on sm90; algbw = busBw / 2
    f = 8 / g.n_channels
    bus = g.n_channels * g.bw_intra_GBps / (f - (f - 1) / 2) * 0.85
    lat_d = (2 * (3.7 + 7 * 0.4) + 31.0 + 2 * plugin + shape.extra_hops_us(1)) * 1e-6
    assert c["collnet-direct"].time_s[1] == pytest.approx(lat_d + 2.0**34 / (bus / 2 * 1e9), rel=1e-9)


def test_sharp_needs_a_fabric_with_sharp_and_more_than_one_node():
    no_sharp = cluster_cost("all_reduce", [2**20], "h100-16k-roce", 64)
    assert not no_sharp["collnet-direct"].available and "SHARP" in no_sharp["collnet-direct"].why
    one = cluster_cost("all_reduce", [2**20], "dgx-h100-ndr", 1)
    assert not one["nvls-sharp"].available and "one NVLink domain" in one["nvls-sharp"].why
    a100 = cluster_cost("all_reduce", [2**20], "aws-p4de", 2)
    assert not a100["nvls-tree"].available and "H100 or later" in a100["nvls-tree"].why


def test_busbw_is_nccl_tests_factor_times_algbw_and_the_bottleneck_moves_with_size():
    c = cluster_cost("all_reduce", [8.0, 2.0**34], "h100-1k-superpod", 128)
    for a in c.available():
        np.testing.assert_allclose(c[a].busbw_GBps, c[a].algbw_GBps * 2 * 1023 / 1024)
        assert c[a].bottleneck[0].startswith("latency:")
    assert c["nvls-tree"].bottleneck[1].startswith("nic:")
    assert c["flat-ring"].time_s[0] > 100 * c["nvls-sharp"].time_s[0]  # 2046 steps against one pass up and down


def test_scatter_fits_log_10():
    """nccl-tests' scatter of 2 GiB from one GPU to 15 over 2 p4d(e): the root's node sends half through 4 EFA."""
    sizes = np.array([536870912, 1073741824, 2147483648], dtype=float)
    measured_us = np.array([6561.3, 12828, 25421])
    c = cluster_cost("scatter", sizes, "aws-p4de", 2)
    err = np.abs(c["direct"].time_s * 1e6 / measured_us - 1)
    assert np.median(err) < 0.20 and c["direct"].bottleneck[-1].startswith("nic:")


def test_sweep_over_nodes_and_bad_input():
    t = sweep_nodes("all_reduce", SIZES, "dgx-h100-ndr", [1, 2, 16, 256])
    assert t["ring"].shape == (4, len(SIZES)) and np.isnan(t["nvls-sharp"][0]).all()
    assert np.all(np.diff(t["ring"][:, 0]) > 0)                           # more nodes, more ring steps
    for args, words in ((("all_reduce", [0], "dgx-h100-ndr", 2), "sizes > 0"),
                        (("sendrecv", [8], "dgx-h100-ndr", 2), "the cluster model costs"),
                        (("all_reduce", [8], "dgx-h100-ndr", 0), "connects 1 to 8192"),
                        (("all_reduce", [8], "dgx-h100-ndr", 2, "pat"), "does not run all_reduce")):
        with pytest.raises(CommlabError, match=words):
            cluster_cost(*args)


def test_a_group_keeps_its_nodes_leaves_and_pods_and_its_share_of_the_nics():
    from commlab.cluster.groups import group_span, group_view

    for name in ("dgx-h100-ndr", "h100-16k-roce", "aws-p4de"):
        c = preset(name)
        for per_node in (1, 2, 4):
            view = group_view(c, per_node)
            full, part = Shape.of(c, 256), Shape.of(view, 256)
            assert [g.domains for g in part.groups] == [g.domains for g in full.groups]
            assert part.network_GBps * c.gpus_per_node == pytest.approx(full.network_GBps * per_node, rel=0.3)
            assert view.nic_Gbps * view.nics_per_node == pytest.approx(c.nic_Gbps * c.nics_per_node * per_node / 8)
    assert group_span(4096, 4, 8) == (2, 2048)


def test_a_ring_crosses_the_network_once_per_node_so_more_ranks_per_node_share_the_traffic():
    """Reduce-scatter over 256 nodes: with 2 ranks per node (each with its NIC) the ring sends (N-1)/N S out of
    each node over 2 NICs; with 1 rank per node over 1: half the NIC time per byte."""
    from commlab.cluster.groups import group_view

    big = np.array([2.0**34, 2.0**35])
    one = cluster_cost("reduce_scatter", big, group_view(preset("dgx-h100-ndr"), 1), 256, "ring")
    two = cluster_cost("reduce_scatter", big, group_view(preset("dgx-h100-ndr"), 2), 256, "ring")
    assert _slope(one, "ring") / _slope(two, "ring") == pytest.approx(2.0, rel=0.05)
