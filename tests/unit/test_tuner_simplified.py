"""NCCL's simplified cost model against closed forms worked by hand and a real nccl-tests log."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from commlab.tuner.simplified import (
    ALGOS, PROTOS, default_bus_bw_GBps, enabled, nccl_algbw_GBps, nccl_choose, nccl_latency_us,
    nccl_time_us, switch_points,
)
from commlab.errors import CommlabError
from commlab.nccl.examples import nccl_tests_logs


def test_ring_simple_all_reduce_by_hand():
    # 8 ranks, one node, NVLink: lat = 8.4 + 2*7*3.4 = 56.0 us; algbw = 100 * 8/14 GB/s
    # 1e6 bytes / (1000 * 57.142857) = 17.5 us
    t = nccl_time_us("all_reduce", "Ring", "Simple", 1e6, 8, bw_GBps=100.0)
    assert float(t) == pytest.approx(56.0 + 17.5, rel=1e-12)


def test_ring_ll_all_gather_on_pci_by_hand():
    # all_gather: nsteps = n-1 = 3; lat = 6.6 + 3*1.0 = 9.6 us; algbw = 12 * 0.5 * 4/3 = 8 GB/s
    t = nccl_time_us("all_gather", "Ring", "LL", 8000.0, 4, transport="pci", bw_GBps=12.0)
    assert float(t) == pytest.approx(9.6 + 8000.0 / (1000 * 8.0), rel=1e-12)


def test_ring_latency_across_nodes_by_hand():
    # 16 ranks on 2 nodes, LL128: nsteps = 30, inter steps = 2*(2-1) = 2
    # 14.0 + 28 * 1.9 + 2 * 4.0 = 75.2
    assert nccl_latency_us("all_reduce", "Ring", "LL128", 16, n_nodes=2) == pytest.approx(75.2)


def test_tree_latency_by_hand():
    # 32 ranks on 8 nodes, Simple: 8.4 + 2 * ((4-1) * 4.0 + log2(8) * 14.0) = 8.4 + 2 * (12 + 42) = 116.4
    assert nccl_latency_us("all_reduce", "Tree", "Simple", 32, n_nodes=8) == pytest.approx(116.4)
    # 6 nodes: NCCL's integer log2 gives 2
    assert nccl_latency_us("all_reduce", "Tree", "LL", 12, n_nodes=6) == pytest.approx(6.8 + 2 * (1 * 0.6 + 2 * 5.0))


def test_tree_bandwidth_is_half_the_bus_with_protocol_factor():
    assert nccl_algbw_GBps("all_reduce", "Tree", "LL128", 16, 200.0) == pytest.approx(200.0 * 0.92 * 0.5)
    assert nccl_algbw_GBps("reduce_scatter", "Ring", "Simple", 5, 100.0) == pytest.approx(100.0 * 5 / 4)


def test_vectorised_over_nbytes_matches_scalar_calls():
    sizes = np.array([0.0, 1024.0, 2.0**20, 2.0**30])
    vec = nccl_time_us("all_reduce", "Tree", "LL", sizes, 16, n_nodes=2)
    one_by_one = [float(nccl_time_us("all_reduce", "Tree", "LL", s, 16, n_nodes=2)) for s in sizes]
    np.testing.assert_allclose(vec, one_by_one)
    assert vec.shape == sizes.shape


def test_ll_wins_small_and_simple_wins_large():
    for n_ranks, n_nodes in [(8, 1), (16, 2), (64, 8)]:
        assert nccl_choose("all_reduce", 8, n_ranks, n_nodes=n_nodes).proto == "LL"
        assert nccl_choose("all_reduce", 2**34, n_ranks, n_nodes=n_nodes).proto == "Simple"


def test_choice_is_the_minimum_of_the_table():
    sizes = 2.0 ** np.arange(0, 34)
    choice = nccl_choose("all_reduce", sizes, 32, n_nodes=4)
    assert set(choice.table) == {(a, p) for a in ALGOS for p in PROTOS}
    stacked = np.stack(list(choice.table.values()))
    np.testing.assert_allclose(choice.time_us, stacked.min(axis=0))
    for i in range(len(sizes)):
        assert choice.table[(choice.algo[i], choice.proto[i])][i] == choice.time_us[i]


def test_restricting_algorithms_changes_the_choice():
    # 128 ranks on 16 nodes: a ring pays 254 hops of latency, a tree 2*(7 + 4) hops
    free = nccl_choose("all_reduce", 1024, 128, n_nodes=16)
    ring_only = nccl_choose("all_reduce", 1024, 128, n_nodes=16, algos=("Ring",))
    assert free.algo == "Tree" and ring_only.algo == "Ring"
    assert ring_only.time_us > free.time_us
    assert nccl_choose("all_reduce", 1024, 128, n_nodes=16, algos="^Tree").algo == "Ring"


def test_restricting_protocols_changes_the_choice():
    assert nccl_choose("all_reduce", 64, 8).proto == "LL"
    assert nccl_choose("all_reduce", 64, 8, protos="^LL").proto in ("LL128", "Simple")
    assert nccl_choose("all_reduce", 64, 8, protos=("Simple",)).proto == "Simple"


def test_tree_is_not_a_candidate_outside_all_reduce():
    choice = nccl_choose("all_gather", np.array([8.0, 2.0**30]), 64, n_nodes=8)
    assert set(choice.algo) == {"Ring"}
    with pytest.raises(CommlabError, match="only Ring"):
        nccl_choose("reduce_scatter", 8, 8, algos="Tree")
    with pytest.raises(CommlabError, match="all_reduce only"):
        nccl_time_us("all_gather", "Tree", "LL", 8, 8)


def test_switch_points_are_where_the_choice_changes():
    sizes = 2.0 ** np.arange(0, 34)
    points = switch_points("all_reduce", sizes, 16, n_nodes=2)
    choice = nccl_choose("all_reduce", sizes, 16, n_nodes=2)
    labels = [f"{a}/{p}" for a, p in zip(choice.algo, choice.proto)]
    assert len(points) == sum(labels[i] != labels[i - 1] for i in range(1, len(labels))) > 0
    for nbytes, old, new in points:
        i = int(math.log2(nbytes))
        assert labels[i] == new and labels[i - 1] == old


def test_enabled_parses_nccl_style_lists():
    assert enabled(None, ALGOS, "algorithm") == ALGOS
    assert enabled("ring,TREE", ALGOS, "algorithm") == ALGOS
    assert enabled("^LL,LL128", PROTOS, "protocol") == ("Simple",)
    with pytest.raises(CommlabError, match="'Rnig'"):
        enabled("Rnig", ALGOS, "algorithm")
    with pytest.raises(CommlabError, match="leaves nothing"):
        enabled("^LL,LL128,Simple", PROTOS, "protocol")


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_ranks=1), "n_ranks"),
    (dict(n_ranks=8, n_nodes=3), "n_nodes"),
    (dict(n_ranks=8, transport="infiniband"), "transport"),
    (dict(n_ranks=8, bw_GBps=-1.0), "bw_GBps"),
    (dict(n_ranks=8, nbytes=-5), "nbytes"),
])
def test_bad_input_names_the_value(kwargs, match):
    args = dict(op="all_reduce", algo="Ring", proto="Simple", nbytes=8, n_ranks=8) | kwargs
    with pytest.raises(CommlabError, match=match):
        nccl_time_us(**args)


def test_unknown_collective_lists_the_accepted_ones():
    with pytest.raises(CommlabError, match="all_reduce, all_gather, reduce_scatter"):
        nccl_choose("broadcast", 8, 8)
    assert nccl_choose("AllReduce", 8, 8).pair == nccl_choose("all_reduce", 8, 8).pair


def test_default_bus_bandwidth_across_nodes_is_the_smaller_of_nvlink_and_nics():
    assert default_bus_bw_GBps("nvlink", 8, 1) == pytest.approx(18 * 20.6)
    assert default_bus_bw_GBps("nvlink", 16, 2) == pytest.approx(min(18 * 20.6, 8 * 50.0))
    assert default_bus_bw_GBps("pci", 4, 1) == pytest.approx(12.0)


def _rows(path: Path) -> list[tuple[float, float]]:
    """(size, out-of-place time_us) of every data row of an nccl-tests log."""
    rows = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and fields[0].isdigit():
            rows.append((float(fields[0]), float(fields[5])))
    return rows


def test_ring_simple_with_default_nvlink_bandwidth_matches_a_real_4x_h100_log():
    # fixture 03: 4x H100 SXM on NVSwitch, 1-8 GiB all_reduce; NCCL runs Ring/Simple at these sizes
    (path,) = [p for p in nccl_tests_logs() if p.name.startswith("03_all_reduce_H100")]
    rows = _rows(path)
    assert len(rows) == 4
    for nbytes, measured_us in rows:
        assert nccl_choose("all_reduce", nbytes, 4).pair == ("Ring", "Simple")
        predicted = float(nccl_time_us("all_reduce", "Ring", "Simple", nbytes, 4))
        assert predicted == pytest.approx(measured_us, rel=0.02)


def test_latency_counts_once_per_operation():
    # n_ops grouped operations pay the latency n_ops times: 3 * (6.6 + 14 * 0.6) + 1e6 / (1000 * 50 * 0.5 * 8/14)
    t = nccl_time_us("all_reduce", "Ring", "LL", 1e6, 8, bw_GBps=50.0, n_ops=3)
    assert float(t) == pytest.approx(3 * 15.0 + 1e6 / (1000 * 50 * 0.5 * 8 / 14))
    with pytest.raises(CommlabError, match="n_ops"):
        nccl_time_us("all_reduce", "Ring", "LL", 8, 8, n_ops=0)
