"""Figures a GPU session measured, read back for the chapters from the data file the session wrote.

A chapter running on a CPU-only machine cannot measure a GPU; it can quote what a GPU session measured, with
its date and device, as long as the number comes from the record rather than being typed again. The record is
``benchmarks/gpu_session.json`` (``{"device", "date", "figures": {name: value}}``): ``bash
benchmarks/gpu_session.sh`` writes it, from what ``benchmarks/roofs.py --json`` and
``benchmarks/nccl_stream_order.py --json`` measured (``python -m commlab.measure.recorded OUT PART...`` joins
the parts). :func:`gpu_session` reads the figures the chapters quote (:data:`FIGURES`):

* host-to-device copies, pinned at 256 MiB and its share of PCIe, pageable at its peak and at 256 MiB (ch 01);
* when ``all_reduce(async_op=True)``, ``work.wait()`` and ``torch.cuda.synchronize()`` returned, and how long the
  queued GPU work took (ch 03).

Pure standard library. A record that lacks a figure raises CommlabError naming it, so a chapter never prints a
number that is not there.
"""
from __future__ import annotations

import datetime
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from commlab.errors import CommlabError

RECORD = Path("benchmarks") / "gpu_session.json"
#: the figures a record may hold, and what each is
FIGURES = {
    "h2d_pinned_GBps": "host-to-device copy from pinned memory at 256 MiB, GB/s",
    "h2d_pinned_share": "that copy as a percentage of the PCIe slot's bandwidth per direction",
    "h2d_pageable_peak_GBps": "host-to-device copy from pageable memory at its best size, GB/s",
    "h2d_pageable_256MiB_GBps": "host-to-device copy from pageable memory at 256 MiB, GB/s",
    "async_return_us": "dist.all_reduce(async_op=True) returned to Python after, us",
    "wait_return_us": "work.wait() returned after, us",
    "synchronize_return_us": "torch.cuda.synchronize() returned after, us",
    "gpu_work_us": "GPU time of the queued work (CUDA events), us",
}


@dataclass(frozen=True)
class GpuSession:
    """The recorded session: its device line, its date, and each figure by name (see :data:`FIGURES`)."""

    device: str
    date: str
    figures: dict

    def __getitem__(self, name: str) -> float:
        if name not in self.figures:
            raise CommlabError(f"no recorded figure {name!r}; recorded: {', '.join(sorted(self.figures))}")
        return self.figures[name]


def read_gpu_session(data: Mapping) -> GpuSession:
    """A :class:`GpuSession` from a record's JSON object, checked.

    >>> read_gpu_session({"device": "one H200", "date": "2026-12-01", "figures": {"wait_return_us": 12.3}}).figures
    {'wait_return_us': 12.3}
    """
    if not isinstance(data, Mapping) or not {"device", "date", "figures"} <= set(data):
        raise CommlabError("a GPU session record is a JSON object with device, date and figures")
    try:
        datetime.date.fromisoformat(str(data["date"]))
    except ValueError:
        raise CommlabError(f"the GPU session's date must be YYYY-MM-DD, got {data['date']!r}") from None
    figures = data["figures"]
    unknown = sorted(set(figures) - set(FIGURES)) if isinstance(figures, Mapping) else ["(not an object)"]
    if unknown:
        raise CommlabError(f"the GPU session record has unknown figures {unknown}; known: {', '.join(FIGURES)}")
    try:
        values = {name: float(value) for name, value in figures.items()}
    except (TypeError, ValueError):
        raise CommlabError(f"every figure of the GPU session must be a number, got {dict(figures)}") from None
    return GpuSession(str(data["device"]), str(data["date"]), values)


def gpu_session(root: str | Path | None = None) -> GpuSession:
    """Read ``benchmarks/gpu_session.json`` of the repository at ``root`` (default: the one holding book.toml
    above the current directory, as the chapters run)."""
    if root is None:
        from commlab.book import find_root

        root = find_root()
    path = Path(root) / RECORD
    if not path.is_file():
        raise CommlabError(f"no GPU session record at {path}: the recorded GPU figures live in the commlab "
                           "repository, next to the chapters")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise CommlabError(f"the GPU session record {path} is not JSON: {err}") from None
    return read_gpu_session(data)


def _device() -> str:
    try:
        import torch

        n = torch.cuda.device_count()
        name = torch.cuda.get_device_name(0) if n else "no CUDA GPU"
    except Exception as err:                       # torch missing or no driver: say so in the record
        return f"unknown ({type(err).__name__})"
    return f"one {name}" if n == 1 else f"{n} x {name}"


def main(argv: list[str] | None = None) -> int:
    """``python -m commlab.measure.recorded OUT PART...``: join the parts' figures into the record OUT, with this
    machine's GPU and today's date (UTC). A part that is missing (its step skipped or failed) is named."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print("usage: python -m commlab.measure.recorded OUT PART.json [PART.json ...]", file=sys.stderr)
        return 2
    figures: dict = {}
    for part in args[1:]:
        path = Path(part)
        if not path.is_file():
            print(f"recorded: no {part} (its step skipped or failed): its figures are left out", file=sys.stderr)
            continue
        figures.update(json.loads(path.read_text(encoding="utf-8")).get("figures", {}))
    record = {"device": _device(), "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
              "figures": figures}
    read_gpu_session(record)                        # the same checks a chapter's read makes
    from commlab.output import write_atomic

    write_atomic(args[0], json.dumps(record, indent=1) + "\n")
    print(f"recorded: {len(figures)} figures of {record['device']} in {args[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
