"""Host-device and device-device copy bandwidth, timed with CUDA events (the topology lab, chapter 01).

Host-to-device (H2D) and device-to-host (D2H) copies cross the PCIe slot, so they are held against the slot's
bandwidth per direction for the generation and width NVML reports (:func:`host_link_roof`). Pinned (page-
locked) host memory lets the GPU's copy engine read it directly; pageable memory is first staged by the driver
through a pinned buffer, which is why it is slower. Device-to-device (D2D) copies stay in GPU memory (each
byte is read and written once: HBM traffic is twice ``bw_GBps``); no PCIe roof applies.

Every function returns :class:`~commlab.measure.results.Skipped` with the reason on a machine without CUDA;
torch is imported only when a function runs.
"""
from __future__ import annotations

from collections.abc import Callable

from commlab.measure.results import CopyPoint, CopySweep, Skipped
from commlab.measure.sweep import SweepConfig
from commlab.measure.verdict import pcie_roof


def cuda_unavailable_reason() -> str | None:
    """Why CUDA cannot be used here, or None when it can."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build"
    return f"torch {torch.__version__} has CUDA {torch.version.cuda} but sees no usable GPU or driver"


def host_link_roof(device: int = 0, nvml=None) -> tuple[float | None, str]:
    """(PCIe bandwidth per direction in GB/s, link name) of a GPU's slot from NVML; (None, why) if unknown."""
    from commlab.topology.nvml import read

    topo = read(nvml)
    if device >= topo.n_gpus:
        return None, topo.reason or f"NVML lists no GPU {device}"
    gpu = topo.gpus[device]
    if gpu.pcie_gen_max not in (3, 4, 5, 6):
        return None, "NVML does not report this GPU's PCIe generation"
    return pcie_roof(gpu.pcie_gen_max, gpu.pcie_width_max)


def cuda_copy_time_s(dst, src, repeats: int, warmup: int) -> float:
    """Fastest of ``repeats`` ``dst.copy_(src)`` in seconds, between CUDA events on the current stream."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        start.record()
        dst.copy_(src, non_blocking=True)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)  # elapsed_time is in milliseconds
    return best


def _sweep(what: str, make: Callable[[int], tuple], config: SweepConfig,
           roof: tuple[float | None, str] = (None, "")) -> CopySweep | Skipped:
    reason = cuda_unavailable_reason()
    if reason:
        return Skipped(what, reason)
    points = []
    for nbytes in config.sizes():
        dst, src = make(nbytes)
        points.append(CopyPoint(nbytes, cuda_copy_time_s(dst, src, config.repeats, config.warmup), config.repeats))
        del dst, src
    return CopySweep(what, tuple(points), roof_GBps=roof[0], roof_name=roof[1] if roof[0] else "")


def _host(nbytes: int, pinned: bool):
    import torch

    return torch.ones(nbytes, dtype=torch.uint8, pin_memory=pinned)


def _device(nbytes: int, device: int):
    import torch

    return torch.ones(nbytes, dtype=torch.uint8, device=f"cuda:{device}")


def h2d_sweep(config: SweepConfig = SweepConfig(), pinned: bool = True, device: int = 0,
              roof: tuple[float | None, str] | None = None) -> CopySweep | Skipped:
    """Host-to-device copy bandwidth over ``config``'s sizes, against the PCIe roof."""
    what = f"host-to-device, {'pinned' if pinned else 'pageable'}"
    roof = roof if roof is not None else _roof_or_none(device)
    return _sweep(what, lambda n: (_device(n, device), _host(n, pinned)), config, roof)


def d2h_sweep(config: SweepConfig = SweepConfig(), pinned: bool = True, device: int = 0,
              roof: tuple[float | None, str] | None = None) -> CopySweep | Skipped:
    """Device-to-host copy bandwidth over ``config``'s sizes, against the PCIe roof."""
    what = f"device-to-host, {'pinned' if pinned else 'pageable'}"
    roof = roof if roof is not None else _roof_or_none(device)
    return _sweep(what, lambda n: (_host(n, pinned), _device(n, device)), config, roof)


def d2d_sweep(config: SweepConfig = SweepConfig(), device: int = 0) -> CopySweep | Skipped:
    """Copy bandwidth inside one GPU's memory (no PCIe roof)."""
    return _sweep("device-to-device", lambda n: (_device(n, device), _device(n, device)), config)


def _roof_or_none(device: int) -> tuple[float | None, str]:
    if cuda_unavailable_reason():
        return None, ""
    return host_link_roof(device)


def gpu_copy_sweeps(config: SweepConfig = SweepConfig(), device: int = 0) -> list[CopySweep | Skipped]:
    """H2D and D2H, pinned and pageable, then D2D: the lab's table of GPU roofs."""
    roof = _roof_or_none(device)
    return [h2d_sweep(config, True, device, roof), h2d_sweep(config, False, device, roof),
            d2h_sweep(config, True, device, roof), d2h_sweep(config, False, device, roof),
            d2d_sweep(config, device)]
