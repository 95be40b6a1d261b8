"""Timing one size the way nccl-tests' ``BenchTime`` does (``src/common.cu``).

One untimed iteration, a barrier, then ``iters`` iterations back to back between two clock readings, the
clock stopped once the device has finished (CUDA events on a GPU, ``time.perf_counter`` on the CPU, where
gloo's calls return when the data is in place). The time of one iteration is the mean,
``t = elapsed / iters``, and the reported time is the average of that over the ranks (nccl-tests' default
``-a 1``). Then ``algbw = size / t`` and ``busbw = algbw * F(n)`` (nccl-tests' doc/PERFORMANCE.md, nccl-tests
``doc/PERFORMANCE.md``).
"""
from __future__ import annotations

import time


def elapsed_per_iter_s(run, iters: int, device) -> float:
    """This rank's mean seconds per iteration of ``run()`` over ``iters`` back-to-back iterations."""
    import torch

    run()
    _barrier(device)
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            run()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / iters
    t0_s = time.perf_counter()
    for _ in range(iters):
        run()
    return (time.perf_counter() - t0_s) / iters


def _barrier(device) -> None:
    import torch.distributed as dist

    if device.type == "cuda":
        dist.barrier(device_ids=[device.index])
    else:
        dist.barrier()


def mean_over_ranks(value: float, device) -> float:
    """The average of ``value`` over all ranks (nccl-tests ``-a 1``)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t.item()) / dist.get_world_size()


def sum_over_ranks(value: int, device) -> int:
    """The sum of ``value`` over all ranks (how nccl-tests totals ``#wrong``)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(t)
    return int(t.item())


def bandwidths_GBps(size_nbytes: int, t_s: float, factor: float) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (1e9 bytes per second): ``algbw = size / t``, ``busbw = algbw * F(n)``.

    >>> bandwidths_GBps(1_000_000_000, 0.5, 1.5)
    (2.0, 3.0)
    """
    algbw = size_nbytes / t_s / 1e9 if t_s > 0 else 0.0
    return algbw, algbw * factor
