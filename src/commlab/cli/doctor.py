"""``commlab doctor [--json] [--measure/--no-measure]``: what this machine offers the book.

Python, torch and its backends (gloo, NCCL), CUDA and the GPUs, NVML (driver version or why not), CPUs and
the OS, then the measured roofs: CPU memory copy, and pinned host-to-device copy on a GPU. Exits 0 on any
machine: what is missing is reported, not raised.
"""
from __future__ import annotations

import argparse


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "doctor", help="Python, torch, backends, GPUs, NVML and the measured roofs of this machine",
        description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--measure", action=argparse.BooleanOptionalAction, default=True,
                   help="measure the copy roofs (a second or two; default: yes)")
    return p


def run(args) -> int:
    from commlab.measure import doctor_report

    report = doctor_report(measure=args.measure)
    print(report.to_json_text() if args.json else report.to_text())
    return 0
