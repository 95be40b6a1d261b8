"""The sweep loop, written once for every collective (nccl-tests' ``TimeTest`` and ``BenchTime``).

For each size: the per-rank ``count`` (nccl-tests' ``setupArgs``: ``size / itemsize``, divided by N where the
`size` column is the whole buffer), then out of place and in place: time ``iters`` iterations
(:mod:`commlab.bench.timing`) and, with ``check``, run once more on fresh inputs and count wrong elements
against the numpy reference (:mod:`commlab.bench.data`). Before the sweep, ``warmup`` iterations at the
largest and then at the smallest size, as nccl-tests does.
"""
from __future__ import annotations

from commlab.bench.colls import Case
from commlab.bench.config import BenchConfig
from commlab.bench.data import count_wrong_for, rank_input
from commlab.bench.result import BenchResult, version_line
from commlab.bench.timing import bandwidths_GBps, elapsed_per_iter_s, mean_over_ranks, sum_over_ranks
from commlab.nccl.records import Measure, Row


def count_for(spec, size_nbytes: int, itemsize: int, n_ranks: int) -> int:
    """nccl-tests' ``count`` for a sweep size: elements per rank of the per-rank message.

    >>> from commlab.collectives import spec
    >>> count_for(spec("all_reduce"), 1024, 4, 4), count_for(spec("all_gather"), 1024, 4, 4)
    (256, 64)
    """
    total = size_nbytes // itemsize
    return total // n_ranks if spec.whole_buffer_size else total


def _device():
    import torch
    import torch.distributed as dist

    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _wrong(case: Case, spec, config: BenchConfig, in_place: bool, device) -> int:
    """Fresh inputs, one iteration, wrong elements summed over the ranks (0 on non-root ranks of reduce)."""
    import torch

    inp, out = case.views(in_place)
    data = rank_input(case.rank, case.n_in, config.redop, spec.reduces)
    out.zero_()
    inp.copy_(torch.from_numpy(data).to(inp.dtype))
    case.run(in_place)
    wrong = 0
    if case.op != "reduce" or case.rank == config.root:
        wrong = count_wrong_for(spec, out, case.rank, case.n_ranks, case.n_in, config.root, config.redop)
    return sum_over_ranks(wrong, device)


def _checked(case: Case, spec, config: BenchConfig, in_place: bool, device) -> int | None:
    """``#wrong`` after up to ``config.check`` checked iterations, stopping at the first with errors (as
    nccl-tests' ``BenchTime`` does); None when checking is off."""
    wrong = None
    for _ in range(config.check):
        wrong = _wrong(case, spec, config, in_place, device)
        if wrong:
            break
    return wrong


def _measure(case: Case, spec, config: BenchConfig, in_place: bool, size_nbytes: int, device) -> Measure:
    t_s = mean_over_ranks(elapsed_per_iter_s(lambda: case.run(in_place), config.iters, device), device)
    algbw, busbw = bandwidths_GBps(size_nbytes, t_s, spec.busbw_factor(case.n_ranks))
    wrong = _checked(case, spec, config, in_place, device)
    return Measure(time_us=t_s * 1e6, algbw_GBps=algbw, busbw_GBps=busbw, wrong=wrong)


def _warm_up(spec, config: BenchConfig, rank: int, n_ranks: int, device) -> None:
    for size in (config.sizes_nbytes()[-1], config.min_nbytes):
        count = count_for(spec, size, config.itemsize, n_ranks)
        case = Case.make(spec, count, rank, n_ranks, config.root, config.redop, config.dtype, device)
        for _ in range(config.warmup):
            case.run(False)


def _describe_rank(device) -> dict:
    import os
    import platform
    import socket

    import torch

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or "CPU")
    index = device.index if device.type == "cuda" else "-"
    return {"pid": os.getpid(), "host": socket.gethostname(), "device": index, "name": f"{name} ({device.type})"}


def sweep_in_group(config: BenchConfig, on_size=None) -> BenchResult:
    """Run the sweep in the initialised process group; every rank returns the same result.

    ``on_size(done, total, row)`` is called on every rank after each size (progress bars use it on rank 0).
    """
    import torch.distributed as dist

    from commlab.collectives import spec as collective_spec

    rank, n_ranks = dist.get_rank(), dist.get_world_size()
    config.check_ranks(n_ranks)
    spec, device = collective_spec(config.op), _device()
    _warm_up(spec, config, rank, n_ranks, device)
    rows, sizes = [], config.sizes_nbytes()
    for done, size in enumerate(sizes, start=1):
        count = count_for(spec, size, config.itemsize, n_ranks)
        case = Case.make(spec, count, rank, n_ranks, config.root, config.redop, config.dtype, device)
        size_nbytes = spec.size_nbytes(count, config.itemsize, n_ranks)
        oop = _measure(case, spec, config, False, size_nbytes, device)
        ip = _measure(case, spec, config, True, size_nbytes, device) if spec.has_in_place else None
        rows.append(Row(size_nbytes, count, config.dtype, config.redop if spec.reduces else "none",
                        config.root if spec.rooted else -1, oop, ip))
        if on_size is not None:
            on_size(done, len(sizes), rows[-1])
    devices: list = [None] * n_ranks
    dist.all_gather_object(devices, _describe_rank(device))
    backend = str(dist.get_backend())
    return BenchResult(config.op, n_ranks, backend, config.dtype, tuple(rows), config, tuple(devices),
                       version_line(backend))
