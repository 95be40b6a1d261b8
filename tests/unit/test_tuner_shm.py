"""NCCL's SHM transport (P2P off): closed forms for the PCIe rates, the sourced SM efficiency, the one chosen
constant and the logs it was not chosen on."""
from __future__ import annotations

import numpy as np
import pytest

from commlab.tuner import shm
from commlab.scorecard.fixture_machines import fixture_machine
from commlab.tuner.machine import parse_machine
from commlab.tuner.predict import nccl_tuning_table, predict
from commlab.scorecard.scorecard import BW_REGIME_NBYTES, PREDICTED_BW_GOAL, PREDICTED_MEDIAN_GOAL, score_file
from commlab.nccl import nccl_tests_log, parse_log

RTX = parse_machine("gpu=rtx2080ti,gpus_per_node=2,pcie=3,p2p=0,path=pix")
A40 = parse_machine("gpu=a40,gpus_per_node=2,pcie=4,p2p=0,path=node")


def _busbw(key: str, min_nbytes: int = BW_REGIME_NBYTES) -> np.ndarray:
    log = parse_log(nccl_tests_log(key).read_text())
    return np.array([r.oop.busbw_GBps for r in log.rows if r.size_bytes >= min_nbytes])


def test_pcie_rates_are_lanes_times_rate_times_coding():
    # 16 lanes x 8 GT/s x 128/130 / 8 bits = 15.75 GB/s (PCIe 3.0); doubled each generation to 5.0
    assert shm.PCIE_RAW_GBPS[3] == pytest.approx(15.754, abs=1e-3)
    assert shm.PCIE_RAW_GBPS[4] == pytest.approx(2 * shm.PCIE_RAW_GBPS[3])
    assert shm.PCIE_RAW_GBPS[5] == pytest.approx(4 * shm.PCIE_RAW_GBPS[3])
    assert shm.PCIE_RAW_GBPS[6] == pytest.approx(121.0)                # 64 GT/s, 242 of 256 FLIT bytes


def test_sm_efficiency_is_nvbandwidths_figure():
    """25.13 GB/s of SM loads from host memory on a PCIe 4.0 x16 A100 (NVIDIA/nvbandwidth issue 42)."""
    assert shm.SM_HOST_EFFICIENCY * shm.PCIE_RAW_GBPS[4] == pytest.approx(25.13)
    assert 0.75 < shm.SM_HOST_EFFICIENCY < 0.86                        # below the copy engine's 86% (H200 here)


@pytest.mark.parametrize("key", ["16", "17"])
def test_one_way_rate_from_the_pcie_generation_meets_the_2_gpu_broadcast_and_reduce(key):
    """Nothing chosen: PCIe 3.0 x 80% = 12.56 GB/s against the measured 11.1 GB/s of busbw."""
    measured = _busbw(key)
    assert shm.one_way_GBps(RTX) == pytest.approx(12.565, abs=0.005)
    errors = np.abs(measured / shm.one_way_GBps(RTX) - 1)          # time error = busbw ratio - 1
    assert np.median(errors) <= PREDICTED_BW_GOAL


def test_the_two_way_rate_is_chosen_on_fixture_06():
    """The one constant no source gives: the median all_reduce busbw of fixture 06, as its docstring says."""
    assert shm.SHM_TWO_WAY_GBPS == pytest.approx(float(np.median(_busbw("06"))), abs=0.005)


@pytest.mark.parametrize("key", ["14", "15"])
def test_the_two_way_rate_holds_on_logs_it_was_not_chosen_on(key):
    """Fixtures 14 and 15: another GPU (RTX 2080 Ti), PCIe generation (3.0), path (one switch) and host."""
    sc = score_file(nccl_tests_log(key))
    assert sc.predicted_median <= PREDICTED_MEDIAN_GOAL and sc.predicted_bw_median <= PREDICTED_BW_GOAL
    assert np.median(np.abs(_busbw(key) / shm.SHM_TWO_WAY_GBPS - 1)) <= PREDICTED_BW_GOAL


def test_two_ways_does_not_follow_the_pcie_generation():
    """What the choice rests on: PCIe 3.0 (14) and 4.0 (06) rings of 2 GPUs run within 5% of each other."""
    assert np.median(_busbw("14")) == pytest.approx(np.median(_busbw("06")), rel=0.05)
    assert shm.two_way_GBps(RTX) == shm.two_way_GBps(A40) == shm.SHM_TWO_WAY_GBPS


def test_shared_switch_and_cpu_interconnect_bound_the_rate():
    # one switch: two GPUs share its uplink, each writing up and reading down: half the one-way rate each
    slow = parse_machine("gpu=rtx2080ti,gpus_per_node=2,pcie=3,p2p=0,path=pix")
    assert shm.two_way_GBps(slow) <= shm.one_way_GBps(slow) / 2
    # across CPUs, a PCIe 4.0 one-way stream (25.1 GB/s) is held to NCCL's 10 GB/s for Intel UPI (topo.h)
    sys_ = parse_machine("gpu=a40,gpus_per_node=2,pcie=4,p2p=0,path=sys")
    assert shm.one_way_GBps(sys_) == shm.CPU_INTERCONNECT_GBPS["intel"] == 10.0
    amd = parse_machine("gpu=a40,gpus_per_node=2,pcie=4,p2p=0,path=sys,cpu=amd")
    assert shm.one_way_GBps(amd) == 16.0


def test_the_realised_table_uses_host_staging_and_ncclS_own_keeps_its_budget():
    budget = nccl_tuning_table("all_reduce", A40)
    real = nccl_tuning_table("all_reduce", A40, realized=True)
    assert real[("Ring", "Simple")].busbw_GBps == pytest.approx(shm.SHM_TWO_WAY_GBPS)
    assert real[("Ring", "LL")].busbw_GBps == pytest.approx(0.5 * shm.SHM_TWO_WAY_GBPS)   # LL: 8 data bytes of 16
    assert budget[("Ring", "Simple")].busbw_GBps > 4 * shm.SHM_TWO_WAY_GBPS               # NCCL plans with PCIe
    p = predict("broadcast", [2.0**30], RTX)                                              # one way on 2 GPUs
    assert float(p.busbw_GBps[0]) == pytest.approx(shm.one_way_GBps(RTX), rel=0.01)


def test_p2p_on_machines_are_untouched():
    on = parse_machine("gpu=a40,gpus_per_node=2,pcie=4")
    assert nccl_tuning_table("all_reduce", on, realized=True)[("Ring", "Simple")].busbw_GBps == pytest.approx(24.0)
    assert fixture_machine(4).machine.p2p
