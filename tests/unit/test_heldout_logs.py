"""Both models on real runs they were never tuned on (tests/data/nccl_heldout/README.md).

The scorecard's goals: the fitted model within median 5% / p90 12% on every log of 8 rows or more; the predicted model
within median 25% / 15% from 64 MiB. Where a run misses, the reason is stated here and checked, not hidden."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from commlab.tuner.machine import parse_machine
from commlab.scorecard.scorecard import FIT_P90_GOAL, GOAL_MIN_ROWS, score_file

HERE = Path(__file__).resolve().parents[1] / "data" / "nccl_heldout"
MACHINES = json.loads((HERE / "machines.json").read_text())
SCORES = {name[:2]: score_file(HERE / name, parse_machine(desc) if desc else None) for name, desc in MACHINES.items()}
#: runs no description fits (machines.json gives null): the fit is held to its goals, nothing is predicted
UNDESCRIBED = {key for key, sc in SCORES.items() if sc.machine is None}
#: runs shorter than the fitted goals' GOAL_MIN_ROWS, and their rows: the source elides rows (23), or the run starts
#: at 4 GiB (30, a sendrecv that calibrates what a NIC delivers)
SHORT = {"23": 6, "30": 3}

#: runs whose own two timings of a size disagree by more than the fitted goal (periodic 0.5 ms spikes in both
#: columns): no model of a few numbers follows them, and the scorecard says so
NOISY = {"20"}
#: described runs where the prediction misses, and why
PREDICTED_MISSES = {
    "20": "NCCL 2.5.6, and spikes of 0.5 ms in both columns",
    "23": "2x p5 under EKS with NCCL 2.18.5: from 64 MiB to 2 GiB its busbw climbs 126 -> 438 GB/s, 0.3-0.8x of "
          "the NVLSTree rate both today's tuner and 2.18's give it",
}


def test_every_held_out_run_is_read_whole():
    assert len(SCORES) == 20 and all(sc.n_rows >= 8 for k, sc in SCORES.items() if k not in SHORT)
    assert UNDESCRIBED == {"22"} and all(SCORES[k].n_rows == rows for k, rows in SHORT.items())


@pytest.mark.parametrize("key", sorted(SCORES))
def test_the_fit_meets_its_goals_or_the_run_is_noisier_than_them(key):
    sc = SCORES[key]
    if key in SHORT:
        assert sc.n_rows < GOAL_MIN_ROWS and sc.meets_fitted_goals() is None
        return
    assert sc.n_rows >= GOAL_MIN_ROWS
    if key in NOISY:
        assert sc.meets_fitted_goals() is False and sc.repeat_spread_p90 > FIT_P90_GOAL
    else:
        assert sc.meets_fitted_goals() is True, (sc.fitted_median, sc.fitted_p90)


@pytest.mark.parametrize("key", sorted(SCORES))
def test_the_prediction_meets_its_goals_where_the_run_is_described(key):
    sc = SCORES[key]
    if sc.collective in ("all_to_all", "sendrecv") or key in UNDESCRIBED:   # grouped send/recv, or no description
        assert sc.predicted_median is None
    elif key in PREDICTED_MISSES:
        assert sc.meets_predicted_goals() is False
    else:
        assert sc.meets_predicted_goals() is True, (sc.predicted_median, sc.predicted_bw_median)


def test_the_forced_ring_of_run_19_is_read_from_its_text():
    assert SCORES["19"].machine.algo is not None and SCORES["19"].machine.algo.lower() == "ring"
    assert {r.predicted_pair.split("/")[0] for r in SCORES["19"].rows} == {"Ring"}


# -- issue 25: the replay of each run's own NCCL generation, the error bands, calibration -------------------------
from commlab.scorecard.calibration import held_out_run  # noqa: E402
from commlab.scorecard.error_bands import (HELD_OUT_SHARE_GOAL, goals_of, held_out_goals, measure_bands,  # noqa: E402
                                           stored_bands)

RUNS = {name[:2]: run for name, desc in MACHINES.items() if desc
        and (run := held_out_run(name, (HERE / name).read_text(encoding="utf-8"), parse_machine(desc))) is not None}
#: described runs the replay of their own generation misses, and why (the goals: PREDICTED_MEDIAN_GOAL overall,
#: PREDICTED_BW_GOAL from 64 MiB)
GENERATION_MISSES = {"20": PREDICTED_MISSES["20"], "23": PREDICTED_MISSES["23"]}


def _medians(run):
    import numpy as np

    e = abs(run.predicted_us / run.measured_us - 1.0)
    bw = e[run.nbytes >= 64 * 2**20]
    return float(np.median(e)), (float(np.median(bw)) if bw.size else None)


@pytest.mark.parametrize("key", sorted(RUNS))
def test_the_replay_of_the_runs_own_generation_meets_the_goals_or_the_miss_is_stated(key):
    from commlab.scorecard.scorecard import PREDICTED_BW_GOAL, PREDICTED_MEDIAN_GOAL

    med, bw = _medians(RUNS[key])
    ok = med <= PREDICTED_MEDIAN_GOAL and (bw is None or bw <= PREDICTED_BW_GOAL)
    assert ok is (key not in GENERATION_MISSES), (key, med, bw)


def test_at_least_two_thirds_of_the_described_runs_meet_the_goals_without_calibration():
    """The goal on runs the tests do not ship: 15 of the 17 described runs of collectives NCCL tunes (08 is alltoall,
    30 a sendrecv)."""
    met = len(RUNS) - len(GENERATION_MISSES)
    assert len(RUNS) == 17 and met == 15 and met >= HELD_OUT_SHARE_GOAL * len(RUNS)


def test_the_run_that_names_its_nccl_version_is_replayed_with_that_generation():
    assert RUNS["23"].generation == "2.18-2.23" and RUNS["13"].generation == "2.24-2.30"


def test_the_error_band_table_is_what_the_held_out_runs_measure_now():
    """src/commlab/data/nccl/error_bands.json is written by benchmarks/tuner_heldout.py --write; a change of the model
    that moves a band without rewriting the table fails here."""
    assert [b.to_json() for b in measure_bands(RUNS.values())] == [b.to_json() for b in stored_bands()]
    from commlab.scorecard.scorecard import BW_REGIME_NBYTES, PREDICTED_BW_GOAL, PREDICTED_MEDIAN_GOAL

    goals = goals_of(RUNS.values(), PREDICTED_MEDIAN_GOAL, PREDICTED_BW_GOAL, BW_REGIME_NBYTES)
    assert goals == held_out_goals() and sorted(m[:2] for m in goals["missed"]) == sorted(GENERATION_MISSES)
