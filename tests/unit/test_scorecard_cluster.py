"""The scorecard's cluster column: the multi-node logs on their cluster presets, within the goal, recomputable."""
from __future__ import annotations

import json

import numpy as np
import pytest

from commlab.cli import main
from commlab.scorecard.cluster_column import fixture_cluster
from commlab.scorecard.scorecard import BW_REGIME_NBYTES, CLUSTER_BW_GOAL, scorecard

SCORES = {sc.name[:2]: sc for sc in scorecard()}
MULTI_NODE = ["08", "09", "10", "11", "12", "13"]


@pytest.mark.parametrize("key", MULTI_NODE + ["07"])
def test_the_cluster_model_meets_its_goal_on_every_log_on_a_preset(key):
    sc = SCORES[key]
    name, nodes, _ = fixture_cluster(int(key))
    assert sc.cluster == f"{name} x {nodes}"
    assert sc.cluster_bw_median <= CLUSTER_BW_GOAL and sc.meets_cluster_goal() is True


def test_the_scatter_log_is_scored_by_the_cluster_model_only():
    sc = SCORES["10"]
    assert sc.predicted_median is None and sc.cluster_median is not None
    assert {r.cluster_algo for r in sc.rows} == {"direct"}


def test_logs_that_are_part_of_a_node_have_no_cluster_column():
    for key in ("01", "03", "19", "23"):
        assert SCORES[key].cluster is None and "part of one node" in SCORES[key].cluster_note


def test_two_node_logs_are_ncclS_pick_plus_a_fabric_that_adds_nothing():
    """Two nodes under one leaf: the cluster model's time is the predictive model's, row by row."""
    for key in ("08", "09", "11", "12", "13"):
        for r in SCORES[key].rows:
            assert r.cluster_time_us == pytest.approx(r.predicted_time_us, rel=1e-9)
            assert r.cluster_algo in ("ring", "tree", "nvls-tree") and ":" in r.cluster_bottleneck


def test_json_keeps_the_old_keys_and_recomputes_the_cluster_errors(capsys):
    assert main(["scorecard", "--json"]) == 0
    logs = json.loads(capsys.readouterr().out)["logs"]
    for entry in logs:
        assert {"fitted", "predicted", "machine", "machine_note", "row_times", "cluster"} <= set(entry)
        rows = [r for r in entry["row_times"] if r["cluster_time_us"] is not None]
        if not rows:
            assert entry["cluster"]["median_error"] is None
            continue
        errors = [abs(r["cluster_time_us"] / r["measured_time_us"] - 1) for r in rows]
        big = [e for e, r in zip(errors, rows) if r["size_bytes"] >= BW_REGIME_NBYTES]
        assert np.median(errors) == pytest.approx(entry["cluster"]["median_error"])
        assert np.median(big) == pytest.approx(entry["cluster"]["bw_regime_median_error"])


def test_text_shows_the_cluster_columns_and_goal(capsys):
    assert main(["scorecard"]) == 0
    out = capsys.readouterr().out
    assert "cluster model" in out and ">=64MiB" in out and "cluster goal (>= 64 MiB <= 20%): met on 7 of 7" in out
