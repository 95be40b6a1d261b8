"""Figures a GPU session measured and recorded in ``benchmarks/README.md``, read back for the chapters.

A chapter running on a CPU-only machine cannot measure a GPU; it can quote what a GPU session measured, with
its date and device, as long as the number comes from the record rather than being typed again. The
"## GPU: ..." section of the repository's ``benchmarks/README.md`` is that record (``gpu_session.sh`` and
``nccl_stream_order.py`` printed it); :func:`gpu_session` reads the lines the chapters quote:

* ``host-to-device, pinned: 55.2 GB/s at 256 MiB (86% of PCIe 5.0 x16, ...)`` and the pageable line (ch 01);
* the four lines of ``nccl_stream_order.py`` (ch 03): when ``all_reduce(async_op=True)``, ``work.wait()`` and
  ``torch.cuda.synchronize()`` returned, and how long the queued GPU work took.

Pure standard library. A record that lacks a line raises CommlabError naming it, so a chapter never prints a
number that is not there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from commlab.errors import CommlabError

README = Path("benchmarks") / "README.md"
_SECTION = re.compile(r"^## GPU: (?P<device>.+?), measured (?P<date>\d{4}-\d{2}-\d{2})\s*$", re.M)
_FIGURES = {
    "h2d_pinned_GBps": r"host-to-device, pinned:\s+([\d.]+) GB/s at 256 MiB",
    "h2d_pinned_share": r"host-to-device, pinned:.*?\((\d+)% of PCIe",
    "h2d_pageable_peak_GBps": r"host-to-device, pageable:\s+([\d.]+) GB/s peak",
    "h2d_pageable_256MiB_GBps": r"host-to-device, pageable:.*?([\d.]+) GB/s at 256 MiB",
    "async_return_us": r"dist\.all_reduce\(async_op=True\) returned after\s+([\d.]+) us",
    "wait_return_us": r"work\.wait\(\) returned after\s+([\d.]+) us",
    "synchronize_return_us": r"torch\.cuda\.synchronize\(\) returned after\s+([\d.]+) us",
    "gpu_work_us": r"GPU time of the queued work \(CUDA events\):\s+([\d.]+) us",
}


@dataclass(frozen=True)
class GpuSession:
    """The recorded session: its device line, its date, and each figure by name (see ``_FIGURES``)."""

    device: str
    date: str
    figures: dict

    def __getitem__(self, name: str) -> float:
        if name not in self.figures:
            raise CommlabError(f"no recorded figure {name!r}; recorded: {', '.join(sorted(self.figures))}")
        return self.figures[name]


def parse_gpu_session(text: str) -> GpuSession:
    """The GPU section of a benchmarks README, as a :class:`GpuSession`.

    >>> parse_gpu_session("## GPU: one H200, measured 2026-12-01\\nwork.wait() returned after  12.3 us (host)\\n"
    ...                   "## Other").figures
    {'wait_return_us': 12.3}
    """
    found = _SECTION.search(text)
    if found is None:
        raise CommlabError("no '## GPU: <device>, measured <YYYY-MM-DD>' section in the benchmarks record")
    end = text.find("\n## ", found.end())
    section = text[found.end(): end if end >= 0 else len(text)]
    figures = {}
    for name, pattern in _FIGURES.items():
        match = re.search(pattern, section)
        if match:
            figures[name] = float(match.group(1))
    return GpuSession(found.group("device"), found.group("date"), figures)


def gpu_session(root: str | Path | None = None) -> GpuSession:
    """Read ``benchmarks/README.md`` of the repository at ``root`` (default: the one holding book.toml above
    the current directory, as the chapters run)."""
    if root is None:
        from commlab.book import find_root

        root = find_root()
    path = Path(root) / README
    if not path.is_file():
        raise CommlabError(f"no benchmarks record at {path}: the recorded GPU figures live in the commlab "
                           "repository, next to the chapters")
    return parse_gpu_session(path.read_text(encoding="utf-8"))
