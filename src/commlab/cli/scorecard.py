"""``commlab scorecard [LOG ...] [--machine DESC] [--calibrate-from SMALL_LOG] [--json]``: hold both cost models
against real nccl-tests logs.

Per log: the rows used, the protocol-aware fitted model's median and 90th-percentile relative time error, the
predictive model's (NCCL's tuner, from the machine alone) median error over all sizes and in the bandwidth
regime (>= 64 MiB), the cluster model's (commlab cluster: NCCL's pick plus the fabric, on the log's cluster
preset) where the run fills whole nodes of one, and the machine description used. The measured time of a size
is the faster of its out-of-place and in-place timings; NCCL_ALGO / NCCL_PROTO the log sets restrict the
prediction. Without LOG: every log shipped with commlab, each with its described machine. --json adds, for
every row, its size, measured (and which column), fitted, predicted and cluster time, per log "cluster":
{preset, median_error, bw_regime_median_error, meets_goal}, and the log's repeat spread. The prediction replays the
tuner of the NCCL version each log names (the format's era where it names none, and it says so) and carries the
error band measured on held-out runs of its kind ("generation", "error_band" in "predicted"); --calibrate-from
SMALL_LOG calibrates it on a small run of the same cluster ("calibration"), never on that run itself. The last
lines give the predicted goals on the held-out runs, which no choice of the model was made on.
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

#: The text table's width: a terminal's 100 columns.
WIDTH = 100
NAME_WIDTH = 38
MISS = "!"


def _pct(value: float | None, goal: float | None = None, applies: bool = True) -> str:
    """``value`` as a percentage, with :data:`MISS` after it when it is over ``goal`` (where a goal applies)."""
    if value is None:
        return "-"
    missed = applies and goal is not None and value > goal
    return f"{100 * value:.1f}%{MISS if missed else ' '}"


def _row(log: dict, goals: dict) -> list[str]:
    """One log's line of numbers, then its machine (wrapped, indented) on the lines below."""
    fit, pred, clus = log.get("fitted") or {}, log.get("predicted") or {}, log.get("cluster") or {}
    fit_applies = fit.get("meets_goals") is not None
    name = log["log"].removesuffix(".txt")
    name = name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "~"
    cells = [_pct(fit.get("median_error"), goals["fit_median"], fit_applies),
             _pct(fit.get("p90_error"), goals["fit_p90"], fit_applies),
             _pct(pred.get("median_error"), goals["pred_median"]),
             _pct(pred.get("bw_regime_median_error"), goals["pred_bw"]),
             _pct(clus.get("median_error")), _pct(clus.get("bw_regime_median_error"), goals["cluster_bw"])]
    line = f"{name:<{NAME_WIDTH}s} {log['rows']:>4d} " + " ".join(f"{c:>8s}" for c in cells)
    machine = log.get("machine") or (f"({log['machine_note']})" if log.get("machine_note") else "-")
    if clus.get("preset"):
        machine += f"; cluster preset {clus['preset']}"
    return [line] + ["      " + part for part in _wrap_commas(machine, WIDTH - 6)]


def _wrap_commas(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width``, broken after a comma (a machine description has no spaces).

    >>> _wrap_commas("gpu=h100,gpus_per_node=8,nvlink=4", 20)
    ['gpu=h100,', 'gpus_per_node=8,', 'nvlink=4']
    """
    lines: list[str] = []
    for piece in textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False) or [""]:
        current = ""
        for token in piece.replace(",", ",\0").split("\0"):
            if current and len(current) + len(token) > width:
                lines.append(current.rstrip())
                current = ""
            current += token
        lines.append(current)
    return lines


def format_table(logs: list[dict], goals: dict) -> list[str]:
    """The scorecard as text within :data:`WIDTH` columns: a line per log (its machine under it), a legend,
    and per goal how many logs met it and which missed. ``logs`` are the ``--json`` objects (same keys)."""
    head1 = f"{'':<{NAME_WIDTH}s} {'':>4s} {'fitted model':^17s} {'predicted (tuner)':^17s} {'cluster model':^17s}"
    head2 = (f"{'log':<{NAME_WIDTH}s} {'rows':>4s} " + " ".join(f"{h:>8s}" for h in
                                                               ("median", "p90", "median", ">=64MiB", "median",
                                                                ">=64MiB")))
    lines = [head1, head2, "-" * len(head2)]
    for log in logs:
        lines += _row(log, goals)
    lines += ["", *textwrap.wrap(
        "Relative time error of each model against the log (the faster of out-of-place and in-place per size). "
        "fitted model: the protocol-aware model fitted to the log itself. predicted: NCCL's tuner from the "
        "machine alone (the line under the log). cluster model: commlab cluster on the log's cluster preset, "
        f"where the run fills whole nodes of one. {MISS} after a number: it misses its goal; -: not scored "
        f"(fitted goals apply to logs of >= {goals['min_rows']} rows).", WIDTH), ""]

    def goal_line(title: str, key: str, getter) -> None:
        scored = [(log, ok) for log in logs if (ok := getter(log)) is not None]
        missed = [log["log"][:2] for log, ok in scored if not ok]
        lines.append(f"{title}: met on {sum(ok for _, ok in scored)} of {len(scored)}"
                     + (f"; missed by {', '.join(missed)}" if missed else ""))

    goal_line(f"fitted goals (median <= {goals['fit_median']:.0%}, p90 <= {goals['fit_p90']:.0%})", "fitted",
              lambda log: (log.get("fitted") or {}).get("meets_goals"))
    goal_line(f"predicted goals (median <= {goals['pred_median']:.0%}, >= 64 MiB <= {goals['pred_bw']:.0%})",
              "predicted", lambda log: (log.get("predicted") or {}).get("meets_goals"))
    goal_line(f"cluster goal (>= 64 MiB <= {goals['cluster_bw']:.0%})", "cluster",
              lambda log: (log.get("cluster") or {}).get("meets_goal"))
    return [part for line in lines for part in (textwrap.wrap(line, WIDTH, subsequent_indent="  ") or [""])]


def _goals() -> dict:
    from commlab.scorecard import scorecard as card

    return {"fit_median": card.FIT_MEDIAN_GOAL, "fit_p90": card.FIT_P90_GOAL, "min_rows": card.GOAL_MIN_ROWS,
            "pred_median": card.PREDICTED_MEDIAN_GOAL, "pred_bw": card.PREDICTED_BW_GOAL,
            "cluster_bw": card.CLUSTER_BW_GOAL}


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "scorecard", help="hold the fitted and the predictive cost models against nccl-tests logs",
        description=__doc__.split("\n\n")[1].replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logs", nargs="*", metavar="LOG", help="nccl-tests logs (default: every shipped log)")
    p.add_argument("--machine", default=None, metavar="DESC",
                   help="the machine of the LOGs given (gpu=h100,gpus_per_node=8,...): enables the prediction")
    p.add_argument("--calibrate-from", default=None, metavar="SMALL_LOG", dest="calibrate_from",
                   help="calibrate the predictions on a 1- or 2-node run of the same cluster (its machine: --machine, "
                        "or its own if it is a shipped log)")
    p.add_argument("--json", action="store_true", help="print JSON (with every row's times) instead of text")
    return p


def run(args) -> int:
    from commlab.cli._common import machine_arg
    from commlab.scorecard.scorecard import held_out_lines, scorecard
    from commlab.errors import CommlabError

    machine = machine_arg(args.machine)
    if machine is not None and not args.logs:
        raise CommlabError("--machine describes the LOGs given; the shipped logs carry their own machines")
    small_run = None
    if getattr(args, "calibrate_from", None) is not None:
        from pathlib import Path

        from commlab.scorecard.calibration import read_small_run
        from commlab.scorecard.scorecard import shipped_machine

        small_run = read_small_run(args.calibrate_from,
                                   machine if machine is not None else shipped_machine(Path(args.calibrate_from))[0])
    scores = scorecard(args.logs or None, machine, small_run)
    if args.logs:
        for sc in scores:
            if sc.fit is None and sc.predicted_median is None:
                raise CommlabError(f"LOG {sc.name!r}: {sc.fit_problem}")
            if sc.fit is None:   # the prediction is still scored; the fit's problem is said
                print(f"commlab scorecard: note: LOG {sc.name!r} is not fitted: {sc.fit_problem}", file=sys.stderr)
    if args.json:
        print(json.dumps({"logs": [sc.to_json() for sc in scores]}, indent=2, allow_nan=False))
    else:
        held_out = [part for line in held_out_lines(scores)
                    for part in textwrap.wrap(line, WIDTH, subsequent_indent="    ")]
        print("\n".join(format_table([sc.to_json() for sc in scores], _goals()) + held_out))
    return 0
