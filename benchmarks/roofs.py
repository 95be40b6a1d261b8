"""Print this machine's measured copy roofs: CPU memory copy, and on a GPU the PCIe and device copies.

    python benchmarks/roofs.py [--quick]

The CPU copy is the local roof a gloo collective's busbw is held against (gloo moves bytes through memory);
host-to-device and device-to-host copies are held against the PCIe slot NVML reports, with the fraction.
Every number printed is measured here; what cannot run is printed as skipped, with the reason.
"""
from __future__ import annotations

import argparse
import json
import sys

from commlab.measure import QUICK, SweepConfig, cpu_copy_sweep, gpu_copy_sweeps, nccl_allreduce
from commlab.measure.results import CopySweep, Skipped
from commlab.output import write_atomic


def _table(sweep) -> list[str]:
    if isinstance(sweep, Skipped):
        return [sweep.to_text()]
    lines = [sweep.to_text()]
    for p in sweep.points:
        ratio = f"  {p.bw_GBps / sweep.roof_GBps:5.0%} of {sweep.roof_name}" if sweep.roof_GBps else ""
        lines.append(f"    {p.nbytes / 2**20:8g} MiB  {p.t_s * 1e3:9.3f} ms  {p.bw_GBps:8.2f} GB/s{ratio}")
    return lines


def figures(sweeps) -> dict[str, float]:
    """The host-to-device figures chapter 01 quotes (commlab.measure.recorded), from the sweeps measured here."""
    by_what = {s.what: s for s in sweeps if isinstance(s, CopySweep)}
    out: dict[str, float] = {}
    pinned, pageable = by_what.get("host-to-device, pinned"), by_what.get("host-to-device, pageable")
    if pinned is not None:
        out["h2d_pinned_GBps"] = round(pinned.largest.bw_GBps, 1)
        if pinned.roof_GBps:
            out["h2d_pinned_share"] = round(100 * pinned.largest.bw_GBps / pinned.roof_GBps)
    if pageable is not None:
        out["h2d_pageable_peak_GBps"] = round(pageable.peak_GBps, 1)
        out["h2d_pageable_256MiB_GBps"] = round(pageable.largest.bw_GBps, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small sweep `commlab doctor` uses")
    parser.add_argument("--json", default=None, metavar="FILE",
                        help="also write the figures the chapters quote to FILE (gpu_session.sh records them)")
    args = parser.parse_args(argv)
    config = QUICK if args.quick else SweepConfig()
    sweeps = [cpu_copy_sweep(config, "numpy"), cpu_copy_sweep(config, "torch")] + gpu_copy_sweeps(config)
    for sweep in sweeps:
        print("\n".join(_table(sweep)))
    if args.json:
        write_atomic(args.json, json.dumps({"figures": figures(sweeps)}, indent=1) + "\n")
    numpy_big, torch_big = sweeps[0].largest.bw_GBps, sweeps[1].largest.bw_GBps
    print(f"torch / numpy copy at {sweeps[0].largest.nbytes / 2**20:g} MiB: {torch_big / numpy_big:.2f}x")
    result = nccl_allreduce()
    print(result.to_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
