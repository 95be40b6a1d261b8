"""Speed of ``commlab plan`` for Llama 3.1 405B on 16,384 H100 over every layout, in a fresh process.

Goal: under 2 s of wall time on the 2-core development machine. The script starts ``python -m commlab plan`` in a
new interpreter (imports included) ``--repeat`` times and prints the median wall time, the CPU time of the child,
the load average, and the ratio of the median to the 2 s goal (below 1 meets it).

    python benchmarks/plan_speed.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

GOAL_S = 2.0
COMMAND = [sys.executable, "-m", "commlab", "plan", "--model", "405B", "--gpus", "16384", "--gpu", "h100"]


def one_run() -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(COMMAND, check=True, stdout=subprocess.DEVNULL, timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    runs = [one_run() for _ in range(max(1, args.repeat))]
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    load = os.getloadavg()[0]
    print(f"commlab plan 405B on 16,384 H100, fresh process, {len(runs)} runs: median wall {wall:.2f} s, "
          f"CPU {cpu:.2f} s, load average {load:.1f} on {os.cpu_count()} cores")
    print(f"ratio to the {GOAL_S:g} s goal: wall {wall / GOAL_S:.2f}, CPU {cpu / GOAL_S:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
