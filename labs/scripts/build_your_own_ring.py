"""The build-your-own-ring lab as a script: the reference ring reduce-scatter, all-gather and all-reduce
(written with isend/irecv) checked on every rank against torch.distributed's collectives, their recorded
messages compared with the ring schedules, and the all-reduce timed against dist.all_reduce
(labs/build_your_own_ring.ipynb does the same with the reader's code, for N = 2..8).

On one machine, ranks started by this script itself (gloo on CPU, NCCL with a GPU per rank)::

    python labs/scripts/build_your_own_ring.py --ranks 4

Under torchrun, on one machine or several::

    torchrun --nproc-per-node 8 labs/scripts/build_your_own_ring.py
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:PORT \\
        labs/scripts/build_your_own_ring.py

Rank 0 prints the results; the exit status is 0 when every check passed.
"""
from __future__ import annotations

import argparse
import sys

from commlab import units
from commlab.labs import script
from commlab.labs.solutions import build_your_own_ring as lab

DEFAULT_RANKS = 4
LENGTHS = (0, 1, 5, 17, 64, 1000)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=1 << 20,
                        help="float32 elements of the timed all-reduce (default 1048576 = 4 MiB)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each all-reduce (default 5)")
    script.add_launch_options(parser, DEFAULT_RANKS, default_timeout_s=120.0)
    return parser.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple:
    """The worker's arguments: the timed all-reduce's elements and repeats."""
    return args.elements, args.repeats


def worker(rank: int, n_ranks: int, n_elements: int, n_repeats: int) -> bool:
    problems = []
    for kind, fn in lab.KINDS.items():
        found = lab.check_in_group(rank, n_ranks, fn, kind, LENGTHS)
        problems += found
        if rank == 0:
            print(f"ring {kind:>14} on {n_ranks} ranks, lengths {list(LENGTHS)}: "
                  f"{'equals torch and follows the schedule' if not found else found[0]}")
    timing = lab.timing_in_group(rank, n_ranks, lab.ring_all_reduce, n_elements, n_repeats)
    if timing["max_error"] > 0:
        problems.append(f"rank {rank}: the timed ring all-reduce differs from torch by {timing['max_error']:g}")
    if rank == 0:
        print(f"all-reduce of {units.format_nbytes(4 * n_elements, binary=True)} ({timing['backend']}): ring with "
              f"isend/irecv {units.format_time(timing['yours_s'])}, dist.all_reduce "
              f"{units.format_time(timing['torch_s'])}, ratio {timing['yours_s'] / timing['torch_s']:.2f}")
    elif problems:
        print(f"rank {rank}: " + "; ".join(problems))
    return not problems


def main(argv=None) -> int:
    return script.run_script("build_your_own_ring.py", parse_args(argv), worker, prepare,
                             default_n_ranks=DEFAULT_RANKS, check=all)


if __name__ == "__main__":
    sys.exit(main())
