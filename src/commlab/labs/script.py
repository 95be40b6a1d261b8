"""The one ``main`` the lab scripts in labs/scripts share.

Whose code: a lab script runs the learner's functions from ``labs/mine/<lab>.py`` when that file exists (the
notebook writes it, :mod:`commlab.labs.mine`), else the reference solution; its first line of output says
which (:func:`commlab.labs.code.choose`; ``--reference`` and ``COMMLAB_LAB_SOLUTIONS=1`` force the
reference). With the learner's code it first runs the lab's checks (:mod:`commlab.labs.registry`, the
notebook's own): a wrong function stops the script with the notebook's sentence and exit status 1. Under a
launcher the checks that start ranks of their own are skipped (the ranks are torchrun's); the worker then
checks what it can inside the group.

Why it exists: every lab script runs the same worker two ways, as ``python script.py --ranks 4`` (it starts
the ranks itself) and under ``torchrun`` (every process is one rank), and each of the eight scripts used to end
with its own copy of the code around :func:`commlab.launch.main`: the ``--ranks``/``--backend``/``--timeout``
options, the launch, rank 0's value picked out of a list without a launcher but taken as is under torchrun,
a bad argument turned into one line and exit status 2, a report printed by rank 0, and the pass/fail exit
status. Those rules now live here once; a script keeps only what is its own: its arguments and their checks
(``prepare``), its worker, and how it reports or judges the result. A script ends with::

    def main(argv=None) -> int:
        return script.run_script("ring_vs_tree.py", parse_args(argv), worker, prepare, lab="ring_vs_tree",
                                 default_n_ranks=DEFAULT_RANKS, report=report)

Importing this module does not import torch.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from commlab import launch
from commlab.errors import CommlabError

N_RANKS_VAR = "COMMLAB_N_RANKS"


def add_launch_options(parser: argparse.ArgumentParser, default_n_ranks: int, default_timeout_s: float) -> None:
    """Add ``--ranks``, ``--backend``, ``--timeout`` and ``--reference``, the options :func:`run_script` reads.

    ``--backend`` is checked by commlab.launch (a bad one is a one-line error, exit status 2, like any other).
    """
    parser.add_argument("--ranks", type=int, default=None,
                        help=f"ranks to start without a launcher (default ${N_RANKS_VAR} or {default_n_ranks})")
    parser.add_argument("--backend", default="auto", help="auto, gloo or nccl (default auto)")
    parser.add_argument("--timeout", type=float, default=default_timeout_s,
                        help=f"limit for the whole run in seconds (default {default_timeout_s:g})")
    parser.add_argument("--reference", action="store_true",
                        help="run the reference solution even when labs/mine/<lab>.py holds your code")


def ranks_to_start(ranks: int | None, default_n_ranks: int) -> int:
    """The ranks :func:`commlab.launch.main` starts without a launcher: ``--ranks``, else ``$COMMLAB_N_RANKS``,
    else ``default_n_ranks`` (for a script that needs a minimum before it launches)."""
    if ranks is not None:
        return ranks
    text = os.environ.get(N_RANKS_VAR)
    if text is None:
        return default_n_ranks
    try:
        return int(text)
    except ValueError:
        raise CommlabError(f"environment variable {N_RANKS_VAR} must be a whole number, got {text!r}") from None


#: Under torchrun, a rank that does not print the learner's failing check waits this long before it exits 1, so
#: that torchrun, which terminates every rank as soon as one fails, does not kill the rank that prints it first.
QUIET_RANK_EXIT_DELAY_S = 3.0


def prints_here() -> bool:
    """True in the process that prints a script's notices: the script itself, or local rank 0 under torchrun."""
    return not launch.is_launched() or os.environ.get("LOCAL_RANK", "0").strip() == "0"


def learner_failed(problems: list[str]) -> int:
    """Say why the learner's code fails the lab's checks (once: local rank 0 under torchrun) and give exit status
    1. Under torchrun the other ranks wait :data:`QUIET_RANK_EXIT_DELAY_S` first: torchrun stops every rank when
    one exits, and must not stop the one that says why."""
    if prints_here():
        print("\n".join(["your code does not pass the lab's checks (the notebook says the same):"] + problems),
              flush=True)
    elif launch.is_launched():
        time.sleep(QUIET_RANK_EXIT_DELAY_S)
    return 1


def choose_code(lab: str, args: argparse.Namespace):
    """The code the script runs (commlab.labs.code.Code), announced in the first line of output."""
    from commlab.labs.code import choose

    code = choose(lab, reference=getattr(args, "reference", False))
    if prints_here():
        print(code.notice(), flush=True)
    return code


def check_learner(code) -> list[str]:
    """The lab's checks on the learner's functions, in the notebook's order, up to the first that fails:
    ['<lab>.<task>: <the check's sentence>'], or [] when all pass. Nothing for the reference; under a launcher,
    only the checks that start no ranks of their own (the worker checks the rest inside the group)."""
    from commlab.labs import registry

    if not code.mine:
        return []
    entry = registry.lab(code.lab)
    for task in entry.tasks:
        if task.ranks and launch.is_launched():
            continue
        result = registry.run_task(entry, task, code)
        if result.problem:
            return [f"{code.lab}.{result.task}: {result.problem}"]
    return []


def run_script(name: str, args: argparse.Namespace, worker: Callable, prepare: Callable[[argparse.Namespace], tuple],
               *, lab: str, default_n_ranks: int, report: Callable[[Any, Any], str] | None = None,
               check: Callable[[list], bool] | None = None) -> int:
    """Run a lab script's ``worker(rank, n_ranks, code, *prepare(args))`` either way it was started; its exit
    status. ``code`` (:class:`commlab.labs.code.Code`) gives the worker the functions to run: the learner's
    or the reference (announced first, and checked first when they are the learner's: exit status 1 with the
    check's sentence when one is wrong).

    ``prepare(args)`` checks the command line, does what must happen before any rank starts, and returns the
    worker's arguments. A :class:`CommlabError` from it or from the launch (a rank's, under torchrun) prints
    ``<name>: error: <message>`` on stderr and gives 2. Then ``report(value, code)`` is printed once, for rank 0's
    value (unless it is None): the first of the list without a launcher, under torchrun only in rank 0's
    process. ``check(values)`` decides 0 (passed) or 1: it sees every rank's value without a launcher and this
    rank's alone under torchrun, which fails the job when any rank exits 1. Without ``check`` the status is 0.
    """
    launched = launch.is_launched()
    code = choose_code(lab, args)
    try:
        worker_args = prepare(args)
        problems = check_learner(code)
        if problems:
            return learner_failed(problems)
        values = launch.main(worker, default_n_ranks, code, *worker_args, n_ranks=args.ranks, backend=args.backend,
                             timeout_s=args.timeout)
    except CommlabError as exc:  # a bad argument: one line, exit status 2, as the commlab CLI does
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    first = _rank_0_value(values, launched)
    if report is not None and first is not None:
        print(report(first, code))
    here = [values] if launched else values          # torchrun: launch.main returned this rank's value only
    return 0 if check is None or check(here) else 1


def _rank_0_value(values, launched: bool):
    """Rank 0's value: the first of the list without a launcher; under torchrun this process's own value when
    it is global rank 0 (torchrun's ``RANK``), else None."""
    if not launched:
        return values[0]
    return values if os.environ.get("RANK", "").strip() == "0" else None
