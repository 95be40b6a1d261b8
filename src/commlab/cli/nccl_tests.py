"""``commlab nccl-tests LOG... [--ranks N] [--link NAME] [--machine DESC [--calibrate-from SMALL_LOG]] [--plot FILE]
[--json]``: read nccl-tests logs and say what they show.

Prints the collective, N, the peak busbw, the size where busbw first reaches half its peak, the fitted alpha
and beta, the average bus bandwidth, the protocol-aware model's regimes (each alpha and bandwidth, where it
switches, its median and 90th-percentile error) and, with ``--link``, the peak as a percentage of the link's
unidirectional bandwidth with a verdict; ``--machine`` adds the time NCCL's model predicts for the machine
described (e.g. gpu=h100,gpus_per_node=8), with the tuner of the NCCL version the log names (or the one its
format implies, which it says), and the error band measured on held-out runs of its kind; ``--calibrate-from
SMALL_LOG`` fits what the NICs deliver, the network hop and the launch floor on a small run of the same cluster
first (never on LOG itself). ``--plot FILE`` (.png, .svg, .pdf) draws every LOG given, overlaid,
with the link's roof. ``LOG`` may be ``-`` for standard input.
"""
from __future__ import annotations

import argparse
import json
import math
import re

from commlab.cli._common import machine_arg, read_input
from commlab.errors import CommlabError


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "nccl-tests", help="read nccl-tests logs: peak busbw, half-peak size, protocol regimes, verdict, plot",
        description=__doc__.split("\n\n")[1].replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logs", nargs="+", metavar="LOG", help="nccl-tests output file(s), or - for standard input")
    p.add_argument("--ranks", type=int, default=None, metavar="N",
                   help="number of ranks, when the log has no '# Rank' lines")
    p.add_argument("--link", default=None, metavar="NAME",
                   help="hold the peak against this link (commlab.hardware names: nvlink4, pcie5, ib-ndr, ...)")
    p.add_argument("--machine", default=None, metavar="DESC",
                   help="predict each row's time from this machine (gpu=h100,gpus_per_node=8,...); "
                        "'--machine help' lists the fields")
    p.add_argument("--calibrate-from", default=None, metavar="SMALL_LOG", dest="calibrate_from",
                   help="calibrate the prediction on a 1- or 2-node run of the same cluster (needs --machine)")
    p.add_argument("--plot", default=None, metavar="FILE", help="draw the log(s) with the link's roof into FILE")
    p.add_argument("--json", action="store_true", help="print JSON instead of text (a list for several LOGs)")
    return p


def _num(x):
    """Strict JSON: NaN and infinities become null."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _load(path: str, args):
    """Everything the report of one LOG needs; CommlabError for anything the user can fix."""
    from commlab.nccl.parse import parse_log
    from commlab.nccl.summary import summarize, verdict
    from commlab.nccl.debuglog import read_tuning

    text = read_input(path, "LOG", keep_line_ends=True)
    log = parse_log(text, n_ranks=args.ranks)
    if not log.rows:
        raise CommlabError(f"no nccl-tests table rows in LOG {path!r}")
    if log.n_ranks is None:
        hint = next((n for n in log.notes if "number of ranks" in n), "")
        raise CommlabError(f"{hint or 'the number of ranks is not in the log'}; pass --ranks N")
    summary = summarize(log)
    judged = verdict(summary.peak_busbw_GBps, args.link) if args.link is not None else None
    from commlab.scorecard.log_model import model_report

    from commlab.scorecard.log_model import machine_for_log

    machine, forced = machine_for_log(args.machine_obj, text)
    if forced:
        log.notes.append(forced)
    report = model_report(log, read_tuning(text), machine, text, args.small_run)
    return {"path": path, "log": log, "summary": summary, "verdict": judged, "model": report}


def _as_json(item) -> dict:
    log, summary, judged, model = item["log"], item["summary"], item["verdict"], item["model"]
    rows = []
    for row, extra in zip(log.rows, model.rows):
        obj = row.to_json()
        obj.update({k: (_num(v) if isinstance(v, float) else v) for k, v in extra.items()})
        rows.append(obj)
    return {
        "collective": log.collective, "n_ranks": log.n_ranks, "format": log.format,
        "bandwidth_rule": log.bandwidth_rule, "peak_busbw_GBps": summary.peak_busbw_GBps,
        "peak_size_bytes": summary.peak_size_bytes, "half_peak_size_bytes": summary.half_peak_size_bytes,
        "alpha_s": summary.alpha_s, "beta_s_per_byte": summary.beta_s_per_byte,
        "avg_busbw_GBps": summary.avg_busbw_GBps, "out_of_bounds": log.out_of_bounds,
        "verdict": judged.to_json() if judged is not None else None,
        "model": model.model_json(), "prediction": model.prediction_json(),
        "busbw_mismatch_lines": log.busbw_mismatches,
        "unreadable": [{"line": n, "text": t} for n, t in log.unreadable],
        "notes": log.notes, "rows": rows,
    }


_BANDWIDTH = re.compile(r"\bB = (?P<value>[-+0-9.eE]+) GB/s")
_ALPHA = re.compile(r"\balpha = (?P<value>[-+0-9.eE]+) us")


def even_numbers(line: str) -> str:
    """A model's line with its bandwidths and latencies in the units that fit each, three significant digits
    (``B = 0.04974 GB/s`` reads ``B = 49.7 MB/s``, ``alpha = 16.01 us`` reads ``alpha = 16 us``).

    >>> even_numbers("LL from 0 up to 165 B: alpha = 12.7 us, B = 0.04974 GB/s (5 rows)")
    'LL from 0 up to 165 B: alpha = 12.7 us, B = 49.7 MB/s (5 rows)'
    """
    from commlab.units import format_bandwidth, format_time

    line = _BANDWIDTH.sub(lambda m: f"B = {format_bandwidth(float(m['value']) * 1e9)}", line)
    return _ALPHA.sub(lambda m: f"alpha = {format_time(float(m['value']) * 1e-6)}", line)


def _as_text(item) -> list[str]:
    from commlab.units import format_nbytes, format_time

    log, summary, judged = item["log"], item["summary"], item["verdict"]
    out = [
        f"collective      {log.collective}" + (f" (or {', '.join(log.collective_candidates[1:])})"
                                               if log.collective_candidates[1:] and log.collective
                                               == log.collective_candidates[0] else ""),
        f"ranks           {log.n_ranks}",
        f"format          {log.format} ({len(log.rows)} rows, {len(log.unreadable)} unreadable)",
        f"peak busbw      {summary.peak_busbw_GBps:.2f} GB/s at {format_nbytes(summary.peak_size_bytes, binary=True)}",
        f"half peak from  {format_nbytes(summary.half_peak_size_bytes, binary=True)}",
    ]
    if summary.alpha_s is not None:
        bw = 1.0 / summary.beta_s_per_byte / 1e9 if summary.beta_s_per_byte > 0 else float("inf")
        out.append(f"alpha           {format_time(summary.alpha_s)}")
        out.append(f"beta            {summary.beta_s_per_byte:.4g} s/byte (1/beta = {bw:.1f} GB/s of algbw)")
    out.append(f"avg busbw       {summary.avg_busbw_GBps:g} GB/s")  # as nccl-tests prints it
    out += [even_numbers(line) for line in item["model"].text_lines()]
    if judged is not None:
        out.append(f"link            {judged.link}: {judged.unidir_GBps:g} GB/s one way; peak is "
                   f"{judged.percent:.1f} % -> {judged.verdict} ({judged.explanation})")
    out += [f"unreadable      line {n}: {t}" for n, t in log.unreadable]
    out += [f"note            {n}" for n in log.notes if not n.startswith("line ")]
    return out


def _plot(items, args) -> None:
    import numpy as np

    from commlab.hardware import link as find_link
    from commlab.viz.nccl_tests_plot import LogCurve, plot_nccl_tests, save_figure

    curves, roof = [], find_link(args.link) if args.link else _default_roof(items)
    for item in items:
        log, model = item["log"], item["model"]
        rows = [r for r in log.rows if r.size_bytes > 0]
        if not rows:
            raise CommlabError(f"LOG {item['path']!r} has no rows with size > 0 to draw")
        s = np.array([r.size_bytes for r in rows], dtype=float)
        fit = model.fit
        curves.append(LogCurve(_label(item["path"], log), s, np.array([r.oop.busbw_GBps for r in rows]),
                               np.array([r.oop.time_us for r in rows]),
                               None if fit is None else fit.time_s(s) * 1e6,
                               () if fit is None else fit.boundaries_nbytes))
    save_figure(plot_nccl_tests(curves, roof=roof), args.plot)


def _label(path: str, log) -> str:
    from pathlib import Path

    name = "stdin" if path == "-" else Path(path).stem
    return f"{name} ({log.n_ranks} ranks)"


def _default_roof(items):
    """A shipped log's own roof (roofs.json) when every LOG drawn is shipped and they share it."""
    from pathlib import Path

    from commlab.hardware import link as find_link
    from commlab.nccl.examples import fixture_link, nccl_tests_logs

    shipped = {p.name for p in nccl_tests_logs()}
    names = {Path(i["path"]).name for i in items}
    if not names <= shipped:
        return None
    links = {fixture_link(n[:2]) for n in names}
    name = links.pop() if len(links) == 1 else None
    return find_link(name) if name is not None else None


def run(args) -> int:
    if args.link is not None:
        from commlab.hardware import link

        link(args.link)  # an unknown name fails before the file is read
    args.machine_obj = machine_arg(args.machine)
    args.small_run = None
    if getattr(args, "calibrate_from", None) is not None:
        from commlab.scorecard.calibration import read_small_run

        args.small_run = read_small_run(args.calibrate_from, args.machine_obj)
    if args.plot is not None:
        from commlab.viz.nccl_tests_plot import FORMATS

        if args.plot.rsplit(".", 1)[-1].lower() not in FORMATS:
            raise CommlabError(f"--plot FILE must end in one of {', '.join('.' + f for f in FORMATS)}, got "
                               f"{args.plot!r}")
    from commlab.cli._common import say_wrote

    items = [_load(path, args) for path in args.logs]
    if args.plot is not None:
        _plot(items, args)
        if args.json:
            say_wrote(args.plot, json_on_stdout=True)
    if args.json:
        objs = [_as_json(i) for i in items]
        print(json.dumps(objs[0] if len(objs) == 1 else objs, indent=2, allow_nan=False))
    else:
        blocks = [(["== " + i["path"]] if len(items) > 1 else []) + _as_text(i) for i in items]
        print("\n\n".join("\n".join(b) for b in blocks))
        if args.plot is not None:
            say_wrote(args.plot)
    return 0
