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


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")
