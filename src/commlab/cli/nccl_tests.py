"""``commlab nccl-tests LOG [--ranks N] [--link NAME] [--json]``: read an nccl-tests log and say what it shows.

Prints the collective, N, the peak busbw, the size where busbw first reaches half its peak, the fitted alpha
and beta, the average bus bandwidth and, with ``--link``, the peak as a percentage of the link's
unidirectional bandwidth with a verdict. ``LOG`` may be ``-`` for standard input.
"""
from __future__ import annotations

import argparse
import json

from commlab.cli._common import read_input
from commlab.errors import CommlabError


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "nccl-tests", help="read an nccl-tests log: peak busbw, half-peak size, alpha-beta, verdict",
        description=__doc__.split("\n\n")[1].replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", metavar="LOG", help="nccl-tests output file, or - for standard input")
    p.add_argument("--ranks", type=int, default=None, metavar="N",
                   help="number of ranks, when the log has no '# Rank' lines")
    p.add_argument("--link", default=None, metavar="NAME",
                   help="hold the peak against this link (commlab.hardware names: nvlink4, pcie5, ib-ndr, ...)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return p


def _load(args):
    """(log, summary, verdict or None) for the arguments; CommlabError for anything the user can fix."""
    from commlab.nccl.parse import parse_log
    from commlab.nccl.summary import summarize, verdict

    if args.link is not None:
        from commlab.hardware import link

        link(args.link)  # an unknown name fails before the file is read
    log = parse_log(read_input(args.log, "LOG", keep_line_ends=True), n_ranks=args.ranks)
    if not log.rows:
        raise CommlabError(f"no nccl-tests table rows in LOG {args.log!r}")
    if log.n_ranks is None:
        hint = next((n for n in log.notes if "number of ranks" in n), "")
        raise CommlabError(f"{hint or 'the number of ranks is not in the log'}; pass --ranks N")
    summary = summarize(log)
    judged = verdict(summary.peak_busbw_GBps, args.link) if args.link is not None else None
    return log, summary, judged


def _as_json(log, summary, judged) -> dict:
    return {
        "collective": log.collective, "n_ranks": log.n_ranks, "format": log.format,
        "bandwidth_rule": log.bandwidth_rule, "peak_busbw_GBps": summary.peak_busbw_GBps,
        "peak_size_bytes": summary.peak_size_bytes, "half_peak_size_bytes": summary.half_peak_size_bytes,
        "alpha_s": summary.alpha_s, "beta_s_per_byte": summary.beta_s_per_byte,
        "avg_busbw_GBps": summary.avg_busbw_GBps, "out_of_bounds": log.out_of_bounds,
        "verdict": judged.to_json() if judged is not None else None,
        "busbw_mismatch_lines": log.busbw_mismatches,
        "unreadable": [{"line": n, "text": t} for n, t in log.unreadable],
        "notes": log.notes, "rows": [r.to_json() for r in log.rows],
    }


def _as_text(log, summary, judged) -> list[str]:
    from commlab.units import format_nbytes, format_time

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
    out.append(f"avg busbw       {summary.avg_busbw_GBps:g} GB/s")
    if judged is not None:
        out.append(f"link            {judged.link}: {judged.unidir_GBps:g} GB/s one way; peak is "
                   f"{judged.percent:.1f} % -> {judged.verdict} ({judged.explanation})")
    out += [f"unreadable      line {n}: {t}" for n, t in log.unreadable]
    out += [f"note            {n}" for n in log.notes if not n.startswith("line ")]
    return out


def run(args) -> int:
    log, summary, judged = _load(args)
    if args.json:
        print(json.dumps(_as_json(log, summary, judged), indent=2))
    else:
        print("\n".join(_as_text(log, summary, judged)))
    return 0
