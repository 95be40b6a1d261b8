"""The collectives lab as a script: every collective run through torch.distributed and held against
commlab's numpy reference on every rank, all_reduce rebuilt from reduce_scatter + all_gather, and the bytes
each rank sends (labs/collectives.ipynb), with your run_collective and all_reduce_by_halves from
labs/mine/collectives.py (else the reference; the first line says which, ``--reference`` forces it).

On one machine, ranks started by this script itself (gloo on CPU, NCCL with a GPU per rank)::

    python labs/scripts/collectives.py --ranks 4

Under torchrun, on one machine or several::

    torchrun --nproc-per-node 8 labs/scripts/collectives.py
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:PORT labs/scripts/collectives.py

Rank 0 prints the results; the exit status is 0 when every check passed.
"""
from __future__ import annotations

import argparse
import os
import sys

from commlab import collectives, units
from commlab.labs import script
from commlab.labs.solutions import collectives as lab

DEFAULT_RANKS = 4


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-rank", type=int, default=2,
                        help="elements per rank and chunk: each input has ranks x this many (default 2)")
    parser.add_argument("--size", default="64M", help="buffer size S for the bytes table (default 64M = 64 MiB)")
    script.add_launch_options(parser, DEFAULT_RANKS, default_timeout_s=120.0)
    return parser.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple:
    """The worker's arguments: elements per rank, and the bytes table's size S (checked)."""
    return args.per_rank, units.parse_nbytes(args.size)


def bytes_table(n_ranks: int, nbytes: int) -> list[str]:
    """One line per collective: the bytes each rank sends (commlab.collectives), for nccl-tests' size S."""
    lines = [f"bytes sent per rank for S = {units.format_nbytes(nbytes, binary=True)} on {n_ranks} ranks:"]
    for spec in collectives.specs():
        sent = spec.bytes_sent_per_rank(nbytes, n_ranks)
        shown = ", ".join(units.format_nbytes(v, binary=True) for v in sent[:8]) + (", ..." if n_ranks > 8 else "")
        lines.append(f"  {spec.name:>15}: {shown}   ({spec.formula})")
    return lines


def worker(rank: int, n_ranks: int, code, per_rank: int, nbytes: int) -> bool:
    one_machine = os.environ.get("LOCAL_WORLD_SIZE", str(n_ranks)) == str(n_ranks)
    live = lab.collectives_in_group(rank, n_ranks, code.function("run_collective"), per_rank * n_ranks,
                                    timed_barrier=one_machine)
    halves = lab.halves_in_group(rank, n_ranks, code.function("all_reduce_by_halves"), 1024 * n_ranks)
    problems = [p for p in live["verdicts"].values() if p] + ([halves["problem"]] if halves["problem"] else [])
    if rank == 0:
        print(f"collectives lab on {n_ranks} ranks, backend {live['backend']}; rank 0's view:")
        for op, problem in live["verdicts"].items():
            right = "no rank left before the last arrived" if op == "barrier" else "matches the numpy reference"
            print(f"  {op:>15}: {problem or right}")
        print(f"  all_reduce as reduce_scatter + all_gather: {halves['problem'] or 'equals dist.all_reduce'}")
        print("\n".join(bytes_table(n_ranks, nbytes)))
    elif problems:
        print(f"rank {rank}: " + "; ".join(problems))
    return not problems


def main(argv=None) -> int:
    return script.run_script("collectives.py", parse_args(argv), worker, prepare, lab="collectives",
                             default_n_ranks=DEFAULT_RANKS, check=all)


if __name__ == "__main__":
    sys.exit(main())
