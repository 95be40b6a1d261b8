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
SCORES = {name[:2]: score_file(HERE / name, parse_machine(desc)) for name, desc in MACHINES.items()}

#: runs whose own two timings of a size disagree by more than the fitted goal (periodic 0.5 ms spikes in both
#: columns): no model of a few numbers follows them, and the scorecard says so
NOISY = {"20"}
#: described runs where the prediction misses, and why
PREDICTED_MISSES = {
    "18": "Google's gIB plugin with its own tuner config (unpublished), as shipped log 13",
    "20": "NCCL 2.5.6, and spikes of 0.5 ms in both columns",
}


def test_every_held_out_run_is_read_whole():
    assert len(SCORES) == 11 and all(sc.n_rows >= 8 for sc in SCORES.values())


@pytest.mark.parametrize("key", sorted(SCORES))
def test_the_fit_meets_its_goals_or_the_run_is_noisier_than_them(key):
    sc = SCORES[key]
    assert sc.n_rows >= GOAL_MIN_ROWS
    if key in NOISY:
        assert sc.meets_fitted_goals() is False and sc.repeat_spread_p90 > FIT_P90_GOAL
    else:
        assert sc.meets_fitted_goals() is True, (sc.fitted_median, sc.fitted_p90)


@pytest.mark.parametrize("key", sorted(SCORES))
def test_the_prediction_meets_its_goals_where_the_run_is_described(key):
    sc = SCORES[key]
    if sc.collective == "all_to_all":                 # grouped send/recv: NCCL's tuner does not cost it
        assert sc.predicted_median is None
    elif key in PREDICTED_MISSES:
        assert sc.meets_predicted_goals() is False
    else:
        assert sc.meets_predicted_goals() is True, (sc.predicted_median, sc.predicted_bw_median)


def test_the_forced_ring_of_run_19_is_read_from_its_text():
    assert SCORES["19"].machine.algo is not None and SCORES["19"].machine.algo.lower() == "ring"
    assert {r.predicted_pair.split("/")[0] for r in SCORES["19"].rows} == {"Ring"}
