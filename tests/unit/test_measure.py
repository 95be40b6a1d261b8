"""commlab.measure on CPU: sweep sizes, timing, units and verdicts against closed forms, the hardware catalogue
and real nccl-tests rows; the GPU parts say why they are skipped."""
from __future__ import annotations


import numpy as np
import pytest

from commlab.nccl.examples import DATA_DIR as NCCL_DATA_DIR
from commlab.errors import CommlabError
from commlab.hardware import link
from commlab.measure import (AllReduceResult, CopyPoint, CopySweep, Skipped, SweepConfig, best_time_s,
                             cpu_copy_sweep, cuda_unavailable_reason, d2d_sweep, d2h_sweep, gpu_copy_sweeps,
                             h2d_sweep, nccl_allreduce, pcie_roof, verdict)

FIXTURES = NCCL_DATA_DIR / "nccl-tests"  # the real published logs, shipped with commlab


def test_sweep_sizes_are_geometric_like_nccl_tests_flags():
    assert SweepConfig(min_nbytes=8, max_nbytes=128, factor=2).sizes() == [8, 16, 32, 64, 128]
    assert SweepConfig(min_nbytes=3, max_nbytes=100, factor=4).sizes() == [3, 12, 48]
    sizes = SweepConfig().sizes()
    assert sizes[0] == 2**20 and sizes[-1] == 2**28 and all(b == 4 * a for a, b in zip(sizes, sizes[1:]))


@pytest.mark.parametrize("kwargs, words", [
    ({"min_nbytes": 0}, "min_nbytes=0"),
    ({"min_nbytes": 10, "max_nbytes": 5}, "max_nbytes=5"),
    ({"factor": 1}, "factor must be a whole number >= 2, got 1"),
    ({"repeats": 0}, "repeats must be a whole number >= 1, got 0"),
    ({"warmup": -1}, "warmup must be a whole number >= 0, got -1"),
])
def test_bad_sweep_configs_name_the_value(kwargs, words):
    with pytest.raises(CommlabError) as info:
        SweepConfig(**kwargs)
    assert words in str(info.value)


def test_best_time_keeps_the_fastest_run_after_the_warmup():
    calls = []
    ticks = iter([0.0, 5.0, 10.0, 11.5, 20.0, 23.0])
    t = best_time_s(lambda: calls.append(1), repeats=3, warmup=2, timer=lambda: next(ticks))
    assert t == 1.5 and len(calls) == 5


def test_copy_point_units():
    point = CopyPoint(nbytes=256 * 2**20, t_s=0.02, repeats=3)
    assert point.bw_GBps == pytest.approx(256 * 2**20 / 0.02 / 1e9)
    assert point.traffic_GBps == pytest.approx(2 * point.bw_GBps)


@pytest.mark.parametrize("measured, label", [
    (0.70 * 64, "near the roof"), (0.6999 * 64, "below the roof"), (0.40 * 64, "below the roof"),
    (0.3999 * 64, "far below the roof"), (64.0, "near the roof"),
])
def test_verdict_thresholds(measured, label):
    judged = verdict(measured, 64.0, "PCIe 5.0 x16")
    assert judged.label == label and judged.fraction == pytest.approx(measured / 64.0)
    assert "PCIe 5.0 x16 (64 GB/s per direction)" in judged.text


def test_pcie_roof_is_the_catalogue_figure_scaled_by_lanes():
    for gen in (3, 4, 5, 6):
        assert pcie_roof(gen) == (link(f"pcie{gen}").unidir_GBps, f"PCIe {gen}.0 x16")
    assert pcie_roof(4, 8) == (link("pcie4").unidir_GBps / 2, "PCIe 4.0 x8")
    with pytest.raises(CommlabError, match="3, 4, 5 or 6"):
        pcie_roof(2)
    with pytest.raises(CommlabError, match="positive"):
        verdict(10.0, 0.0)


def test_sweep_peak_largest_and_json():
    points = (CopyPoint(2**20, 1e-4, 3), CopyPoint(2**26, 1e-2, 3))
    sweep = CopySweep("host-to-device, pinned", points, roof_GBps=32.0, roof_name="PCIe 4.0 x16")
    assert sweep.peak is points[0] and sweep.largest is points[1]
    data = sweep.to_json()
    assert data["peak_GBps"] == pytest.approx(2**20 / 1e-4 / 1e9) and data["verdict"] == "far below the roof"
    assert "GB/s at 64 MiB" in sweep.to_text()


def test_cpu_copy_sweep_measures_every_size():
    config = SweepConfig(min_nbytes=2**16, max_nbytes=2**20, factor=4, repeats=2, warmup=1)
    for backend in ("numpy", "torch"):
        sweep = cpu_copy_sweep(config, backend=backend)
        assert [p.nbytes for p in sweep.points] == config.sizes()
        assert all(p.t_s > 0 and np.isfinite(p.bw_GBps) for p in sweep.points) and sweep.roof_GBps is None
    with pytest.raises(CommlabError, match="unknown backend 'cupy'"):
        cpu_copy_sweep(config, backend="cupy")


def test_allreduce_result_matches_nccl_tests_rows():
    from commlab.nccl.parse import parse_log

    log = parse_log((FIXTURES / "07_all_reduce_H100-p5-NVSwitch_8r.txt").read_text())
    for row in log.rows[-5:]:
        result = AllReduceResult(row.size_bytes, 8, row.oop.time_us * 1e-6)
        assert result.algbw_GBps == pytest.approx(row.oop.algbw_GBps, abs=0.01)
        assert result.busbw_GBps == pytest.approx(row.oop.busbw_GBps, abs=0.02)


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="this machine has CUDA")
def test_gpu_measurements_are_skipped_with_a_reason_here():
    config = SweepConfig(min_nbytes=1024, max_nbytes=1024)
    results = [h2d_sweep(config), d2h_sweep(config, pinned=False), d2d_sweep(config)] + gpu_copy_sweeps(config)
    results.append(nccl_allreduce())
    assert all(isinstance(r, Skipped) and r.reason == cuda_unavailable_reason() for r in results)
    assert "skipped (" in results[0].to_text() and results[-1].to_json()["skipped"] is True


def test_allreduce_arguments_are_checked():
    with pytest.raises(CommlabError, match="iters=0"):
        nccl_allreduce(iters=0)


def test_host_link_roof_from_nvml():
    import types

    import pynvml

    from commlab.measure.gpu import host_link_roof

    nv = types.ModuleType("fake_pynvml")
    for name in dir(pynvml):
        if name.startswith(("NVML_", "NVMLError")):
            setattr(nv, name, getattr(pynvml, name))

    def missing():
        raise pynvml.NVMLError_LibraryNotFound()

    nv.nvmlInit, nv.nvmlShutdown = missing, lambda: None
    assert host_link_roof(0, nv) == (None, "NVML library not found (libnvidia-ml.so): no NVIDIA driver is "
                                           "installed here")
