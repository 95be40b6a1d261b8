"""The build-your-own-ring lab as a script: your ring reduce-scatter, all-gather and all-reduce (from
labs/mine/build_your_own_ring.py, which the notebook writes; else the reference) checked on every rank
against torch.distributed's collectives, their recorded messages compared with the ring schedules, and the
all-reduce timed against dist.all_reduce (labs/build_your_own_ring.ipynb). The first line says whose code
runs; ``--reference`` runs the reference.

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
from commlab.labs.checks.build_your_own_ring import all_gather_of, reduce_scatter_of
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


def kinds(code) -> dict:
    """The three collectives made of the functions of ``code`` (the learner's or the reference)."""
    return {"reduce_scatter": reduce_scatter_of(code.function("reduce_scatter_steps")),
            "all_gather": all_gather_of(code.function("all_gather_steps")),
            "all_reduce": code.function("ring_all_reduce")}


def _anyone(flag: bool) -> bool:
    """True when ``flag`` is true on any rank (a MAX all-reduce)."""
    import torch
    import torch.distributed as dist

    from commlab.labs.checking import device_and_sync

    value = torch.tensor([float(flag)], device=device_and_sync()[0])
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def worker(rank: int, n_ranks: int, code, n_elements: int, n_repeats: int) -> bool:
    problems = []
    fns = kinds(code)
    for kind, fn in fns.items():
        try:
            found = lab.check_in_group(rank, n_ranks, fn, kind, LENGTHS)
        except NotImplementedError as exc:           # every rank raises it at once: say it, go on
            found = [f"{kind} is not written yet ({exc})"]
        problems += found
        if rank == 0:
            print(f"ring {kind:>14} on {n_ranks} ranks, lengths {list(LENGTHS)}: "
                  f"{'equals torch and follows the schedule' if not found else found[0]}")
    if _anyone(bool(problems)):                       # every rank must agree before the timing's barrier
        return not problems
    timing = lab.timing_in_group(rank, n_ranks, fns["all_reduce"], n_elements, n_repeats)
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
    return script.run_script("build_your_own_ring.py", parse_args(argv), worker, prepare, lab="build_your_own_ring",
                             default_n_ranks=DEFAULT_RANKS, check=all)


if __name__ == "__main__":
    sys.exit(main())
