"""The machine description: parsing, defaults from the GPU, errors that list what is accepted."""
from __future__ import annotations

import pytest

from commlab.scorecard.fixture_machines import fixture_machine
from commlab.tuner.machine import FIELDS, GPUS, Machine, parse_machine
from commlab.errors import CommlabError
from commlab.nccl import nccl_tests_logs, parse_log


def test_the_issue_example_parses():
    m = parse_machine("gpu=h100,nvlink=4,gpus_per_node=8,nics_per_node=32,nic_Gbps=100,nodes=2")
    assert (m.gpu, m.nvlink, m.gpus_per_node, m.nics_per_node, m.nic_Gbps, m.nodes) == ("h100", 4, 8, 32, 100.0, 2)
    assert m.n_ranks == 16 and m.nic_GBps == 12.5 and m.has_nvswitch and m.has_nvls


def test_defaults_come_from_the_gpu():
    h100 = parse_machine("gpu=h100,gpus_per_node=8")
    assert h100.intra_total_GBps == pytest.approx(18 * 20.6)        # NCCL's SM90 per-link figure x 18 links
    a40 = parse_machine("gpu=a40,gpus_per_node=2")
    assert not a40.has_nvlink and a40.intra_total_GBps == 24.0       # a PCIe Gen4 card: NCCL's 24 GB/s
    bridge = parse_machine("gpu=a40,gpus_per_node=2,nvlink=3,nvswitch=0")
    assert bridge.has_nvlink and not bridge.has_nvswitch and bridge.intra_total_GBps == 48.0   # NV4 x 12 (SM86)
    assert not parse_machine("gpu=a100,gpus_per_node=8").has_nvls    # NVLS needs sm90


@pytest.mark.parametrize("desc, words", [
    ("gpu=h100,gpus=8", "the fields are: " + ", ".join(FIELDS)),
    ("gpu=h200x,gpus_per_node=8", "unknown gpu"),
    ("gpu=h100", "lacks gpus_per_node"),
    ("gpu=h100,gpus_per_node=0", "gpus_per_node must be a whole number >= 1"),
    ("gpu=h100,gpus_per_node=8,nvlink=3", "has NVLink 4"),
    ("gpu=h100,gpus_per_node=8,nodes=2", "needs nics_per_node >= 1 and nic_Gbps > 0"),
    ("gpu=h100,gpus_per_node=8,net=carrier-pigeon", "unknown net"),
    ("gpu=h100,gpus_per_node=8,nvswitch=maybe", "must be 1 or 0"),
    ("gpu=h100,gpus_per_node=8,nic_Gbps=-1", "nic_Gbps must be a number > 0"),
    ("gpu=a40,gpus_per_node=2,p2p=0,path=far", "unknown path 'far'; expected one of: pix, pxb, phb, node, sys"),
    ("gpu=h100,gpus_per_node=8,net_latency_us=-3", "net_latency_us must be a number >= 0, got '-3'"),
    ("gpu=h100,gpus_per_node=8,net_latency_us=inf", "net_latency_us must be a number >= 0"),
    ("gpu=h100,gpus_per_node=8,net=efa-p4", "unknown net 'efa-p4'; expected one of: ib, roce, socket, efa, efa-p5"),
    ("h100", "field=value"),
    ("", "field=value"),
])
def test_bad_descriptions_say_what_is_accepted(desc, words):
    with pytest.raises(CommlabError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_machine(desc)


def test_field_names_are_case_insensitive_and_describe_round_trips():
    m = parse_machine("GPU=b200,Gpus_Per_Node=8,NODES=2,nics_per_node=8,NIC_GBPS=400,net=roce")
    again = parse_machine(m.describe())
    assert again.resolved() == m.resolved()


@pytest.mark.parametrize("path", nccl_tests_logs(), ids=lambda p: p.name[:2])
def test_every_shipped_log_has_a_machine_or_a_reason(path):
    fm = fixture_machine(path.name[:2])
    assert fm.why
    if fm.desc is None:
        return
    m = fm.machine
    assert isinstance(m, Machine) and m.gpu in GPUS
    assert parse_log(path.read_text()).n_ranks == m.n_ranks          # the description matches the log's N
    assert parse_machine(m.describe()).resolved() == m.resolved()


def test_new_fields_default_to_what_old_descriptions_meant():
    """net_latency_us and path are new: left out, a description means what it meant before they existed."""
    old = parse_machine("gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=4,nic_Gbps=100,net=efa")
    assert old.net_latency_us is None and old.path is None
    assert old.describe() == "gpu=a100,gpus_per_node=8,nodes=2,nvlink=3,nvswitch=1,nics_per_node=4,nic_Gbps=100,net=efa"
    assert FIELDS[-5:-3] == ("net_latency_us", "path")               # appended: positional use is unchanged
    assert FIELDS[-1] == "nvlink_topology" and old.nvlink_topology is None


def test_new_fields_round_trip():
    m = parse_machine("gpu=a40,gpus_per_node=2,pcie=4,p2p=0,PATH=Node")
    assert m.path == "node" and "path=node" in m.describe()
    n = parse_machine("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=200,net=tcpxo,net_latency_us=0")
    assert n.net_latency_us == 0.0 and "net_latency_us=0" in n.describe()
    for x in (m, n):
        assert parse_machine(x.describe()).resolved() == x.resolved()
