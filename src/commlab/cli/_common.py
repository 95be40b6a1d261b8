"""Argument helpers shared by the subcommands: parsing with commlab's own units and messages."""
from __future__ import annotations

import json
import sys

from commlab.errors import CommlabError, check_n_ranks
from commlab.units import parse_nbytes


def ranks_arg(text: str) -> int:
    """--ranks N: a whole number >= 1, refused with a line naming the value."""
    try:
        value = int(text)
    except ValueError:
        raise CommlabError(f"--ranks must be a whole number >= 1, got {text!r}") from None
    return check_n_ranks(value)


def nbytes_arg(text: str) -> int:
    """A size such as 64M, 1.5GiB, 14GB; CommlabError otherwise."""
    return parse_nbytes(text)


def read_input(path: str, what: str, keep_line_ends: bool = False) -> str:
    """The text of ``path``, or of standard input for "-"; a file that cannot be read is a CommlabError naming it.

    ``keep_line_ends`` keeps Windows line ends as they are (the nccl-tests reader reports them).
    """
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8", errors="replace", newline="" if keep_line_ends else None) as fh:
            return fh.read()
    except OSError as exc:
        raise CommlabError(f"cannot read {what} {path!r}: {exc.strerror or exc}") from None


def print_json(obj) -> None:
    """``obj`` as strict JSON on stdout: a NaN or an infinity is a bug to find, not a token to print."""
    json.dump(obj, sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def machine_arg(desc: str | None):
    """``--machine DESC`` of ``nccl-tests`` and ``scorecard``: a :class:`~commlab.tuner.machine.Machine`, None
    without one; ``help`` lists the fields, the GPUs and the network kinds (as a one-line error)."""
    if desc is None:
        return None
    from commlab.tuner.machine import FIELDS, GPUS, parse_machine
    from commlab.tuner.networks import NET_TYPES

    if desc.strip().lower() == "help":
        raise CommlabError(f"--machine takes field=value pairs: {', '.join(FIELDS)} "
                           f"(e.g. gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=ib); gpu is one "
                           f"of {', '.join(GPUS)}; net is one of {', '.join(NET_TYPES)}")
    return parse_machine(desc)


def say_wrote(path, json_on_stdout: bool = False) -> None:
    """The line every command prints for each file it writes: ``wrote PATH``. On stderr when the command's
    stdout is JSON (``--json``), so that stdout stays one JSON document."""
    print(f"wrote {path}", file=sys.stderr if json_on_stdout else sys.stdout, flush=True)
