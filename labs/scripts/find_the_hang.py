"""The find-the-hang lab as a script: the faults of labs/find_the_hang.ipynb run on real gloo ranks (one rank
skips a collective, calls two in another order, passes another size, dies, or names a missing network
interface), what torch gives each rank (the process group timeout's error, the Flight Recorder's record), and
your find_the_hang (from labs/mine/find_the_hang.py, which the notebook writes; else the reference) naming the
rank and the call, checked against each fault and against faults it has not seen.

Without a launcher every fault runs on ranks of its own (gloo), stopped by the group's timeout, and the
launcher's when that is not enough::

    python labs/scripts/find_the_hang.py --ranks 4

Under torchrun the job's own ranks run the faults a job survives (skip, order, ifname) one after the other, each
on a process group of its own with a short timeout; a rank that dies or aborts would end the torchrun job, so
those two faults run only without a launcher::

    torchrun --nproc-per-node 2 labs/scripts/find_the_hang.py

The first line says whose code runs (``--reference`` forces the reference); the exit status is 0 when every
diagnosis is right.
"""
from __future__ import annotations

import argparse
import sys

from commlab import launch
from commlab.errors import CommlabError
from commlab.labs import hang, script

DEFAULT_RANKS = 4
#: The faults a torchrun job survives: every rank gets an error from the group's timeout and goes on.
SURVIVABLE = ("skip", "order", "ifname")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--group-timeout", type=float, default=hang.GROUP_TIMEOUT_S, metavar="S",
                        help=f"the faulty process group's own timeout, seconds (default {hang.GROUP_TIMEOUT_S:g})")
    script.add_launch_options(parser, DEFAULT_RANKS, default_timeout_s=60.0)
    return parser.parse_args(argv)


def faults_for(n_ranks: int, kinds) -> list[hang.Fault]:
    """The notebook's faults, on ``n_ranks`` ranks (the faulty rank is the last one when there are fewer than 4)."""
    found = []
    for kind in kinds:
        base = hang.FAULTS[kind]
        rank = min(base.rank, n_ranks - 1) or 1          # never rank 0: on a tie the lowest rank's call is the usual
        found.append(hang.Fault(base.kind, rank, base.call, n_ranks))
    return found


def judged(run: hang.FaultRun, find) -> tuple[bool, str]:
    """(right, a line): the learner's diagnosis of ``run`` against the fault's own truth."""
    try:
        got = find(run.records)
    except NotImplementedError as exc:
        return False, f"  find_the_hang is not written yet ({exc})"
    except Exception as exc:  # noqa: BLE001 - the learner's mistake, in words
        return False, f"  find_the_hang raised {type(exc).__name__}: {exc}"
    right = got == run.fault.truth
    return right, f"  find_the_hang: {got} ({'right' if right else 'expected ' + str(run.fault.truth)})"


def unseen_line(code) -> tuple[bool, str]:
    """The lab's check on the faults the notebook does not show (no ranks needed)."""
    from commlab.labs.checks.find_the_hang import check_find_the_hang as check

    outcome = check(code.function("find_the_hang"), live=False)
    return outcome.ok, f"find_the_hang on {outcome.details.get('cases', 'the')} unseen faults: " + (
        "right" if outcome.ok else outcome.problem)


def worker(rank: int, n_ranks: int, code, group_timeout_s: float) -> bool:
    """Under torchrun: the survivable faults in this job's own ranks, each record gathered to rank 0."""
    import torch.distributed as dist

    find, right = code.function("find_the_hang"), True
    for fault in faults_for(n_ranks, SURVIVABLE):
        record = hang.step_here(rank, n_ranks, fault, group_timeout_s)
        everyone: list = [None] * n_ranks
        dist.all_gather_object(everyone, record)
        run = hang.from_records(fault, {r["rank"]: r for r in everyone})
        ok, line = judged(run, find)
        right = right and ok
        if rank == 0:
            print("\n".join(hang.run_lines(run) + [line]), flush=True)
    return right


def standalone(code, n_ranks: int, group_timeout_s: float) -> bool:
    """Without a launcher: every fault on ranks of its own."""
    if n_ranks < 2:
        raise CommlabError(f"the find-the-hang lab needs at least 2 ranks, got --ranks {n_ranks}")
    find, right = code.function("find_the_hang"), True
    kinds = [k for k in hang.KINDS if k != "size" or n_ranks >= 4]
    if len(kinds) < len(hang.KINDS):
        print(f"size: skipped on {n_ranks} ranks (gloo aborts a rank other than the faulty one, which then leaves no "
              "record; it takes 4 ranks for the records to show the size)")
    for fault in faults_for(n_ranks, kinds):
        run = hang.run_fault(fault, group_timeout_s=group_timeout_s)
        ok, line = judged(run, find)
        right = right and ok
        print("\n".join(hang.run_lines(run) + [line]), flush=True)
    return right


def main(argv=None) -> int:
    args = parse_args(argv)
    code = script.choose_code("find_the_hang", args)
    if not args.group_timeout > 0:
        print(f"find_the_hang.py: error: --group-timeout must be a number of seconds > 0, got {args.group_timeout}",
              file=sys.stderr)
        return 2
    problems = script.check_learner(code)     # without a launcher: the lab's whole check, two live faults included
    if problems:
        return script.learner_failed(problems)
    ok, line = unseen_line(code)
    if script.prints_here():
        print(line, flush=True)
    try:
        if launch.is_launched():
            right = launch.main(worker, DEFAULT_RANKS, code, args.group_timeout, backend="gloo", timeout_s=args.timeout)
        else:
            right = standalone(code, script.ranks_to_start(args.ranks, DEFAULT_RANKS), args.group_timeout)
    except CommlabError as exc:
        print(f"find_the_hang.py: error: {exc}", file=sys.stderr)
        return 2
    return 0 if ok and right else 1


if __name__ == "__main__":
    sys.exit(main())
