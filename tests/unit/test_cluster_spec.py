"""The cluster description: presets with sources, sizes against fat-tree arithmetic, the Machine it gives, errors."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from commlab.cluster import Cluster, Fabric, Shape, preset, preset_names, presets
from commlab.tuner.predict import predict
from commlab.scorecard.fixture_machines import fixture_machine
from commlab.errors import CommlabError
from commlab.fabric import LeafSpine, non_blocking_hosts


def test_presets_are_named_once_and_each_has_addressed_sources():
    names = preset_names()
    assert len(names) == len(set(names)) >= 10
    for wanted in ("dgx-h100-ndr", "aws-p4de", "aws-p5", "gcp-a3-mega", "oci-a100-roce", "dgx-2", "gke-a4",
                   "h100-1k-superpod", "h100-16k-roce", "gb200-nvl72"):
        assert wanted in names
    for c in presets():
        assert c.sources and all(("https://" in s) or ("arXiv" in s) for s in c.sources), c.name
        assert json.loads(json.dumps(c.to_json(), allow_nan=False))["name"] == c.name


@pytest.mark.parametrize("log, name, nodes", [(7, "aws-p5", 1), (8, "aws-p4de", 2), (9, "aws-p5", 2),
                                              (11, "oci-a100-roce", 2), (12, "gcp-a3-mega", 2), (13, "gke-a4", 2)])
def test_a_preset_is_the_machine_of_its_shipped_log(log, name, nodes):
    """Where both describe a machine, they agree: the preset gives the fixture's --machine description (on one
    node the network and the CPU play no part in NCCL's model), and NCCL's model predicts the same times."""
    ours = preset(name).machine(nodes)
    theirs = fixture_machine(log).machine
    if nodes == 1:
        ours = dataclasses.replace(ours, net=theirs.net, cpu=theirs.cpu)
    assert ours.resolved() == theirs.resolved()
    sizes = np.logspace(3, 10, 15)
    assert np.array_equal(predict("all_reduce", sizes, preset(name).machine(nodes)).time_s,
                          predict("all_reduce", sizes, theirs).time_s)


def test_sizes_follow_fat_tree_arithmetic():
    # three non-blocking levels of 64-port switches: k^3/4 NIC ports (Al-Fares et al.), 8 per DGX H100
    assert preset("dgx-h100-ndr").fabric.max_nics == non_blocking_hosts(64, 3)
    assert preset("dgx-h100-ndr").max_nodes == non_blocking_hosts(64, 3) // 8
    # the 1,024-GPU SuperPOD: one leaf-spine pod of 32 leaves x 32 NIC ports, as a LeafSpine
    pod = preset("h100-1k-superpod").fabric.pod(port_GBps=50.0)
    assert pod == LeafSpine(radix=64, down=32, leaves=32, port_GBps=50.0)
    assert pod.hosts == 1024 and pod.oversubscription == 1.0 and preset("h100-1k-superpod").max_nodes * 8 == 1024
    # Meta's RoCE cluster: 8 pods of 3,072 GPUs (24,576), 16,384 of them used by default
    meta = preset("h100-16k-roce")
    assert meta.max_nodes * 8 == 24576 and meta.default_nodes * 8 == 16384 and meta.fabric.taper(2) == 7.0
    assert meta.fabric.pod() is None                                       # its pods are not one radix's leaf-spine
    # NVL72: 18 trays of 4 GPUs per NVLink domain
    nvl = preset("gb200-nvl72")
    assert nvl.gpus_per_domain == 72 and nvl.nodes_per_domain == 18


def test_an_nvl72_rack_is_one_ncl_node_with_all_its_nics():
    m = preset("gb200-nvl72").machine(36)
    assert (m.gpus_per_node, m.nodes, m.nics_per_node) == (72, 2, 72)
    shape = Shape.of(preset("gb200-nvl72"), 9)                             # half a rack: one partial domain
    assert (shape.gpus, shape.domains, shape.gpus_per_domain) == (36, 1, 36)


@pytest.mark.parametrize("nodes, words", [(0, "connects 1 to 8192 nodes"), (8193, "connects 1 to 8192"),
                                          ("x", "got nodes='x'")])
def test_impossible_shapes_name_what_is_accepted(nodes, words):
    with pytest.raises(CommlabError, match=words):
        preset("dgx-h100-ndr").check_nodes(nodes)


def test_an_nvl72_job_fills_whole_racks():
    with pytest.raises(CommlabError, match="use up to 18 nodes or a multiple of 18"):
        preset("gb200-nvl72").check_nodes(20)
    assert preset("gb200-nvl72").check_nodes(36) == 36


def test_unknown_preset_lists_the_presets():
    with pytest.raises(CommlabError, match="the presets are: dgx-h100-ndr"):
        preset("dgx-h200")


@pytest.mark.parametrize("kwargs, words", [
    (dict(levels=4, leaf_nics=32), "levels must be 1, 2 or 3"),
    (dict(levels=2, leaf_nics=32, pod_leaves=4), "needs 1 ratio"),
    (dict(levels=2, leaf_nics=32, pod_leaves=4, oversubscription=(0.0,)), "ratio"),
    (dict(levels=1, leaf_nics=32, pod_leaves=4), "pod_leaves=1"),
    (dict(levels=2, leaf_nics=0, oversubscription=(1.0,)), "leaf_nics must be a whole number"),
])
def test_fabric_validation(kwargs, words):
    with pytest.raises(CommlabError, match=words):
        Fabric(**kwargs)


def test_cluster_validation():
    base = preset("dgx-h100-ndr")
    with pytest.raises(CommlabError, match="SHARP needs rail-optimised"):
        dataclasses.replace(base, fabric=dataclasses.replace(base.fabric, rail_optimised=False))
    tor = dataclasses.replace(base.fabric, rail_optimised=False, sharp=False, leaf_nics=30)
    with pytest.raises(CommlabError, match="not a multiple of nics_per_node=8"):
        dataclasses.replace(base, fabric=tor)
    with pytest.raises(CommlabError, match="unknown gpu"):
        dataclasses.replace(base, gpu="h900")
    with pytest.raises(CommlabError, match="source needs an address"):
        dataclasses.replace(base, sources=("a data sheet",))
    with pytest.raises(CommlabError, match="nvlink_domain must be a whole number of nodes"):
        dataclasses.replace(base, nvlink_domain=12)
    assert isinstance(dataclasses.replace(base, nvlink_domain=16), Cluster)


def test_show_lines_name_the_sources_and_the_machine():
    lines = preset("aws-p5").describe()
    text = "\n".join(lines)
    assert "https://aws.amazon.com/ec2/instance-types/p5/" in text and "net=efa-p5,cpu=amd" in text
    assert "assumed:" in text                                             # the cloud fabric's shape is an assumption
