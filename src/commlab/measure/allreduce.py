"""NCCL all-reduce busbw across this machine's GPUs, one rank per GPU through :func:`commlab.launch.run`.

Each rank all-reduces a float32 buffer of ``nbytes`` ``iters`` times after ``warmup`` runs and times the loop
with CUDA events. As nccl-tests does (doc/PERFORMANCE.md): ``algbw = nbytes / t`` with ``t`` the mean time of
one all-reduce (the slowest rank's), and ``busbw = algbw * F(n)`` with the all-reduce factor
``F(n) = 2(n-1)/n`` from :func:`commlab.collectives.busbw_factor`: the figure to hold against one GPU's link.

Without CUDA, NCCL or a second GPU it returns :class:`~commlab.measure.results.Skipped`. ``launch.run``
bounds the whole run by ``timeout_s`` and leaves no rank running.
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.collectives import busbw_factor
from commlab.errors import CommlabError
from commlab.measure.results import Skipped
from commlab.units import GB, MiB


@dataclass(frozen=True)
class AllReduceResult:
    """One timed all-reduce size on ``n_ranks`` GPUs."""

    nbytes: int
    n_ranks: int
    t_s: float
    """Mean time of one all-reduce in seconds (slowest rank)."""

    @property
    def algbw_GBps(self) -> float:
        return self.nbytes / self.t_s / GB

    @property
    def busbw_GBps(self) -> float:
        return self.algbw_GBps * busbw_factor("all_reduce", self.n_ranks)

    def to_text(self) -> str:
        return (f"NCCL all-reduce on {self.n_ranks} GPUs, {self.nbytes / MiB:g} MiB: "
                f"algbw {self.algbw_GBps:.1f} GB/s, busbw {self.busbw_GBps:.1f} GB/s")


def nccl_allreduce(nbytes: int = 256 * MiB, iters: int = 20, warmup: int = 5,
                   timeout_s: float = 180.0) -> AllReduceResult | Skipped:
    """Time an NCCL all-reduce over every visible GPU; Skipped with the reason where it cannot run."""
    if nbytes < 4 or iters < 1 or warmup < 0:
        raise CommlabError(f"need nbytes >= 4, iters >= 1 and warmup >= 0; got nbytes={nbytes}, iters={iters}, "
                           f"warmup={warmup}")
    reason = nccl_unavailable_reason()
    if reason:
        return Skipped("NCCL all-reduce", reason)
    import torch

    from commlab.launch import run

    n_ranks = torch.cuda.device_count()
    times = run(_timed_all_reduce, n_ranks, nbytes // 4, iters, warmup, backend="nccl", timeout_s=timeout_s,
                verbose=False)
    return AllReduceResult(nbytes // 4 * 4, n_ranks, max(times))


def nccl_unavailable_reason() -> str | None:
    """Why an NCCL all-reduce cannot run here, or None."""
    from commlab.measure.gpu import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason:
        return reason
    import torch
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_nccl_available():
        return "this torch has no NCCL backend"
    if torch.cuda.device_count() < 2:
        return f"an all-reduce needs at least 2 GPUs; {torch.cuda.device_count()} visible"
    return None


def _timed_all_reduce(rank: int, n_ranks: int, count: int, iters: int, warmup: int) -> float:
    """One rank's mean all-reduce time in seconds (runs inside a launched rank, its GPU already set)."""
    import torch
    import torch.distributed as dist

    buf = torch.ones(count, dtype=torch.float32, device="cuda")
    for _ in range(warmup):
        dist.all_reduce(buf)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        dist.all_reduce(buf)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters  # elapsed_time is in milliseconds
