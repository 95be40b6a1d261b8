"""NVLink without an NVSwitch: the per-pair layouts, and NCCL's channel search replayed over them.

The reference for the ring counts is independent of the replay: an exhaustive packing of directed Hamiltonian
cycles into the pairs' capacities (every ring of n GPUs, every multiplicity), which is the most a ring search
could ever find at one speed.
"""
from __future__ import annotations

import itertools

import pytest

from commlab.cost import nccl_constants as K
from commlab.cost.machine import parse_machine
from commlab.cost.nccl_graphs import mesh_search, nccl_graphs
from commlab.cost.nccl_predict import predict
from commlab.cost.nvlink_search import replay
from commlab.errors import CommlabError


def _max_rings(n: int, pair_bw: dict, speed: float) -> int:
    """The most directed Hamiltonian cycles (with repeats) whose hops fit the pairs' bandwidth at ``speed``."""
    cap = {}
    for (a, b), bw in pair_bw.items():
        cap[(a, b)] = cap[(b, a)] = int(bw // speed + 1e-9)
    cycles = []
    for perm in itertools.permutations(range(1, n)):
        hops = list(zip((0, *perm), (*perm, 0)))
        if all(cap.get(h, 0) > 0 for h in hops):
            cycles.append(hops)
    best = 0
    bound = max(cap.values(), default=0)
    for counts in itertools.product(range(bound + 1), repeat=len(cycles)):
        load: dict = {}
        for c, hops in zip(counts, cycles):
            for h in hops:
                load[h] = load.get(h, 0) + c
        if all(v <= cap.get(h, 0) for h, v in load.items()):
            best = max(best, sum(counts))
    return best


def _pair_bw(desc: str) -> tuple[int, dict]:
    m = parse_machine(desc)
    per_link = K.nvlink_bw_GBps(m.compute_capability)
    return m.gpus_per_node, {p: k * per_link for p, k in m.nvlink_pairs.items()}


@pytest.mark.parametrize("desc, speed", [
    ("gpu=a100,gpus_per_node=4,nvlink_topology=mesh", 40.0),      # HGX A100 4-GPU: NV4 = 80 GB/s a pair
    ("gpu=a100,gpus_per_node=4,nvlink_topology=mesh", 30.0),
    ("gpu=h100,gpus_per_node=4,nvlink_topology=mesh", 60.0),      # HGX H100 4-GPU: NV6 = 123.6 GB/s
    ("gpu=v100,gpus_per_node=4,nvlink_topology=dgx1", 20.0),      # one quad of a DGX-1: NV1 and NV2 mixed
    ("gpu=v100,gpus_per_node=4,nvlink_topology=dgx1", 40.0),      # no ring of NV2 pairs only in a quad
    ("gpu=a100,gpus_per_node=4,nvlink_topology=0-1:4+1-2:4+2-3:4+0-3:4", 40.0),   # a square, no diagonals
])
def test_the_replayed_search_finds_as_many_rings_as_the_links_hold(desc, speed):
    n, pair_bw = _pair_bw(desc)
    found, _ = replay(n, pair_bw, speed, True, 1, 32, False, 1 << 14, None)
    assert (found[0] if found else 0) == _max_rings(n, pair_bw, speed)


def test_same_channels_replays_one_ring():
    """With sameChannels the next channel must repeat the ring: an NV4 pair holds it twice at 40 GB/s."""
    n, pair_bw = _pair_bw("gpu=a100,gpus_per_node=4,nvlink_topology=mesh")
    assert replay(n, pair_bw, 40.0, True, 1, 32, True, 1 << 8, None)[0][0] == 2


def test_nccl_budget_on_the_known_boards():
    """Rings of the DGX-1 (3 Hamiltonian cycles of 6 links, both ways) and of the HGX-4 boards fill every link,
    so NCCL's budget equals the pooled one; a quad of a DGX-1 does not (4 or 5 of its links stay inside)."""
    dgx1 = parse_machine("gpu=v100,gpus_per_node=8")
    assert not dgx1.has_nvswitch and dgx1.nvlink_layout == "dgx1" and dgx1.intra_total_GBps == 120.0
    assert mesh_search(dgx1, ring=True) == (6, 20.0, 20.0)
    hgx_a100 = parse_machine("gpu=a100,gpus_per_node=4,nvswitch=0")
    assert mesh_search(hgx_a100, ring=True) == (12, 20.0, 20.0)               # 6 x 40, doubled (search.cc:1036)
    quad = parse_machine("gpu=v100,gpus_per_node=4,nvlink_topology=dgx1")
    assert quad.intra_total_GBps == 100.0                                     # GPU 2: NV1 + NV2 + NV2
    ring = nccl_graphs(quad)["Ring"]
    assert ring.n_channels * ring.bw_intra_GBps == 80.0 < quad.intra_total_GBps
    pooled = nccl_graphs(parse_machine("gpu=v100,gpus_per_node=4,nvswitch=1"))["Ring"]
    assert pooled.n_channels * pooled.bw_intra_GBps == 120.0


def test_a_4_gpu_hgx_h100_has_no_nvls_and_a_slower_tree():
    switch = parse_machine("gpu=h100,gpus_per_node=4")
    mesh = parse_machine("gpu=h100,gpus_per_node=4,nvlink_topology=mesh")
    assert "NVLS" in nccl_graphs(switch) and "NVLS" not in nccl_graphs(mesh)
    assert nccl_graphs(mesh)["Tree"].bw_intra_GBps < nccl_graphs(switch)["Tree"].bw_intra_GBps
    sizes = [2**20, 2**26]
    assert ("NVLS", "Simple") in predict("all_reduce", sizes, switch).table
    assert not any(a == "NVLS" for a, _ in predict("all_reduce", sizes, mesh).table)


def test_a_ring_needs_nvlink_on_every_hop():
    """A chain 0-1-2 has no ring over NVLink: NCCL falls back to PCIe, as the pooled model does without NVLink."""
    chain = parse_machine("gpu=a100,gpus_per_node=3,nvlink_topology=0-1:4+1-2:4")
    assert mesh_search(chain, ring=True) is None
    assert nccl_graphs(chain)["Ring"].n_channels >= 1


@pytest.mark.parametrize("desc", [
    "gpu=v100,gpus_per_node=8", "gpu=v100,gpus_per_node=4,nvlink_topology=DGX1",
    "gpu=a100,gpus_per_node=4,nvlink_topology=mesh", "gpu=a100,gpus_per_node=4,nvswitch=0",
    "gpu=a100,gpus_per_node=3,nvlink_topology=1-0:4+2-1:4", "gpu=h100,gpus_per_node=8,nvlink_topology=switch",
    "gpu=a40,gpus_per_node=2,nvlink=3,nvswitch=0",
])
def test_describe_round_trips(desc):
    m = parse_machine(desc)
    again = parse_machine(m.describe())
    assert again.resolved() == m.resolved() and again.nvlink_pairs == m.nvlink_pairs


def test_defaults_keep_the_switch_where_the_shipped_logs_need_it():
    """4 of a DGX A100 / H100 (fixtures 01, 03) stay on the NVSwitch; a 4-GPU HGX board must be said."""
    for gpu in ("a100", "h100"):
        assert parse_machine(f"gpu={gpu},gpus_per_node=4").nvlink_layout == "switch"
    assert parse_machine("gpu=v100,gpus_per_node=12").has_nvswitch               # DGX-2
    assert parse_machine("gpu=v100,gpus_per_node=4").nvlink_layout == "mesh"     # DGX Station, C4140: NV2
    assert parse_machine("gpu=a40,gpus_per_node=2").nvlink_layout is None        # bridge off by default


@pytest.mark.parametrize("desc, words", [
    ("gpu=a100,gpus_per_node=4,nvlink_topology=ring", "nvlink_topology is switch, mesh, dgx1 or per-pair"),
    ("gpu=a100,gpus_per_node=4,nvlink_topology=0-0:4", "joins GPU 0 to itself"),
    ("gpu=a100,gpus_per_node=4,nvlink_topology=0-4:4", r"needs GPUs 0..3 \(gpus_per_node=4\)"),
    ("gpu=a100,gpus_per_node=4,nvlink_topology=0-1:8+0-2:8", "gives GPU 0 16 links; the GPU has 12"),
    ("gpu=a100,gpus_per_node=4,nvlink_topology=0-1:4+1-0:4", "names the pair 0-1 twice"),
    ("gpu=a100,gpus_per_node=4,nvswitch=1,nvlink_topology=mesh", "nvswitch=1 contradicts nvlink_topology=mesh"),
    ("gpu=a40,gpus_per_node=2,nvlink_topology=mesh", "needs NVLink between >= 2 GPUs"),
    ("gpu=a100,gpus_per_node=8,nvlink_topology=dgx1", "nvlink_topology=dgx1 is 8 GPUs"),
    ("gpu=v100,gpus_per_node=12,nvswitch=0", "a mesh of 12 GPUs needs at least 11 NVLink links per GPU"),
])
def test_bad_topologies_say_what_is_accepted(desc, words):
    with pytest.raises(CommlabError, match=words):
        parse_machine(desc)
