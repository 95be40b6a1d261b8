"""How fast this machine copies memory: the local roof gloo's numbers are held against (the topology lab).

gloo moves a collective's bytes between processes through memory (shared memory or the loopback socket), so
no CPU collective can move a buffer faster than one core-side copy of it: ``bw_GBps = nbytes / t_s`` of a
large ``memcpy`` is the honest ceiling for a gloo busbw on this machine. Buffers are touched before timing,
so page faults are not counted, and each size keeps its fastest of ``repeats`` copies.

>>> sweep = cpu_copy_sweep(SweepConfig(min_nbytes=1 << 20, max_nbytes=1 << 20, repeats=2))
>>> sweep.points[0].nbytes, sweep.peak_GBps > 0
(1048576, True)
"""
from __future__ import annotations

import numpy as np

from commlab.errors import check_choice
from commlab.measure.results import CopyPoint, CopySweep
from commlab.measure.sweep import SweepConfig, best_time_s

BACKENDS = ("numpy", "torch")


def cpu_copy_sweep(config: SweepConfig = SweepConfig(), backend: str = "numpy") -> CopySweep:
    """Copy bandwidth of host memory over ``config``'s sizes (``backend="torch"`` uses its threaded copy)."""
    check_choice("backend", backend, BACKENDS)
    copy_point = _numpy_point if backend == "numpy" else _torch_point
    points = tuple(copy_point(nbytes, config) for nbytes in config.sizes())
    return CopySweep(f"CPU memory copy ({backend})", points)


def _numpy_point(nbytes: int, config: SweepConfig) -> CopyPoint:
    src = np.full(nbytes, 1, dtype=np.uint8)  # written, so every page is mapped before timing
    dst = np.zeros_like(src)
    dst.fill(2)
    t_s = best_time_s(lambda: np.copyto(dst, src), config.repeats, config.warmup)
    return CopyPoint(nbytes, t_s, config.repeats)


def _torch_point(nbytes: int, config: SweepConfig) -> CopyPoint:
    import torch

    src = torch.ones(nbytes, dtype=torch.uint8)
    dst = torch.zeros(nbytes, dtype=torch.uint8)
    t_s = best_time_s(lambda: dst.copy_(src), config.repeats, config.warmup)
    return CopyPoint(nbytes, t_s, config.repeats)
