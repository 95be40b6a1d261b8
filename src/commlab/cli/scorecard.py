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
    from commlab.scorecard.scorecard import format_scorecard, scorecard
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
        print("\n".join(format_scorecard(scores)))
    return 0
