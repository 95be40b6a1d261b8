"""What does ``commlab bench`` cost over a bare timing loop? (target: at most 5%)

On 4 gloo ranks, for each size from 1 MB to 64 MB, the in-place all_reduce busbw that commlab.bench reports
is held against a bare loop on the same ranks and buffer size: barrier, ``dist.all_reduce(x)`` n times,
``time.perf_counter`` around the loop, averaged over the ranks. The two are interleaved (which one goes
first alternates) and repeated, and the medians compared: ratio = commlab busbw / bare busbw (1.00 = no
overhead; >= 0.95 meets the target). On a shared machine single runs scatter widely; the load average is
printed with the result.

    .venv/bin/python benchmarks/bench_overhead.py [--ranks 4] [--iters 10] [--repeats 9]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

SIZES_NBYTES = [2**20 * k for k in (1, 4, 16, 64)]


def _bare_busbw_GBps(nbytes: int, iters: int) -> float:
    import torch
    import torch.distributed as dist

    from commlab.collectives import busbw_factor

    x = torch.ones(nbytes // 4)
    dist.all_reduce(x)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    t = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
    dist.all_reduce(t)
    t_s = t.item() / dist.get_world_size()
    return nbytes / t_s / 1e9 * busbw_factor("all_reduce", dist.get_world_size())


def _commlab_busbw_GBps(nbytes: int, iters: int) -> float:
    from commlab.bench import BenchConfig, sweep_in_group

    config = BenchConfig("all_reduce", nbytes, nbytes, iters=iters, warmup=1, check=False)
    return sweep_in_group(config).rows[0].ip.busbw_GBps


def _rank(rank: int, n_ranks: int, iters: int, repeats: int) -> dict:
    results = {}
    for nbytes in SIZES_NBYTES:
        bare, harness = [], []
        for repeat in range(repeats):
            if repeat % 2:
                harness.append(_commlab_busbw_GBps(nbytes, iters))
                bare.append(_bare_busbw_GBps(nbytes, iters))
            else:
                bare.append(_bare_busbw_GBps(nbytes, iters))
                harness.append(_commlab_busbw_GBps(nbytes, iters))
        results[nbytes] = (statistics.median(bare), statistics.median(harness))
    return results


def main() -> None:
    from commlab.launch import run

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results = run(_rank, args.ranks, args.iters, args.repeats, backend="gloo", timeout_s=3600)[0]
    print(f"all_reduce, {args.ranks} gloo ranks, {args.iters} iterations, median of {args.repeats}; "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} cores")
    print(f"{'size':>8}  {'bare busbw':>12}  {'commlab busbw':>14}  {'ratio':>6}")
    for nbytes, (bare, harness) in results.items():
        print(f"{nbytes // 2**20:>5} MiB  {bare:>8.3f} GB/s  {harness:>10.3f} GB/s  {harness / bare:>6.3f}")


if __name__ == "__main__":
    main()
