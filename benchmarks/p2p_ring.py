"""The p2p ring all-reduce (commlab.p2p.ring_all_reduce, isend/irecv) against gloo's own all_reduce.
(target: ratio >= 0.8)

On 4 gloo ranks, 64 MiB of float32 per rank: each is timed over ``--iters`` iterations between barriers,
averaged over the ranks, the two interleaved (which goes first alternates) and repeated; ratio = gloo time /
p2p time (1.00 = as fast as gloo). Both work in place (``ring_all_reduce(x, in_place=True)``), as a
training loop's all-reduce of its gradient buckets does; a fresh 64 MiB result per call would add the cost of
first touching its pages.

    .venv/bin/python benchmarks/p2p_ring.py [--ranks 4] [--mib 64] [--iters 5] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def _mean_time_s(op, iters: int) -> float:
    import torch
    import torch.distributed as dist

    op()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        op()
    t = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def _rank(rank: int, n_ranks: int, nbytes: int, iters: int, repeats: int) -> tuple[float, float, float]:
    import torch
    import torch.distributed as dist

    from commlab.p2p import ring_all_reduce

    x = torch.randn(nbytes // 4, generator=torch.Generator().manual_seed(rank))
    gloo_s, ring_s = [], []
    gloo, ring = (lambda: dist.all_reduce(x)), (lambda: ring_all_reduce(x, in_place=True))
    for repeat in range(repeats):  # which goes first alternates
        first, second = (gloo, ring) if repeat % 2 == 0 else (ring, gloo)
        t_first, t_second = _mean_time_s(first, iters), _mean_time_s(second, iters)
        gloo_s.append(t_first if first is gloo else t_second)
        ring_s.append(t_second if first is gloo else t_first)
    x = torch.randn(nbytes // 4, generator=torch.Generator().manual_seed(rank))
    y, z = ring_all_reduce(x), x.clone()
    dist.all_reduce(z)
    return statistics.median(gloo_s), statistics.median(ring_s), float((y - z).abs().max())


def main() -> None:
    from commlab.launch import run

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    gloo_s, ring_s, error = run(_rank, args.ranks, args.mib * 2**20, args.iters, args.repeats, backend="gloo",
                                timeout_s=3600)[0]
    print(f"all_reduce of {args.mib} MiB float32 on {args.ranks} gloo ranks, median of {args.repeats} x "
          f"{args.iters} iterations; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, "
          f"{os.cpu_count()} cores")
    print(f"gloo all_reduce       {gloo_s * 1e3:9.1f} ms")
    print(f"p2p ring_all_reduce   {ring_s * 1e3:9.1f} ms   (max difference from gloo: {error:.2e})")
    print(f"ratio gloo / p2p      {gloo_s / ring_s:9.3f}   (target >= 0.8)")


if __name__ == "__main__":
    main()
