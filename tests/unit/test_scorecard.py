"""The scorecard: both models held against every shipped log, the goals kept, the JSON recomputable."""
from __future__ import annotations

import json

import numpy as np
import pytest

from commlab.cli import main
from commlab.cost.fixture_machines import fixture_machine
from commlab.cost.scorecard import (
    BW_REGIME_NBYTES, FIT_MEDIAN_GOAL, FIT_P90_GOAL, PREDICTED_BW_GOAL, PREDICTED_MEDIAN_GOAL, scorecard,
)
from commlab.nccl import nccl_tests_log

SCORES = {sc.name[:2]: sc for sc in scorecard()}


def test_every_shipped_log_is_scored():
    assert len(SCORES) == 23


def test_fitted_goals_on_every_log_of_eight_rows_or_more():
    held = [k for k, sc in SCORES.items() if sc.n_rows >= 8]
    assert len(held) == 16
    for k in held:
        sc = SCORES[k]
        assert sc.fitted_median <= FIT_MEDIAN_GOAL and sc.fitted_p90 <= FIT_P90_GOAL, k
        assert sc.meets_fitted_goals() is True


#: Described logs whose run NCCL's tuning model describes: the predicted goals hold.
WITHIN = ["01", "03", "04", "07", "08", "11", "16", "17"]


@pytest.mark.parametrize("key", WITHIN)
def test_predicted_goals_where_the_model_describes_the_run(key):
    sc = SCORES[key]
    assert fixture_machine(key).outside_model is None
    assert sc.predicted_median <= PREDICTED_MEDIAN_GOAL, sc.predicted_median
    assert sc.predicted_bw_median is None or sc.predicted_bw_median <= PREDICTED_BW_GOAL, sc.predicted_bw_median


def test_every_described_log_is_either_within_or_says_what_is_outside():
    for key, sc in SCORES.items():
        fm = fixture_machine(key)
        if fm.desc is None:
            assert sc.predicted_median is None and "cannot be described" in sc.machine_note
        elif key not in WITHIN:
            assert fm.outside_model and "outside the model" in sc.machine_note, key


@pytest.mark.parametrize("key", ["09", "12", "13", "20", "21", "22"])
def test_the_bandwidth_regime_holds_where_only_small_messages_are_outside(key):
    assert SCORES[key].predicted_bw_median <= PREDICTED_BW_GOAL


@pytest.mark.parametrize("key", ["02", "05", "06", "14", "15"])
def test_shm_staging_is_slower_than_ncclS_pcie_budget(key):
    """P2P off: every large row takes longer than NCCL's model, which budgets the PCIe link."""
    big = [r for r in SCORES[key].rows if r.size_bytes >= BW_REGIME_NBYTES]
    assert big and all(r.predicted_time_us < 0.5 * r.measured_time_us for r in big)


@pytest.mark.parametrize("key", ["19", "20", "21", "22", "23"])
def test_the_single_thread_launch_floor_is_not_in_ncclS_model(key):
    first = SCORES[key].rows[0]
    assert first.measured_time_us > 50 and first.predicted_time_us < 25


def test_json_rows_recompute_the_errors(capsys):
    assert main(["scorecard", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert len(obj["logs"]) == 23
    for entry in obj["logs"]:
        rows = entry["row_times"]
        assert len(rows) == entry["rows"]
        fitted = [abs(r["fitted_time_us"] / r["measured_time_us"] - 1) for r in rows if r["fitted_time_us"]]
        assert np.median(fitted) == pytest.approx(entry["fitted"]["median_error"])
        predicted = [abs(r["predicted_time_us"] / r["measured_time_us"] - 1) for r in rows
                     if r["predicted_time_us"] is not None]
        if predicted:
            assert np.median(predicted) == pytest.approx(entry["predicted"]["median_error"])
            big = [abs(r["predicted_time_us"] / r["measured_time_us"] - 1) for r in rows
                   if r["predicted_time_us"] is not None and r["size_bytes"] >= BW_REGIME_NBYTES]
            assert np.median(big) == pytest.approx(entry["predicted"]["bw_regime_median_error"])
        assert len(entry["fitted"]["params"]) <= 8


def test_text_table(capsys):
    assert main(["scorecard"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") >= 25 and "07_all_reduce_H100-p5-NVSwitch_8r.txt" in out
    assert "met on 16 of 16" in out and "gpu=h100,gpus_per_node=8" in out


def test_given_logs_and_a_machine(capsys, tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text(nccl_tests_log(7).read_text())
    assert main(["scorecard", str(path), "--machine", "gpu=h100,gpus_per_node=8", "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["logs"][0]
    assert entry["machine"].startswith("gpu=h100") and entry["predicted"]["median_error"] < 0.25
    assert main(["scorecard", str(path)]) == 0                                  # no machine: fitted only
    assert "no machine description" in capsys.readouterr().out


@pytest.mark.parametrize("text, words", [
    ("# nranks: 2\n# collective: all_reduce\n" + " 8 2 float sum -1 10.0 0.0 0.0 0 10.0 0.0 0.0 0\n"
     " 16 4 float sum -1 10.0 0.0 0.0 0 10.0 0.0 0.0 0\n", "at least 3 rows"),
    ("# nranks: 2\n# collective: all_reduce\n" + "".join(
        f" {s} {s // 4} float sum -1 0.00 0.00 0.00 0 0.00 0.00 0.00 0\n" for s in (8, 16, 32, 64)), "zero"),
    ("# nranks: 2\n# collective: all_reduce\n" + " 1024 256 float sum -1 10.0 0.1 0.1 0 10.0 0.1 0.1 0\n" * 3,
     "different sizes"),
])
def test_bad_logs_are_one_line_errors(text, words, tmp_path, capsys):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    assert main(["scorecard", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "bad.txt" in err


def test_machine_errors(capsys):
    assert main(["scorecard", str(nccl_tests_log(7)), "--machine", "gpu=h100,ranks=8"]) == 2
    assert "the fields are: gpu, gpus_per_node" in capsys.readouterr().err
    assert main(["scorecard", "--machine", "gpu=h100,gpus_per_node=8"]) == 2
    assert "--machine describes the LOGs given" in capsys.readouterr().err
    assert main(["scorecard", str(nccl_tests_log(7)), "--machine", "gpu=h100,gpus_per_node=4"]) == 2
    assert "8 ranks" in capsys.readouterr().err
