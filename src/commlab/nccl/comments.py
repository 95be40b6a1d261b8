"""Read the ``#`` lines of an nccl-tests log: fixture metadata, the preamble, the device list, the footer.

The fixtures under ``commlab/data/nccl/nccl-tests`` open with ``# source:``, ``# command:``, ``# nranks:``,
``# collective:``, ``# hardware:`` and ``# format:`` lines that are not nccl-tests output; they are read as
metadata. Everything else follows nccl-tests' ``printf`` formats (``src/common.cu``, ``src/util.cu``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Metadata keys of the fixtures' leading comments.
METADATA_KEYS = ("source", "command", "nranks", "collective", "hardware", "format")
_METADATA = re.compile(r"^#\s*(" + "|".join(METADATA_KEYS) + r"):\s*(.*)$")
_PREAMBLE_FIELDS = (
    ("n_threads", r"nThread\s+(\d+)", int), ("n_gpus", r"nGpus\s+(\d+)", int),
    ("min_bytes", r"minBytes\s+(\d+)", int), ("max_bytes", r"maxBytes\s+(\d+)", int),
    ("step", r"step:\s*(\S+)", str), ("warmup_iters", r"warmup iters:\s*(\d+)", int),
    ("iters", r"(?<!warmup )(?<!agg )\biters:\s*(\d+)", int), ("agg_iters", r"agg iters:\s*(\d+)", int),
    ("validation", r"validation:\s*(\d+)", int), ("graph", r"graph:\s*(\d+)", int),
    ("unalign", r"unalign:\s*(\d+)", int),
)
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\b")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([-+0-9.eE]+|nan|inf)")


@dataclass
class Comments:
    """What the ``#`` lines said."""

    metadata: dict[str, str] = field(default_factory=dict)
    preamble: dict = field(default_factory=dict)
    ranks: list[int] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw_GBps: float | None = None
    texts: list[str] = field(default_factory=list)


def parse_preamble(text: str) -> dict:
    """The fields of a ``# nThread ...`` line, keyed as :func:`commlab.nccl.format.format_preamble` takes them.

    >>> parse_preamble("# nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20")
    {'n_threads': 1, 'n_gpus': 2, 'min_bytes': 8, 'max_bytes': 64, 'step': '2(factor)', 'warmup_iters': 5, 'iters': 20}
    """
    out = {}
    for key, pattern, kind in _PREAMBLE_FIELDS:
        match = re.search(pattern, text)
        if match:
            out[key] = kind(match.group(1))
    return out


def read_comment(text: str, into: Comments) -> None:
    """Record what one ``#`` line says in ``into``."""
    into.texts.append(text)
    match = _METADATA.match(text)
    if match:
        into.metadata.setdefault(match.group(1), match.group(2).strip())
        return
    if re.match(r"^#\s*nThread\s", text):
        into.preamble.update(parse_preamble(text))
        return
    match = _RANK.match(text)
    if match:
        into.ranks.append(int(match.group(1)))
        into.devices.append(text.lstrip("#").strip())
        return
    match = _OOB.match(text)
    if match:
        into.out_of_bounds = int(match.group(1))
        return
    match = _AVG.match(text)
    if match:
        into.avg_busbw_GBps = float(match.group(1))
