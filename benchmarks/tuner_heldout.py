"""The predictive model on the held-out nccl-tests runs (tests/data/nccl_heldout), by NCCL generation, with and
without calibration from another run of the same kind of cluster; and the error-band table measured on them.

Prints, per described held-out run: the generation it is replayed with (named or assumed), the median relative time
error over all sizes and from 64 MiB, with today's tuner and with the run's own generation; then each calibration
pair (tests/data/nccl_heldout/pairs.json: a run of the same kind of cluster calibrates, another is predicted) before
and after calibration; then the share of runs meeting the predicted goals (median <= 25%, >= 64 MiB <= 15%) and of
pairs meeting the calibration goal (calibrated on a 1- or 2-node run, the prediction at 4 to 32 nodes within a median
of 15% over all sizes; pairs at other node counts are printed but not counted).

Run: .venv/bin/python benchmarks/tuner_heldout.py [--write]   (--write rewrites src/commlab/data/nccl/error_bands.json)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from commlab.nccl.parse import parse_log
from commlab.nccl.debuglog import nccl_version
from commlab.scorecard.calibration import (CALIBRATED_MEDIAN_GOAL, CALIBRATED_PAIRS_SHARE_GOAL, calibrate_from_log,
                                           held_out_run,
                                           in_calibration_goal, predict_log)
from commlab.scorecard.error_bands import goals_of, measure_bands
from commlab.scorecard.log_model import machine_for_log
from commlab.scorecard.scorecard import BW_REGIME_NBYTES, PREDICTED_BW_GOAL, PREDICTED_MEDIAN_GOAL, measured_points
from commlab.tuner.calibrate import machine_at
from commlab.tuner.generations import current, generation_for, replay
from commlab.tuner.launch import LaunchShape
from commlab.tuner.machine import parse_machine

ROOT = Path(__file__).resolve().parents[1]
HELD = ROOT / "tests" / "data" / "nccl_heldout"
BANDS = ROOT / "src" / "commlab" / "data" / "nccl" / "error_bands.json"


def medians(pred_us, meas_us, s) -> tuple[float, float | None]:
    e = np.abs(pred_us / meas_us - 1.0)
    bw = e[s >= BW_REGIME_NBYTES]
    return float(np.median(e)), float(np.median(bw)) if bw.size else None


def meets(med: float, bw: float | None) -> bool:
    return med <= PREDICTED_MEDIAN_GOAL and (bw is None or bw <= PREDICTED_BW_GOAL)


def pct(x) -> str:
    return "    -" if x is None else f"{100 * x:5.1f}"


def held_out_runs():
    machines = json.loads((HELD / "machines.json").read_text())
    for name, desc in machines.items():
        if desc is None:
            continue
        run = held_out_run(name, (HELD / name).read_text(encoding="utf-8"), parse_machine(desc))
        if run is not None:
            yield run


def resolve(path: str) -> Path:
    return (ROOT / path).resolve()


def predict_pair(pair: dict):
    """(plain medians, calibrated medians, the fitted quantities in words, the calibration run's nodes, the target's
    nodes, the fitted quantities as stored, the NIC's port Gb/s)"""
    desc = parse_machine(pair["machine"])
    cal_path, tgt_path = resolve(pair["calibrate_from"]), resolve(pair["predict"])
    small = calibrate_from_log(cal_path, cal_path.read_text(encoding="utf-8"), desc)
    text = tgt_path.read_text(encoding="utf-8")
    log = parse_log(text)
    m, _ = machine_for_log(machine_at(desc, log.n_ranks, tgt_path.name), text)
    assert m is not None
    s, t = measured_points(log)
    plain = predict_log(log, text, s, m).prediction.time_s * 1e6
    cal = predict_log(log, text, s, m, small).prediction.time_s * 1e6
    c = small.fit.calibration
    fitted = f"NIC {c.nic_delivered_Gbps} Gb/s, hop {c.net_hop_us} us, launch {c.launch_us_per_gpu} us/GPU"
    stored = {"nic_delivered_Gbps": c.nic_delivered_Gbps, "net_hop_us": c.net_hop_us,
              "launch_us_per_gpu": c.launch_us_per_gpu}
    return medians(plain, t, s), medians(cal, t, s), fitted, small.fit.machine.nodes, m.nodes, stored, m.nic_Gbps


def main(argv: list[str]) -> int:
    runs = list(held_out_runs())
    print(f"{'held-out run':<48s} {'generation':<16s} {'now med':>7s} {'>=64M':>6s} {'gen med':>7s} {'>=64M':>6s}")
    ok_now = ok_gen = 0
    for r in runs:
        text = (HELD / r.name).read_text(encoding="utf-8")
        log = parse_log(text)
        choice = generation_for(nccl_version(text), log.format)
        now = replay(log.collective, r.nbytes, r.machine, current(), LaunchShape.from_log(log)).time_s * 1e6
        a, b = medians(now, r.measured_us, r.nbytes), medians(r.predicted_us, r.measured_us, r.nbytes)
        ok_now += meets(*a)
        ok_gen += meets(*b)
        label = choice.generation.name + (" (assumed)" if choice.assumed else "")
        print(f"{r.name[:48]:<48s} {label:<16s} {pct(a[0]):>7s} {pct(a[1]):>6s} {pct(b[0]):>7s} {pct(b[1]):>6s}")
    print(f"goals met, described held-out runs: today's tuner {ok_now} of {len(runs)}, the run's generation "
          f"{ok_gen} of {len(runs)}")
    pairs = json.loads((HELD / "pairs.json").read_text())
    print(f"\n{'calibrated on -> predicted':<62s} {'nodes':>6s} {'plain':>6s} {'>=64M':>6s} {'cal':>6s} {'>=64M':>6s}  "
          f"fitted")
    in_goal = ok_goal = 0
    stored_pairs = []
    for pair in pairs:
        plain, cal, fitted, small_nodes, nodes, quantities, port_Gbps = predict_pair(pair)
        counted = in_calibration_goal(small_nodes, nodes)
        in_goal += counted
        ok_goal += counted and cal[0] <= CALIBRATED_MEDIAN_GOAL
        stored_pairs.append({"calibrate_from": Path(pair["calibrate_from"]).name, "predict": Path(pair["predict"]).name,
                             "nodes": [small_nodes, nodes], "in_goal": counted,
                             "median_before": round(plain[0], 4), "median_after": round(cal[0], 4),
                             "fitted": quantities, "nic_port_Gbps": port_Gbps})
        label = f"{Path(pair['calibrate_from']).name[:29]} -> {Path(pair['predict']).name[:29]}"
        shown = f"{small_nodes}->{nodes}" + ("" if counted else "*")
        print(f"{label:<62s} {shown:>6s} {pct(plain[0]):>6s} {pct(plain[1]):>6s} {pct(cal[0]):>6s} {pct(cal[1]):>6s}  "
              f"{fitted}")
    print(f"calibration goal (a 1-2 node run calibrates 4-32 nodes, median <= {100 * CALIBRATED_MEDIAN_GOAL:.0f}%, on "
          f"{100 * CALIBRATED_PAIRS_SHARE_GOAL:.0f}% of pairs): met on {ok_goal} of {in_goal} pairs; * another node "
          f"count, not counted")
    bands = measure_bands(runs)
    if "--write" in argv:
        BANDS.write_text(json.dumps({
            "measured_on": "tests/data/nccl_heldout: real nccl-tests runs no constant or choice of commlab's models "
                           "was made on (their README gives the sources)",
            "model": "commlab.tuner.generations.replay with the generation of each log's NCCL version, "
                     "uncalibrated, from its machines.json description",
            "written_by": "benchmarks/tuner_heldout.py --write",
            "held_out_goals": goals_of(runs, PREDICTED_MEDIAN_GOAL, PREDICTED_BW_GOAL, BW_REGIME_NBYTES),
            "calibration": {"goal_median": CALIBRATED_MEDIAN_GOAL, "met": ok_goal, "pairs_in_goal": in_goal,
                            "pairs": stored_pairs},
            "bands": [b.to_json() for b in bands]}, indent=1) + "\n")
        print(f"\nwrote {BANDS.relative_to(ROOT)} ({len(bands)} bands)")
    for b in bands:
        print(f"  {b.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
