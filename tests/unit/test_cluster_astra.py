"""The ASTRA-sim export held to ASTRA-sim's own example files (tests/data/astra-sim, MIT): the same keys, the
same types, one entry per network dimension, and the numbers of commlab's model."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from commlab.cluster import Shape, preset
from commlab.cluster.astra import export, network_yaml, system_json
from commlab.errors import CommlabError

DATA = Path(__file__).resolve().parents[1] / "data" / "astra-sim"
EXAMPLE_NET = yaml.safe_load((DATA / "HGX-H100-validated.yml").read_text())
EXAMPLE_SYS = json.loads((DATA / "HGX-H100-validated.json").read_text())
ENTRY_TYPES = {"topology": str, "npus_count": int, "bandwidth": float, "latency": float}
CASES = [("dgx-h100-ndr", 1), ("dgx-h100-ndr", 2048), ("h100-1k-superpod", 128), ("h100-16k-roce", 2048),
         ("aws-p4de", 2), ("gb200-nvl72", 144), ("dgx-2", 64)]


def _number_type(value):
    return float if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value)


@pytest.mark.parametrize("name, nodes", CASES)
def test_network_file_has_the_examples_keys_types_and_one_entry_per_dimension(name, nodes):
    shape = Shape.of(preset(name), nodes)
    ours = yaml.safe_load(network_yaml(shape))
    assert set(ours) == set(EXAMPLE_NET) == set(ENTRY_TYPES)
    dims = len(ours["topology"])
    for key, kind in ENTRY_TYPES.items():
        assert isinstance(ours[key], list) and len(ours[key]) == dims, key
        assert all(type(v) is kind or (kind is float and _number_type(v) is float) for v in ours[key]), key
        assert all(isinstance(v, type(EXAMPLE_NET[key][0])) or kind is float for v in ours[key])
    assert set(ours["topology"]) <= {"Ring", "FullyConnected", "Switch"}
    assert all(n > 1 for n in ours["npus_count"]) and int(np.prod(ours["npus_count"])) == shape.gpus
    assert all(v > 0 for v in ours["bandwidth"] + ours["latency"])
    assert ours["bandwidth"][0] == pytest.approx(shape.nvlink_GBps)      # the model's own NVLink figure


@pytest.mark.parametrize("name, nodes", CASES)
def test_system_file_has_the_examples_keys_and_types(name, nodes):
    shape = Shape.of(preset(name), nodes)
    ours = system_json(shape)
    assert set(ours) == set(EXAMPLE_SYS)
    for key, value in EXAMPLE_SYS.items():
        assert _number_type(ours[key]) is _number_type(value), key
    dims = len(yaml.safe_load(network_yaml(shape))["topology"])
    for key in (k for k in ours if k.endswith("-implementation")):
        assert len(ours[key]) == dims and all(isinstance(x, str) for x in ours[key])


def test_the_fabric_taper_reaches_the_bandwidth_of_its_dimension():
    shape = Shape.of(preset("h100-16k-roce"), 2048)
    net = yaml.safe_load(network_yaml(shape))
    assert net["npus_count"] == [8, 2, 1024]                              # NVLink, a ToR's 2 nodes, the rest
    per_gpu = shape.network_GBps / 8
    assert net["bandwidth"][1:] == pytest.approx([per_gpu, per_gpu / 7], abs=1e-3)   # above the pods: 7:1
    assert "do not split into pods of 384" in network_yaml(shape)
    tree = system_json(Shape.of(preset("dgx-h100-ndr"), 64), "tree")["all-reduce-implementation"]
    assert tree[0] == "ring" and set(tree[1:]) == {"doubleBinaryTree"}
    with pytest.raises(CommlabError, match="ASTRA-sim's native collectives"):
        system_json(shape, "pat")


def test_export_files_parse(tmp_path):
    paths = export(Shape.of(preset("gke-a4"), 2), tmp_path)
    assert {p.name for p in paths} == {"network.yml", "system.json", "remote_memory.json", "run.sh"}
    assert json.loads((tmp_path / "remote_memory.json").read_text()) == json.loads(
        (DATA / "no_memory_expansion.json").read_text())
    assert "--network-configuration" in (tmp_path / "run.sh").read_text()
