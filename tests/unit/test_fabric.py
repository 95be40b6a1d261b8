"""fabric: nodes and NVLink domains, leaf-spine sizes, rail wiring and the ring across nodes, each held against
an independent reference (vendors' printed figures, a hand-built graph searched breadth-first, commlab.cost)."""
from collections import deque
from itertools import product

import pytest

from commlab import cost, fabric, hardware
from commlab.errors import CommlabError

# ---- nodes and NVLink domains: against the vendors' printed figures ------------------------------------------


def test_dgx_h100_sends_8_x_400_gbit_out_and_has_3_6_TBps_of_nvlink():
    node = fabric.node("dgx-h100")
    assert node.network_out_GBps == 8 * 400 / 8            # 8 ConnectX-7 at 400 Gb/s
    assert node.nvlink_out_GBps == 8 * 450                 # 8 GPUs x 450 GB/s one way
    assert node.nic_per_gpu_GBps == 50 and node.nvlink_out_GBps / node.network_out_GBps == 9


def test_gb200_nvl72_is_nvidias_130_TBps_and_72_gpus():
    nvl72 = fabric.domain("gb200-nvl72")
    assert nvl72.gpus == 72 and round(nvl72.bidir_TBps) == 130          # NVIDIA prints "130 TB/s"
    assert nvl72.unidir_TBps == 72 * 1.8 / 2                            # 1.8 TB/s per GPU, both directions


def test_domains_are_at_least_a_server_and_names_are_checked():
    assert all(d.gpus >= 8 for d in fabric.domains())
    assert max(d.gpus for d in fabric.domains()) == 256                  # DGX GH200
    with pytest.raises(CommlabError, match="gb200-nvl72"):
        fabric.domain("nvl1000")
    with pytest.raises(CommlabError, match="dgx-h100"):
        fabric.node("dgx-z")
    with pytest.raises(CommlabError, match="gpus"):
        fabric.Node("x", "x", 0, "nvswitch3", 8, "ib-ndr", "s")
    with pytest.raises(CommlabError, match="NVLink generation"):
        fabric.NVLinkDomain("x", "x", 8, "pcie5", "s", 2024)


# ---- leaf-spine: port counting on an explicitly wired fabric -------------------------------------------------


def wire(f: fabric.LeafSpine) -> dict:
    """The fabric as an adjacency list, built by hand: host ports on leaves, one uplink per (leaf, spine)."""
    graph = {}
    for leaf in range(f.leaves):
        for port in range(f.down):
            graph.setdefault(("leaf", leaf), []).append(("host", leaf * f.down + port))
        for spine in range(f.radix - f.down):
            graph.setdefault(("leaf", leaf), []).append(("spine", spine))
            graph.setdefault(("spine", spine), []).append(("leaf", leaf))
    return graph


@pytest.mark.parametrize("radix, down, leaves", [(8, 4, 8), (64, 32, 64), (64, 48, 8), (16, 10, 3)])
def test_leaf_spine_counts_match_the_wired_graph(radix, down, leaves):
    f = fabric.LeafSpine(radix=radix, down=down, leaves=leaves)
    graph = wire(f)
    spines = {n for n in graph if n[0] == "spine"}
    hosts = {m for ns in graph.values() for m in ns if m[0] == "host"}
    assert f.hosts == len(hosts) and f.spines == len(spines) and f.switches == leaves + len(spines)
    assert all(len(graph[("leaf", i)]) == radix for i in range(leaves))       # every leaf port used once
    assert all(len(graph[s]) <= radix for s in spines)
    assert f.oversubscription == down / (radix - down)


def test_non_blocking_sizes_and_bisection():
    full = fabric.LeafSpine(radix=64, down=32, leaves=64)
    assert full.hosts == fabric.non_blocking_hosts(64, 2) == 64 * 64 // 2
    assert fabric.non_blocking_hosts(64, 3) == 64**3 // 4
    assert full.bisection_GBps == full.hosts / 2 * 50
    assert fabric.LeafSpine(radix=64, down=48, leaves=8).bisection_GBps == 8 * 48 / 2 * 50 / 3


@pytest.mark.parametrize("kwargs, match", [(dict(radix=8, down=8, leaves=2), "down < radix"),
                                           (dict(radix=8, down=4, leaves=9), "third level"),
                                           (dict(radix=8, down=0, leaves=2), "down"),
                                           (dict(radix=8, down=4, leaves=2, port_GBps=0), "port_GBps")])
def test_leaf_spine_rejects_impossible_fabrics(kwargs, match):
    with pytest.raises(CommlabError, match=match):
        fabric.LeafSpine(**kwargs)


# ---- rail wiring: switch hops against breadth-first search on a hand-built graph -----------------------------


def cluster_graph(n_nodes, gpus_per_node, rail_optimised, nodes_per_leaf, spines=2):
    graph = {}

    def link(a, b):
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set()).add(a)

    for n, g in product(range(n_nodes), range(gpus_per_node)):
        leaf = ("leaf", g) if rail_optimised else ("leaf", n // nodes_per_leaf)
        link(("gpu", n, g), leaf)
    for leaf in [v for v in graph if v[0] == "leaf"]:
        for s in range(spines):
            link(leaf, ("spine", s))
    return graph


def switches_on_path(graph, src, dst) -> int:
    seen, queue = {src: 0}, deque([src])
    while queue:
        v = queue.popleft()
        for w in graph[v]:
            if w not in seen:
                seen[w] = seen[v] + 1
                queue.append(w)
    return seen[dst] - 1                              # vertices strictly between two GPUs are switches


@pytest.mark.parametrize("rail_optimised, nodes_per_leaf", [(True, 1), (False, 1), (False, 2)])
def test_switch_hops_match_breadth_first_search(rail_optimised, nodes_per_leaf):
    n_nodes, gpus = 4, 4
    graph = cluster_graph(n_nodes, gpus, rail_optimised, nodes_per_leaf)
    gpus_all = list(product(range(n_nodes), range(gpus)))
    for a, b in product(gpus_all, gpus_all):
        if a[0] == b[0]:
            assert fabric.switch_hops(a, b, rail_optimised, nodes_per_leaf) == 0    # NVLink inside the node
            continue
        want = switches_on_path(graph, ("gpu", *a), ("gpu", *b))
        assert fabric.switch_hops(a, b, rail_optimised, nodes_per_leaf) == want, (a, b)


def test_rail_arguments_are_checked():
    with pytest.raises(CommlabError, match="node, local GPU index"):
        fabric.switch_hops((0,), (1, 2))
    with pytest.raises(CommlabError, match="nodes_per_leaf"):
        fabric.leaf_of((0, 1), rail_optimised=False, nodes_per_leaf=0)


# ---- the ring across nodes: against commlab.cost and the closed form -----------------------------------------


@pytest.mark.parametrize("name", ["nvlink4", "ib-ndr", "pcie5"])
def test_one_link_everywhere_is_the_plain_ring(name):
    item = hardware.link(name)
    hops = fabric.node_ring(1, 8, name, "ib-ndr")
    for nbytes in (8.0, 1e6, 14e9):
        want = float(cost.ring_all_reduce_time_s(nbytes, 8, item.latency_s, item.unidir_Bps))
        assert fabric.node_ring_all_reduce_time_s(nbytes, hops) == pytest.approx(want, rel=1e-12)


def test_two_nodes_run_at_the_network_hop():
    hops = fabric.node_ring(2, 8, "nvlink4", "ib-ndr")
    assert [h.dst for h in hops] == [(r + 1) % 16 for r in range(16)]
    assert [i for i, h in enumerate(hops) if h.link == "ib-ndr"] == [7, 15]    # leaving node 0, leaving node 1
    ndr, s = hardware.link("ib-ndr"), 14e9
    want = 2 * 15 * (ndr.latency_s + s / 16 / ndr.unidir_Bps)
    assert fabric.node_ring_all_reduce_time_s(s, hops) == pytest.approx(want, rel=1e-12)
    assert fabric.slowest_hop(hops, s / 16).link == "ib-ndr"


def test_parallel_rings_bound():
    dgx = fabric.node("dgx-h100")
    assert fabric.parallel_rings_busbw_GBps(dgx, 1) == 450
    assert fabric.parallel_rings_busbw_GBps(dgx, 2) == min(450, 8 * 50)
    assert fabric.parallel_rings_busbw_GBps(fabric.node("dgx-a100"), 2) == min(300, 8 * 25)


def test_ring_arguments_are_checked():
    with pytest.raises(CommlabError, match="at least 2 ranks"):
        fabric.node_ring(1, 1, "nvlink4", "ib-ndr")
    with pytest.raises(CommlabError, match="unknown link"):
        fabric.node_ring(2, 8, "nvlink4", "ib-qdr")
    with pytest.raises(CommlabError, match="nbytes"):
        fabric.node_ring_all_reduce_time_s(-1, fabric.node_ring(2, 2, "nvlink4", "ib-ndr"))
