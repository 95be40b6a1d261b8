"""The p2p lab as a script: a ping-pong sweep with its alpha-beta fit, a halo exchange blocking and
non-blocking, and a ring exchange that cannot deadlock, with your functions from labs/mine/p2p.py (written by
labs/p2p.ipynb; else the reference, and the first line says which; ``--reference`` forces it).

On one machine, ranks started by this script itself (gloo on CPU, NCCL with a GPU per rank)::

    python labs/scripts/p2p.py --ranks 2

Under torchrun, on one machine or several::

    torchrun --nproc-per-node 2 labs/scripts/p2p.py
    torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint HOST:PORT labs/scripts/p2p.py

The ping-pong runs between ranks 0 and 1 (the others wait); rank 0 prints every result. The deadlock demo
(``--deadlock``) needs ranks that can be stopped after a timeout, so it runs only without a launcher.
"""
from __future__ import annotations

import argparse
import sys

from commlab import cost, launch, units
from commlab.errors import CommlabError
from commlab.labs import script
from commlab.labs.solutions import p2p as lab

DEFAULT_RANKS = 2
DEFAULT_MAX_NBYTES = 8 * 1024**2


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-size", default="8M", help="largest ping-pong message; sizes start at 8 B and grow "
                                                         "4 times a step (default 8M = 8 MiB)")
    parser.add_argument("--halo-size", default="4M", help="bytes per halo buffer (default 4M = 4 MiB)")
    parser.add_argument("--deadlock", action="store_true",
                        help="first show the naive ring exchange deadlocking on gloo (not under torchrun)")
    script.add_launch_options(parser, DEFAULT_RANKS, default_timeout_s=120.0)
    return parser.parse_args(argv)


def ping_pong_sizes(max_nbytes: int) -> list[int]:
    """8 B, 32 B, 128 B, ... up to ``max_nbytes``: the sizes of the lab's sweep."""
    sizes = [8]
    while sizes[-1] * 4 <= max_nbytes:
        sizes.append(sizes[-1] * 4)
    return sizes


def report_ping_pong(sizes_nbytes: list[int], measured: dict) -> None:
    one_way_s = measured["one_way_s"]
    for nbytes, t_s in zip(sizes_nbytes, one_way_s):
        print(f"  {units.format_nbytes(nbytes, binary=True):>9}: one way {units.format_time(t_s):>9}, "
              f"S/t = {units.format_bandwidth(nbytes / t_s)}")
    fit = cost.fit_alpha_beta(sizes_nbytes, one_way_s)
    bandwidth = (units.format_bandwidth(fit.bw_GBps * units.GB) if fit.beta_s_per_byte > 0 else
                 "too high to show at these sizes (the largest message costs no more than the smallest)")
    print(f"  fit t = alpha + S/B: alpha = {units.format_time(fit.alpha_s)}, B = {bandwidth} (R^2 {fit.r2:.3f})")


def _part(problems: list, what: str, run):
    """``run()``, or None with 'not written yet' in ``problems`` (every rank raises it at once)."""
    try:
        found = run()
    except NotImplementedError as exc:
        problems.append(f"{what} is not written yet ({exc})")
        return None
    problems += found["problems"]
    return found


def worker(rank: int, n_ranks: int, code, sizes_nbytes: list[int], halo_nbytes: int) -> bool:
    """Every part of the lab inside the group, with ``code``'s functions; rank 0 prints. True when every
    check passed."""
    problems: list[str] = []
    pp = _part(problems, "ping_pong", lambda: lab.ping_pong_in_group(rank, n_ranks, code.function("ping_pong"),
                                                                      sizes_nbytes, 4, 5))
    halo = _part(problems, "halo_exchange_nonblocking", lambda: lab.halo_in_group(
        rank, n_ranks, [("blocking", lab.halo_exchange_blocking),
                        ("non-blocking", code.function("halo_exchange_nonblocking"))], halo_nbytes, 5))
    ring = _part(problems, "ring_exchange", lambda: lab.exchange_in_group(rank, n_ranks, code.function("ring_exchange"),
                                                                          1024))
    if rank == 0:
        import torch.distributed as dist

        print(f"p2p lab on {n_ranks} ranks, backend {dist.get_backend()}")
        if pp is not None:
            print(f"ping-pong between ranks 0 and 1 ({pp['backend']}):")
            report_ping_pong(sizes_nbytes, pp)
        if halo is not None:
            times_s = halo["times_s"]
            print(f"halo exchange of 2 x {units.format_nbytes(halo_nbytes, binary=True)} with both neighbours: "
                  f"blocking {units.format_time(times_s['blocking'])}, non-blocking "
                  f"{units.format_time(times_s['non-blocking'])} (blocking / non-blocking = "
                  f"{times_s['blocking'] / times_s['non-blocking']:.2f})")
        if ring is not None:
            right = "every rank received its left neighbour's buffer"
            print(f"ring exchange on {n_ranks} ranks: {right if not ring['problems'] else 'WRONG'}")
        for problem in problems:
            print(f"problem: {problem}")
    return not problems


def show_deadlock() -> None:
    outcome = lab.check_ring_exchange(lab.ring_exchange_naive, (4,), timeout_s=5.0, backend="gloo")
    print(outcome.problem or "the naive ring exchange finished: this backend completed the sends early")


def prepare(args: argparse.Namespace) -> tuple:
    """The worker's arguments (ping-pong sizes, halo bytes), checked; the deadlock demo first if asked for."""
    n_ranks = script.ranks_to_start(args.ranks, DEFAULT_RANKS)
    if not launch.is_launched() and n_ranks < 2:
        raise CommlabError(f"the p2p lab needs at least 2 ranks (a ping-pong has two ends), got --ranks {n_ranks}")
    halo_nbytes = units.parse_nbytes(args.halo_size)
    sizes_nbytes = ping_pong_sizes(units.parse_nbytes(args.max_size))
    if args.deadlock:
        if launch.is_launched():
            print("--deadlock is skipped under a launcher: a deadlocked rank cannot be stopped from inside")
        else:
            show_deadlock()
    return sizes_nbytes, halo_nbytes


def main(argv=None) -> int:
    return script.run_script("p2p.py", parse_args(argv), worker, prepare, lab="p2p", default_n_ranks=DEFAULT_RANKS,
                             check=all)


if __name__ == "__main__":
    sys.exit(main())
