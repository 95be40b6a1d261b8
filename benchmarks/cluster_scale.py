"""The cluster model at scale, and how long it takes (goals, issue 19: 16,384 GPUs x 64 sizes x every algorithm in
well under a second on 2 cores; `commlab cluster cost all_reduce --nbytes 1G --preset dgx-h100-ndr --nodes 2048
--algo all --json` in under 2 s).

Prints, with the load average: the time of ``cluster_cost`` for every collective and algorithm on 2,048 DGX H100
nodes (16,384 GPUs) at 64 sizes from 8 B to 16 GiB; the time of a sweep over 12 node counts (1 to 2,048); the
wall time of the command line above in a fresh process (Python start and imports included); and, for the
record, what each algorithm takes at 1 GiB on those 16,384 GPUs.

Run: .venv/bin/python benchmarks/cluster_scale.py   (prints; not a test)
"""
import os
import subprocess
import sys
import time

T_START = time.perf_counter()            # the timing includes importing the cluster model

import numpy as np  # noqa: E402

from commlab.cluster import CLUSTER_OPS, cluster_cost, sweep_nodes  # noqa: E402

T_IMPORT = time.perf_counter() - T_START
SIZES = 2.0 ** np.linspace(3, 34, 64)
COMMAND = ["cluster", "cost", "all_reduce", "--nbytes", "1G", "--preset", "dgx-h100-ndr", "--nodes", "2048",
           "--algo", "all", "--json"]


def best_of(fn, repeat=5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; importing commlab.cluster {T_IMPORT:.2f} s")
    every = best_of(lambda: [cluster_cost(op, SIZES, "dgx-h100-ndr", 2048) for op in CLUSTER_OPS])
    n_algos = sum(len(cluster_cost(op, SIZES[:1], "dgx-h100-ndr", 2048).algos) for op in CLUSTER_OPS)
    print(f"16,384 GPUs x {len(SIZES)} sizes x {len(CLUSTER_OPS)} collectives ({n_algos} collective-algorithm pairs): "
          f"{every * 1e3:.1f} ms (best of 5)")
    nodes = [2**i for i in range(12)]
    sweep = best_of(lambda: sweep_nodes("all_reduce", SIZES, "dgx-h100-ndr", nodes), repeat=3)
    print(f"all_reduce over {len(nodes)} node counts (1 to 2,048) x {len(SIZES)} sizes: {sweep * 1e3:.1f} ms")
    t = time.perf_counter()
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "commlab")] + COMMAND,
                          capture_output=True, text=True, timeout=60)
    wall = time.perf_counter() - t
    print(f"`commlab {' '.join(COMMAND)}`: {wall:.2f} s wall in a fresh process (exit {done.returncode})")
    c = cluster_cost("all_reduce", [2**30], "dgx-h100-ndr", 2048)
    print("all_reduce of 1 GiB on 2,048 DGX H100 (16,384 GPUs), per algorithm:")
    for name, a in c.algos.items():
        if a.available:
            print(f"  {name:15s} {a.time_s[0] * 1e3:9.2f} ms  busbw {a.busbw_GBps[0]:6.1f} GB/s  {a.bottleneck[0]}")
        else:
            print(f"  {name:15s} cannot run: {a.why}")
    print(f"NCCL's default pick: {c.nccl_pick[0]}; fastest: {c.fastest()[0]}")


if __name__ == "__main__":
    main()
