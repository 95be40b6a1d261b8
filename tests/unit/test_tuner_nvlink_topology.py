"""NVLink without an NVSwitch: the per-pair layouts a described machine takes (commlab.tuner.nvlink_topology)."""
from __future__ import annotations

import pytest

from commlab.tuner.machine import parse_machine
from commlab.tuner.graphs import nccl_graphs
from commlab.tuner.predict import predict
from commlab.errors import CommlabError


def test_a_gpu_counts_only_its_links_to_the_node_s_gpus():
    """NCCL's totalBw without an NVSwitch is the busiest GPU's links to the others (topo.cc drops the rest)."""
    dgx1 = parse_machine("gpu=v100,gpus_per_node=8")
    assert not dgx1.has_nvswitch and dgx1.nvlink_layout == "dgx1" and dgx1.intra_total_GBps == 120.0
    quad = parse_machine("gpu=v100,gpus_per_node=4,nvlink_topology=dgx1")
    assert quad.intra_total_GBps == 100.0                                     # GPU 2: NV1 + NV2 + NV2
    links = [sum(k for pair, k in quad.nvlink_pairs.items() if g in pair) for g in range(4)]
    assert max(links) == 5 == links[2] and quad.nvlink_pairs[(0, 3)] == 2   # (0, 3) is on the NV2 cycle


def test_a_4_gpu_hgx_h100_has_no_nvls():
    switch = parse_machine("gpu=h100,gpus_per_node=4")
    mesh = parse_machine("gpu=h100,gpus_per_node=4,nvlink_topology=mesh")
    assert "NVLS" in nccl_graphs(switch) and "NVLS" not in nccl_graphs(mesh)
    sizes = [2**20, 2**26]
    assert ("NVLS", "Simple") in predict("all_reduce", sizes, switch).table
    assert not any(a == "NVLS" for a, _ in predict("all_reduce", sizes, mesh).table)


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
