"""Examples, NVLink groups, ring order and the busbw bound, checked against the matrices themselves, the
hardware catalogue and the real nccl-tests logs shipped in commlab/data/nccl/nccl-tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from commlab.nccl.examples import DATA_DIR as NCCL_DATA_DIR
from commlab.errors import CommlabError
from commlab.hardware import link
from commlab.topology import (Topology, advice, example, example_names, examples, nvlink_count, nvlink_groups,
                              parse_topo_text, ring_order)

DATA = Path(__file__).resolve().parents[1] / "data" / "topo"
FIXTURES = NCCL_DATA_DIR / "nccl-tests"  # the real published logs, shipped with commlab


def v100() -> Topology:
    return parse_topo_text((DATA / "v100_sxm2_8gpu_hybrid_cube_mesh.txt").read_text())


def test_examples_are_the_shipped_machines_with_names_and_sources():
    assert example_names() == ("a100-sxm-8", "a40-pcie-8", "h100-sxm-8", "pcie-4gpu", "v100-sxm2-8")
    h100 = examples()["h100-sxm-8"]
    assert h100.source == "example: h100-sxm-8" and h100.names() == ["NVIDIA H100 80GB HBM3"] * 8
    assert any(note.startswith("source: https://github.com/") for note in h100.notes)
    assert {h100.relation(i, j) for i in range(8) for j in range(8) if i != j} == {"NV18"}
    assert {example("a100-sxm-8").relation(i, j) for i in range(8) for j in range(8) if i != j} == {"NV12"}
    pcie = example("pcie-4gpu")
    assert not any(nvlink_count(c) for row in pcie.matrix for c in row) and {"PHB", "SYS"} <= set(pcie.matrix[0])


def test_unknown_example_lists_the_known_ones():
    with pytest.raises(CommlabError, match="known examples: a100-sxm-8, a40-pcie-8, h100-sxm-8, pcie-4gpu"):
        example("dgx-9000")


def _is_nvlink_clique(topo: Topology, group) -> bool:
    return all(nvlink_count(topo.relation(a, b)) for a in group for b in group if a != b)


@pytest.mark.parametrize("topo, expected", [
    (example("h100-sxm-8"), ((0, 1, 2, 3, 4, 5, 6, 7),)),
    (example("a40-pcie-8"), ((0, 1), (2, 3), (4, 5), (6, 7))),
    (example("pcie-4gpu"), ((0,), (1,), (2,), (3,))),
    (v100(), ((0, 1, 2, 3), (4, 5, 6, 7))),
], ids=["h100", "a40", "pcie", "v100"])
def test_nvlink_groups_partition_the_gpus_into_maximal_nvlink_cliques(topo, expected):
    groups = nvlink_groups(topo)
    assert groups == expected
    assert sorted(g for group in groups for g in group) == list(range(topo.n_gpus))
    for group in groups:
        assert _is_nvlink_clique(topo, group)
        outside = [g for g in range(topo.n_gpus) if g not in group]
        assert not any(_is_nvlink_clique(topo, group + (g,)) for g in outside)


def _hops(topo, order):
    return [topo.relation(a, b) for a, b in zip(order, order[1:] + order[:1])]


def test_v100_ring_uses_only_double_nvlinks():
    # by hand from the published matrix: 0-3-2-1-5-6-7-4-0 is a ring of NV2 hops only
    order = ring_order(v100())
    assert sorted(order) == list(range(8)) and set(_hops(v100(), order)) == {"NV2"}
    assert advice(v100()).ring_bottleneck == "NV2"


def test_nvswitch_ring_is_the_natural_order_and_pcie_ring_crosses_sockets_twice():
    assert ring_order(example("h100-sxm-8")) == tuple(range(8))
    pcie_hops = _hops(example("pcie-4gpu"), ring_order(example("pcie-4gpu")))
    assert sorted(pcie_hops) == ["PHB", "PHB", "SYS", "SYS"]
    a40_hops = _hops(example("a40-pcie-8"), ring_order(example("a40-pcie-8")))
    assert a40_hops.count("SYS") == 2 and a40_hops.count("NV4") == 4


@pytest.mark.parametrize("name, link_name, tp", [
    ("h100-sxm-8", "nvlink4", 8), ("a100-sxm-8", "nvlink3", 8), ("pcie-4gpu", "pcie3", 1), ("a40-pcie-8", "pcie4", 2),
])
def test_ring_busbw_bound_is_the_catalogue_figure_of_the_slowest_hop(name, link_name, tp):
    result = advice(example(name))
    assert result.ring_busbw_GBps == pytest.approx(link(link_name).unidir_GBps)
    assert result.tp_size == tp


def _peak_busbw(fixture: str) -> float:
    from commlab.nccl.parse import parse_log

    log = parse_log((FIXTURES / fixture).read_text())
    return max(row.oop.busbw_GBps for row in log.rows)


def test_measured_ring_busbw_stays_under_the_bound_and_nvls_passes_it():
    assert _peak_busbw("03_all_reduce_H100-SXM-NVSwitch_4r.txt") < advice(example("h100-sxm-8")).ring_busbw_GBps
    assert _peak_busbw("01_all_reduce_A100-SXM4-NVSwitch_4r.txt") < advice(example("a100-sxm-8")).ring_busbw_GBps
    nvls = _peak_busbw("07_all_reduce_H100-p5-NVSwitch_8r.txt")
    h100 = advice(example("h100-sxm-8"))
    assert nvls > h100.ring_busbw_GBps and any("NVLS" in s for s in h100.sentences)
    no_p2p = _peak_busbw("05_all_reduce_A40-PCIe-SYS-noP2P_4r.txt")
    a40 = advice(example("a40-pcie-8"))
    assert no_p2p < a40.ring_busbw_GBps / 10 and any("P2P" in s for s in a40.sentences)


def test_unknown_gpu_model_gets_the_floor_of_the_oldest_generation_with_that_many_links():
    two = parse_topo_text((DATA / "two_gpu_nv2_hf.txt").read_text())
    result = advice(two)
    # NVLink 2 to 4 run 25 GB/s per link and direction; NVLink 5 twice that: the bound is a floor, said so
    assert result.ring_busbw_GBps == pytest.approx(2 * 25.0)
    assert "oldest generation" in result.ring_rule and "floor" in result.ring_rule
    assert result.nvlink_groups == ((0, 1),) and result.tp_size == 2


def test_plain_advice_for_each_kind_of_machine():
    assert "tensor-parallel group of up to 8" in advice(example("h100-sxm-8")).to_text()
    assert "TP <= 2" in advice(example("a40-pcie-8")).to_text()
    assert "No NVLink" in advice(example("pcie-4gpu")).to_text()
    assert "mlx5_3 (PIX)" in advice(example("h100-sxm-8")).to_text()
    assert "NUMA node 1: GPU 2, 3" in advice(example("pcie-4gpu")).to_text()


def test_empty_and_single_gpu_topologies():
    empty = advice(Topology.unavailable("NVML library not found"))
    assert empty.nvlink_groups == () and empty.ring_busbw_GBps is None
    assert "NVML library not found" in empty.to_text() and "--example" in empty.to_text()
    one = advice(parse_topo_text((DATA / "rtx2080s_1gpu_windows_tabs.txt").read_text()))
    assert one.ring_order == (0,) and one.tp_size == 1 and "One GPU" in one.to_text()


def test_advice_json_is_plain_data():
    import json

    data = json.loads(json.dumps(advice(example("a40-pcie-8")).to_json()))
    assert data["nvlink_groups"] == [[0, 1], [2, 3], [4, 5], [6, 7]] and data["ring_order"] == list(range(8))
