"""``commlab doctor``: what this machine offers the book, on one screen (chapter 00).

Python, torch and its distributed backends (gloo, NCCL), CUDA and the GPUs torch sees, NVML's view (driver
version or why it is missing), CPUs and the OS; then the measured roofs: CPU memory copy always, pinned
host-to-device copy where there is a GPU. Every probe that cannot run says why; nothing here raises for a
missing GPU, driver or library. The default measurement is small (a few tens of MiB).
"""
from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass, field

from commlab.measure.results import CopySweep, Skipped
from commlab.measure.sweep import QUICK, SweepConfig


@dataclass(frozen=True)
class DoctorReport:
    """Everything ``commlab doctor`` prints."""

    python: str
    os: str
    cpu_count: int
    torch: str
    """torch's version, or why it could not be imported."""
    backends: dict[str, bool]
    """gloo, nccl, mpi: whether torch.distributed has each."""
    cuda: str
    """"CUDA 12.4" or why CUDA is unavailable."""
    gpus: tuple[str, ...]
    """GPU names torch sees."""
    nvml: str
    """"driver 550.54.15, 8 GPU(s) visible to NVML" or why NVML is unavailable."""
    driver_version: str | None
    roofs: tuple[CopySweep | Skipped, ...] = field(default=())
    """Measured roofs (empty with measure=False)."""

    def to_text(self) -> str:
        lines = [f"python     {self.python}", f"os         {self.os}, {self.cpu_count} CPUs",
                 f"torch      {self.torch}",
                 "backends   " + ", ".join(f"{name} {'yes' if ok else 'no'}" for name, ok in self.backends.items()),
                 f"cuda       {self.cuda}", f"gpus       {len(self.gpus)}" + "".join(
                     f"\n           {i}: {name}" for i, name in enumerate(self.gpus)),
                 f"nvml       {self.nvml}"]
        if self.roofs:
            lines += ["roofs"] + [f"           {roof.to_text()}" for roof in self.roofs]
        return "\n".join(lines)

    def to_json(self) -> dict:
        out = {key: getattr(self, key) for key in ("python", "os", "cpu_count", "torch", "backends", "cuda",
                                                    "driver_version", "nvml")}
        out["gpus"] = list(self.gpus)
        out["roofs"] = [roof.to_json() for roof in self.roofs]
        return out

    def to_json_text(self) -> str:
        return json.dumps(self.to_json(), indent=2)


def doctor_report(measure: bool = True, config: SweepConfig = QUICK, nvml=None) -> DoctorReport:
    """Probe this machine; ``measure=True`` adds the CPU copy roof and, on a GPU, pinned host-to-device."""
    from commlab.topology.nvml import driver_status

    torch_text, backends, cuda, gpus = _torch_probe()
    driver, nvml_text = driver_status(nvml)
    roofs = _measure(config, bool(gpus)) if measure else ()
    return DoctorReport(python=platform.python_version() + f" ({sys.executable})",
                        os=f"{platform.system()} {platform.release()} {platform.machine()}",
                        cpu_count=os.cpu_count() or 1, torch=torch_text, backends=backends, cuda=cuda,
                        gpus=gpus, nvml=nvml_text, driver_version=driver, roofs=roofs)


def _torch_probe() -> tuple[str, dict[str, bool], str, tuple[str, ...]]:
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        return f"not importable ({exc})", {}, "unknown: torch is missing", ()
    ok = dist.is_available()
    backends = {"gloo": ok and dist.is_gloo_available(), "nccl": ok and dist.is_nccl_available(),
                "mpi": ok and dist.is_mpi_available()}
    from commlab.measure.gpu import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason:
        return torch.__version__, backends, f"not available: {reason}", ()
    gpus = tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    return torch.__version__, backends, f"CUDA {torch.version.cuda}", gpus


def _measure(config: SweepConfig, has_gpu: bool) -> tuple[CopySweep | Skipped, ...]:
    from commlab.measure.cpu import cpu_copy_sweep
    from commlab.measure.gpu import h2d_sweep

    roofs = [_guarded("CPU memory copy", lambda: cpu_copy_sweep(config))]
    roofs.append(_guarded("host-to-device, pinned", lambda: h2d_sweep(config, pinned=True)) if has_gpu
                 else Skipped("host-to-device, pinned", "no CUDA GPU here"))
    return tuple(roofs)


def _guarded(what: str, probe) -> CopySweep | Skipped:
    """A probe that fails at run time (out of memory, a CUDA error) is reported, not raised: doctor exits 0."""
    try:
        return probe()
    except (RuntimeError, MemoryError, OSError) as exc:
        return Skipped(what, f"failed: {type(exc).__name__}: {exc}")
