"""The topology lab as a script: read this machine's GPU topology (or a published example), lay out tensor-,
pipeline- and data-parallel groups for the ranks it runs on, check them against the wiring, create them as
process groups, and measure the copy roofs (labs/topology.ipynb). The groups come from your choose_groups in
labs/mine/topology.py (else the reference; the first line says which, ``--reference`` forces it).

On one machine, ranks started by this script itself (gloo on CPU, NCCL with a GPU per rank)::

    python labs/scripts/topology.py --ranks 4
    python labs/scripts/topology.py --ranks 8 --tp 2 --pp 2 --example v100-sxm2-8

Under torchrun (on an 8-GPU node it reads the node's own topology)::

    torchrun --nproc-per-node 8 labs/scripts/topology.py --tp 8

The topology is this machine's when it has a GPU for every rank, else the first N GPUs of ``--example``.
Rank 0 prints the results; the exit status is 0 when the layout is right and every group works.
"""
from __future__ import annotations

import argparse
import sys

from commlab import measure, topology, units
from commlab.errors import CommlabError
from commlab.labs import script
from commlab.labs.solutions import topology as lab

DEFAULT_RANKS = 4


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", default="a40-pcie-8", choices=topology.example_names(),
                        help="published topology used when this machine has too few GPUs (default a40-pcie-8)")
    parser.add_argument("--tp", type=int, default=None, help="tensor-parallel size (default 2, or 1 for an odd N)")
    parser.add_argument("--pp", type=int, default=1, help="pipeline-parallel size (default 1)")
    script.add_launch_options(parser, DEFAULT_RANKS, default_timeout_s=120.0)
    return parser.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple:
    """The worker's arguments: the example topology and the sizes (the worker checks the layout)."""
    return args.example, args.tp, args.pp


def machine_for(n_ranks: int, example: str):
    """(topology of n_ranks GPUs, where it came from): this machine's first GPUs, else the example's."""
    here = topology.read()
    if here.n_gpus >= n_ranks:
        return lab.sub_topology(here, range(n_ranks)), "this machine (NVML)"
    base = topology.example(example)
    if base.n_gpus < n_ranks:
        raise CommlabError(f"{n_ranks} ranks need a topology of {n_ranks} GPUs; example {example!r} has "
                           f"{base.n_gpus} and this machine {here.n_gpus} ({here.reason or 'too few'})")
    return lab.sub_topology(base, range(n_ranks)), f"the first {n_ranks} GPUs of the example {example}"


def report_roofs() -> None:
    """Rank 0: memory copy bandwidth, and host-to-device copies when this rank has a GPU."""
    cpu = measure.cpu_copy_sweep(measure.SweepConfig(min_nbytes=64 * units.KiB, max_nbytes=64 * units.MiB))
    print(cpu.to_text())
    skipped = measure.cuda_unavailable_reason()
    if skipped:
        print(f"host-to-device copies: skipped ({skipped})")
        return
    import torch

    config = measure.SweepConfig(min_nbytes=4 * units.MiB, max_nbytes=256 * units.MiB)
    for pinned in (True, False):
        print(measure.h2d_sweep(config, pinned=pinned, device=torch.cuda.current_device()).to_text())


def worker(rank: int, n_ranks: int, code, example: str, tp: int | None, pp: int) -> bool:
    machine, where = machine_for(n_ranks, example)
    tp = tp if tp is not None else (2 if n_ranks % 2 == 0 else 1)
    dp = n_ranks // (tp * pp) if n_ranks % (tp * pp) == 0 else 0
    groups, problems = lab.try_choose(code.function("choose_groups"), machine, tp, pp, dp)
    if rank == 0:
        print(f"topology of {where}:\n{topology.format_matrix(machine)}")
        print(f"tp={tp} pp={pp} dp={dp} on {n_ranks} ranks: {problems[0] if problems else 'right'}")
    if problems:
        return False
    sums = lab.groups_in_group(rank, n_ranks, groups)["sums"]
    wrong = [f"{kind} {members}: {total}" for kind, (total, members) in sums.items() if total != sum(members)]
    if rank == 0:
        for kind in lab.KINDS:
            print(f"  {kind.upper()} groups: {groups[kind]}")
        print(f"process groups: rank 0's all-reduces gave {', '.join(f'{k} {v[0]}' for k, v in sums.items())}"
              f"{' (right)' if not wrong else ''}")
        report_roofs()
    if wrong:
        print(f"rank {rank}: all_reduce in its groups went wrong: {'; '.join(wrong)}")
    return not wrong


def main(argv=None) -> int:
    return script.run_script("topology.py", parse_args(argv), worker, prepare, lab="topology",
                             default_n_ranks=DEFAULT_RANKS, check=all)


if __name__ == "__main__":
    sys.exit(main())
