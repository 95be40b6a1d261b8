"""Calibration from a small run (commlab.tuner.calibrate) and the error bands (commlab.tuner.error_bands): the fit
recovers what it is given, fits only what a run shows, refuses the log it predicts and another cluster's run, and
meets issue 25's goal on the held-out calibration pairs (tests/data/nccl_heldout/pairs.json)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from commlab.errors import CommlabError
from commlab.nccl.parse import parse_log
from commlab.scorecard.calibration import (CALIBRATED_MEDIAN_GOAL, calibrate_from_log, in_calibration_goal,
                                           predict_log, read_small_run)
from commlab.scorecard.error_bands import band_for, band_json, machine_class
from commlab.scorecard.log_model import machine_for_log
from commlab.scorecard.scorecard import measured_points
from commlab.tuner import calibrate as C
from commlab.tuner.generations import generation_for, replay
from commlab.tuner.machine import Machine, parse_machine

ROOT = Path(__file__).resolve().parents[2]
HELD = ROOT / "tests" / "data" / "nccl_heldout"
A100_2 = parse_machine("gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=200,net=ib")
SIZES = 2.0 ** np.arange(10, 31)


def _synthetic(m: Machine, cal: C.Calibration, op: str = "all_reduce") -> np.ndarray:
    return C.predict_calibrated(op, SIZES, m, cal).time_s * 1e6


@pytest.mark.parametrize("truth", [C.Calibration(100.0, 6.0, 60.0), C.Calibration(60.0, 20.0, 90.0),
                                   C.Calibration(190.0, 2.0, 45.0)])
def test_the_fit_recovers_the_quantities_a_run_was_made_with(truth):
    fit = C.fit_calibration("all_reduce", SIZES, _synthetic(A100_2, truth), A100_2)
    got = fit.calibration
    assert got.nic_delivered_Gbps == pytest.approx(truth.nic_delivered_Gbps, rel=0.03)
    assert got.net_hop_us == pytest.approx(truth.net_hop_us, abs=1.0)
    assert got.launch_us_per_gpu == pytest.approx(truth.launch_us_per_gpu, rel=0.02)
    assert fit.median_error < 0.01 and fit.not_fitted == {}


def test_what_a_calibration_fits_predicts_another_node_count_and_collective_of_the_same_cluster():
    truth = C.Calibration(80.0, 10.0, 50.0)
    fit = C.fit_calibration("all_reduce", SIZES, _synthetic(A100_2, truth), A100_2)
    for nodes, op in ((4, "all_reduce"), (8, "all_gather"), (16, "reduce_scatter")):
        m = parse_machine(f"gpu=a100,gpus_per_node=8,nodes={nodes},nics_per_node=8,nic_Gbps=200,net=ib")
        t = _synthetic(m, truth, op)
        p = C.predict_calibrated(op, SIZES, m, fit.calibration).time_s * 1e6
        plain = replay(op, SIZES, m, generation_for(None).generation).time_s * 1e6
        assert np.median(abs(p / t - 1)) < 0.03 < np.median(abs(plain / t - 1)), (nodes, op)


def test_a_one_node_run_fits_the_launch_floor_alone_and_says_why_not_the_rest():
    m = parse_machine("gpu=a100,gpus_per_node=8")
    fit = C.fit_calibration("all_reduce", SIZES, _synthetic(m, C.Calibration(None, None, 40.0)), m)
    assert fit.calibration.nic_delivered_Gbps is None and fit.calibration.net_hop_us is None
    assert fit.calibration.launch_us_per_gpu == pytest.approx(40.0, rel=0.02)
    assert "one node" in fit.not_fitted["nic_delivered_Gbps"] and "one node" in fit.not_fitted["net_hop_us"]


def test_the_json_names_each_fitted_quantity_with_its_unit():
    fit = C.fit_calibration("all_reduce", SIZES, _synthetic(A100_2, C.Calibration(100.0, 6.0, 60.0)), A100_2,
                            source="small.txt")
    out = fit.to_json()
    json.dumps(out, allow_nan=False)
    assert [(q["name"], q["unit"], q["fitted"]) for q in out["quantities"]] == [
        ("nic_delivered_Gbps", "Gb/s", True), ("net_hop_us", "us", True), ("launch_us_per_gpu", "us", True)]
    assert len(out["quantities"]) <= 3 and out["from"] == "small.txt"


def test_a_log_too_short_to_calibrate_names_what_is_missing():
    with pytest.raises(CommlabError, match=r"too short to calibrate: it needs at least 4 sizes > 0 \(it has 2\)"):
        C.fit_calibration("all_reduce", [2**20, 2**21], [50.0, 60.0], A100_2, source="tiny.txt")
    fit = C.fit_calibration("all_reduce", 2.0 ** np.arange(10, 20), _synthetic(A100_2, C.Calibration())[:10],
                            A100_2)
    assert fit.not_fitted["nic_delivered_Gbps"] == "the calibration log has no size >= 64 MiB"
    with pytest.raises(CommlabError, match="cannot calibrate on alltoall"):
        C.fit_calibration("alltoall", SIZES, SIZES, A100_2)


def _choice(version):
    return generation_for(version)


def test_another_collective_or_nccl_version_goes_on_and_says_so():
    check = C.check_pair(A100_2, "all_gather", _choice((2, 18, 5)), A100_2, "all_reduce", _choice((2, 26, 6)))
    assert check.went_on
    assert "the calibration run is all_gather, the log all_reduce" in check.note()
    assert "NCCL is 2.18.5, the log's 2.26.6" in check.note() and check.note().endswith("the cluster's")


def test_another_machine_does_not_go_on_and_says_what_differs():
    h100 = parse_machine("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=efa-p5")
    check = C.check_pair(h100, "all_reduce", _choice(None), A100_2, "all_reduce", _choice(None))
    assert not check.went_on
    assert "GPU is h100, the log's a100" in check.note() and "network kind is efa-p5, the log's ib" in check.note()
    assert check.note().endswith("did not go on")
    assert C.check_pair(A100_2, "all_reduce", _choice(None), A100_2, "all_reduce", _choice(None)).note() == ""


def test_a_calibration_is_never_scored_on_the_log_it_was_fitted_on():
    path = HELD / "19_all_reduce_A100-DGX-HDR-IB-Ring_16r.txt"
    text = path.read_text(encoding="utf-8")
    desc = parse_machine("gpu=a100,gpus_per_node=8,nics_per_node=8,nic_Gbps=200")
    small = calibrate_from_log(path, text, desc)
    log = parse_log(text)
    with pytest.raises(CommlabError, match="is the calibration log itself"):
        predict_log(log, text, measured_points(log)[0], C.machine_at(desc, 16, "LOG"), small)
    C.refuse_own_log(small.fit, (HELD / "21_all_reduce_A100-DGX-4node-IB_32r.txt").read_text(encoding="utf-8"),
                     "LOG")


def test_a_calibration_of_another_cluster_stops_with_what_differs():
    desc = parse_machine("gpu=h100,gpus_per_node=8,nics_per_node=8,nic_Gbps=400,net=efa-p5,cpu=amd")
    small = read_small_run(str(ROOT / "src/commlab/data/nccl/nccl-tests/09_all_reduce_H100-p5-EFA_16r.txt"), desc)
    text = (HELD / "21_all_reduce_A100-DGX-4node-IB_32r.txt").read_text(encoding="utf-8")
    log = parse_log(text)
    with pytest.raises(CommlabError, match="GPU is h100, the log's a100.*did not go on"):
        predict_log(log, text, measured_points(log)[0], parse_machine(
            "gpu=a100,gpus_per_node=8,nodes=4,nics_per_node=8,nic_Gbps=200,net=ib"), small)
    with pytest.raises(CommlabError, match="--calibrate-from needs --machine DESC"):
        read_small_run("small.txt", None)
    with pytest.raises(CommlabError, match="cannot read --calibrate-from 'no/such.txt'"):
        read_small_run("no/such.txt", desc)


def test_a_calibration_log_of_a_collective_nccl_does_not_tune_or_of_partial_nodes_is_refused():
    m = parse_machine("gpu=a100,gpus_per_node=8,nics_per_node=8,nic_Gbps=200")
    alltoall = HELD / "08_alltoall_A100-SXM4-DGX-superbench_8r.txt"
    with pytest.raises(CommlabError, match="is all_to_all, which NCCL's tuner does not model"):
        calibrate_from_log(alltoall, alltoall.read_text(encoding="utf-8"), m)
    with pytest.raises(CommlabError, match="ran 12 ranks, not whole nodes of 8 GPUs"):
        C.machine_at(m, 12, "the calibration log")


def _pair_errors(pair: dict) -> tuple[float, int]:
    desc = parse_machine(pair["machine"])
    cal_path, tgt_path = ROOT / pair["calibrate_from"], ROOT / pair["predict"]
    small = read_small_run(str(cal_path), desc)
    text = tgt_path.read_text(encoding="utf-8")
    log = parse_log(text)
    m, _ = machine_for_log(C.machine_at(desc, log.n_ranks, tgt_path.name), text)
    s, t = measured_points(log)
    p = predict_log(log, text, s, m, small).prediction.time_s * 1e6
    return float(np.median(abs(p / t - 1))), m.nodes


PAIRS = json.loads((HELD / "pairs.json").read_text())


def _small_nodes(pair: dict) -> int:
    small = read_small_run(str(ROOT / pair["calibrate_from"]), parse_machine(pair["machine"]))
    return small.fit.machine.nodes


#: the goal's pairs the calibration misses, and why (none since a ring's network step costs RING_NET_STEP_US more
#: than NCCL's figure: before, the 10-node ring all-gather and reduce-scatter calibrated on one node missed, their
#: 32-256 MiB rows 1.3-2.3x slower than predicted)
CALIBRATION_MISSES: set[tuple[str, str]] = set()


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{Path(p['calibrate_from']).name[:2]}->"
                                                      f"{Path(p['predict']).name[:2]}")
def test_a_1_or_2_node_run_calibrates_4_to_32_nodes_of_the_same_cluster_within_the_goal(pair):
    """The calibration goal: calibrated on a 1- or 2-node run, the prediction of the same cluster at 4 to 32 nodes
    within a median of CALIBRATED_MEDIAN_GOAL over all sizes; a miss is named in CALIBRATION_MISSES with its
    reason. Pairs at other node counts (the p5 pairs predict 2 nodes) are not the goal's and are held elsewhere."""
    median, nodes = _pair_errors(pair)
    if not in_calibration_goal(_small_nodes(pair), nodes):
        pytest.skip(f"{nodes} nodes: not a pair the goal speaks of")
    key = (Path(pair["calibrate_from"]).name, Path(pair["predict"]).name)
    assert (median <= CALIBRATED_MEDIAN_GOAL) is (key not in CALIBRATION_MISSES), (key, median)


def test_the_goals_pairs_span_two_clusters_and_both_calibration_node_counts():
    goal = [p for p in PAIRS if in_calibration_goal(_small_nodes(p), _pair_errors(p)[1])]
    assert len(goal) == 8 and len(CALIBRATION_MISSES) == 0
    assert {_small_nodes(p) for p in goal} == {1, 2}


def test_the_stored_calibration_results_are_what_the_pairs_measure_now():
    """error_bands.json's calibration section (written by benchmarks/tuner_heldout.py --write, read by chapter 08)
    is the pairs as they predict now."""
    from commlab.scorecard.error_bands import calibration_results

    stored = calibration_results()
    assert [(p["calibrate_from"], p["predict"]) for p in stored["pairs"]] == \
        [(Path(p["calibrate_from"]).name, Path(p["predict"]).name) for p in PAIRS]
    for entry, pair in zip(stored["pairs"], PAIRS):
        assert entry["median_after"] == pytest.approx(_pair_errors(pair)[0], abs=1e-4), entry
    goal = [e for e in stored["pairs"] if e["in_goal"]]
    assert stored["pairs_in_goal"] == len(goal) and stored["goal_median"] == CALIBRATED_MEDIAN_GOAL
    assert stored["met"] == sum(e["median_after"] <= CALIBRATED_MEDIAN_GOAL for e in goal)


def test_a_two_node_sendrecv_calibrates_what_a_nic_delivers():
    """nccl-tests' sendrecv across 2 nodes: 45.87 GB/s a pair from 4 GiB, so a 400 Gb/s NIC delivers 367 Gb/s; the
    hop and the launch floor are not fitted, with the reason."""
    desc = parse_machine("gpu=h100,gpus_per_node=8,nics_per_node=8,nic_Gbps=400,net=ib")
    small = read_small_run(str(HELD / "30_sendrecv_H100-IB-2node-cluster01_16r.txt"), desc)
    assert small.fit.calibration.nic_delivered_Gbps == pytest.approx(8 * 45.87, rel=0.002)
    assert small.fit.calibration.net_hop_us is None and "one message" in small.fit.not_fitted["net_hop_us"]
    assert small.fit.machine.nodes == 2 and small.fit.collective == "sendrecv"


def test_a_one_node_calibration_says_what_it_cannot_carry_to_a_run_across_nodes():
    """Calibrated on one node, a 10-node prediction names the two quantities it rests on that the small run could not
    show: the ring all-gather's network steps (nNodes - 1 = 9, tuning.cc:411, at NCCL's own hwLat[NET][Ring][LL128]
    of 4 us, tuning.cc:163, and a ring step's RING_NET_STEP_US) with their share of the predicted time, and the NIC at
    its port speed; the JSON carries them. A 2-node calibration, which saw the network, carries them and says
    nothing."""
    from commlab.tuner.networks import RING_NET_STEP_US

    desc = parse_machine("gpu=h100,gpus_per_node=8,nics_per_node=8,nic_Gbps=400,net=ib")
    target = HELD / "25_all_gather_H100-IB-10node-cluster01_80r.txt"
    text = target.read_text(encoding="utf-8")
    log = parse_log(text)
    s = np.array([r.size_bytes for r in log.rows if r.size_bytes > 0], dtype=float)
    m = C.machine_at(desc, log.n_ranks, "the log")
    one = read_small_run(str(HELD / "28_all_gather_H100-1node-cluster01_8r.txt"), desc)
    p = predict_log(log, text, s, m, one)
    hop, nic = p.not_carried
    assert p.prediction.pairs()[0] == "Ring/LL128"
    step = 4.0 + RING_NET_STEP_US
    share = 9 * step / (p.prediction.time_s[0] * 1e6)         # the smallest size has the largest latency share
    assert hop.startswith("net_hop_us:") and f"crosses the network 9 times (9 x {step:g} us" in hop, hop
    assert f"{100 * share:.0f}% of the predicted time at 32 MiB" in hop, hop
    assert nic.startswith("nic_delivered_Gbps:") and "400 Gb/s" in nic
    assert p.to_json()["calibration"]["not_carried"] == [hop, nic]
    assert any(n.startswith("--calibrate-from does not carry net_hop_us") for n in p.notes())
    two = read_small_run(str(HELD / "30_sendrecv_H100-IB-2node-cluster01_16r.txt"), desc)
    assert predict_log(log, text, s, m, two).not_carried == ()


def test_a_sendrecv_on_one_node_or_without_large_sizes_cannot_calibrate_a_nic():
    m1 = parse_machine("gpu=h100,gpus_per_node=8")
    with pytest.raises(CommlabError, match="sendrecv run on one node: no pair crosses a NIC"):
        C.fit_nic_from_p2p("sendrecv", [2.0 ** 30], [1e4], m1)
    m2 = parse_machine("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=ib")
    with pytest.raises(CommlabError, match="too short to calibrate: a sendrecv run needs sizes >= 64 MiB"):
        C.fit_nic_from_p2p("sendrecv", [1024.0], [20.0], m2)


def test_the_calibration_pair_of_the_nccl_2_18_p5_run_is_a_stated_miss():
    """2x p5 (Slurm) calibrates 2x p5 (EKS, NCCL 2.18.5), both at 2 nodes: the EKS run is 1.3-2.6x slower than the
    Slurm run of the same instance type from 64 MiB to 1 GiB and as fast at 2 GiB (busbw 126 -> 438 GB/s), a
    curve of its own that no quantity fitted on another run carries."""
    pair = next(p for p in PAIRS if p["calibrate_from"].endswith("09_all_reduce_H100-p5-EFA_16r.txt"))
    assert _pair_errors(pair)[0] > 0.25


# -- error bands ---------------------------------------------------------------------------------------------------
def test_machine_classes_follow_where_the_bytes_go():
    assert machine_class(parse_machine("gpu=a100,gpus_per_node=8")) == "one node, NVSwitch"
    assert machine_class(parse_machine("gpu=v100,gpus_per_node=8")) == "one node, NVLink without NVSwitch"
    assert machine_class(parse_machine("gpu=a40,gpus_per_node=4,nvlink=0")) == "one node, PCIe"
    assert machine_class(A100_2) == "several nodes, NVSwitch"
    assert machine_class(parse_machine("gpu=b200,gpus_per_node=1,nodes=2,nics_per_node=1,nic_Gbps=400")) == \
        "several nodes, 1 GPU a node"


def test_a_prediction_carries_its_kinds_band_and_says_where_it_is_outside_it():
    band, outside = band_for(A100_2, "2.4-2.8", [2**20, 2**30])
    assert band is not None and len(band.runs) == 2 and outside == []
    lo, hi = band.interval_us([100.0])
    assert lo[0] == pytest.approx(100 * band.ratio[0]) and hi[0] == pytest.approx(100 * band.ratio[2])
    _, outside = band_for(parse_machine("gpu=h100,gpus_per_node=8,nodes=32,nics_per_node=8,nic_Gbps=400"), "2.4-2.8",
                          [8, 2**35])
    assert any("not h100" in o for o in outside) and any("at most 4 node(s), this machine 32" in o for o in outside)
    assert any("bytes; this log 8-" in o for o in outside)
    none, why = band_for(parse_machine("gpu=a40,gpus_per_node=4,nvlink=0"), "2.9-2.17")
    assert none is None and why[0].startswith("no held-out run of this kind (one node, PCIe x NCCL 2.9-2.17)")
    assert band_json(A100_2, "2.9-2.17")["band"] is None


def test_the_gpu_a_calibration_runs_device_lines_name_is_held_against_the_description():
    from commlab.scorecard.calibration import gpus_named

    assert gpus_named("#  Rank  0 Group  0 Pid 1 on w-1 device  0 [0x8d] NVIDIA H100 80GB HBM3\n"
                      "#   Rank  1 Pid 2 on h device  1 [0x00] A100-PCIE-40GB") == {"h100", "a100-pcie"}
    check = C.check_pair(A100_2, "all_reduce", _choice(None), A100_2, "all_reduce", _choice(None), cal_gpu="h100")
    assert not check.went_on and "GPU is h100, the log's a100" in check.note()


# -- the command lines ---------------------------------------------------------------------------------------------
from commlab.cli import main  # noqa: E402

SMALL = str(HELD / "19_all_reduce_A100-DGX-HDR-IB-Ring_16r.txt")
BIG = str(HELD / "21_all_reduce_A100-DGX-4node-IB_32r.txt")
DGX = "gpu=a100,gpus_per_node=8,nodes=4,nics_per_node=8,nic_Gbps=200,net=ib"


def test_nccl_tests_calibrate_from_names_the_fitted_quantities_the_generation_and_the_band(capsys):
    assert main(["nccl-tests", BIG, "--machine", DGX, "--calibrate-from", SMALL, "--json"]) == 0
    pred = json.loads(capsys.readouterr().out)["prediction"]
    assert pred["generation"]["generation"] == "2.4-2.8" and pred["generation"]["assumed"] is True
    assert [q["unit"] for q in pred["calibration"]["quantities"]] == ["Gb/s", "us", "us"]
    assert pred["calibration"]["from"] == Path(SMALL).name and pred["calibration"]["went_on"] is True
    band = pred["error_band"]
    assert band["band"]["kind"] == "several nodes, NVSwitch" and len(band["time_us_p10"]) == 13
    assert pred["median_error"] <= 0.15
    assert main(["nccl-tests", BIG, "--machine", DGX, "--calibrate-from", SMALL]) == 0
    text = capsys.readouterr().out
    assert "calibrated      on 19_all_reduce" in text and "error band    measured" in text
    assert "tuner         NCCL 2.4-2.8 (v2.8.4-1 src/graph/tuning.cc)" in text


def test_nccl_tests_calibrate_from_bad_input_is_one_line_and_exit_2(capsys):
    assert main(["nccl-tests", BIG, "--calibrate-from", SMALL]) == 2
    assert "--calibrate-from needs --machine DESC" in capsys.readouterr().err
    assert main(["nccl-tests", BIG, "--machine", DGX, "--calibrate-from", BIG]) == 2
    assert "is the calibration log itself" in capsys.readouterr().err
    assert main(["nccl-tests", BIG, "--machine", DGX, "--calibrate-from", "no/such/log.txt"]) == 2
    assert "cannot read --calibrate-from 'no/such/log.txt'" in capsys.readouterr().err


def test_scorecard_calibrate_from_calibrates_the_logs_of_its_cluster_and_says_why_not_the_others(capsys):
    assert main(["scorecard", BIG, SMALL, "--machine", "gpu=a100,gpus_per_node=8,nics_per_node=8,nic_Gbps=200,"
                 "net=ib,nodes=4", "--calibrate-from", SMALL, "--json"]) == 2      # 19 has 16 ranks, not 32
    capsys.readouterr()
    assert main(["scorecard", BIG, "--machine", DGX, "--calibrate-from", SMALL, "--json"]) == 0
    log = json.loads(capsys.readouterr().out)["logs"][0]
    assert log["predicted"]["calibration"]["from"] == Path(SMALL).name
    assert log["predicted"]["error_band"]["band"]["generation"] == "2.4-2.8"
    assert main(["scorecard", BIG, "--machine", DGX, "--calibrate-from", BIG]) == 0
    out = capsys.readouterr().out
    assert "predicted goals on held-out runs (not shipped, no choice made on them): met on 15 of 17" in out


def test_scorecard_refuses_to_calibrate_a_log_on_itself_and_scores_it_uncalibrated():
    from commlab.scorecard.scorecard import score_file

    small = read_small_run(BIG, parse_machine(DGX))
    sc = score_file(BIG, parse_machine(DGX), small_run=small)
    assert sc.prediction_info["calibration"] is None and "not calibrated: the log is the calibration log itself" \
        in sc.machine_note


def test_cluster_cost_calibrate_from_adds_the_calibrated_pick_with_its_quantities(capsys):
    small = str(ROOT / "src/commlab/data/nccl/nccl-tests/09_all_reduce_H100-p5-EFA_16r.txt")
    assert main(["cluster", "cost", "all_reduce", "--nbytes", "1G", "--preset", "aws-p5", "--nodes", "16",
                 "--calibrate-from", small, "--json"]) == 0
    cal = json.loads(capsys.readouterr().out)["calibrated"]
    assert cal["pair"].startswith("NVLS") and cal["time_us"] > 0
    assert {q["name"] for q in cal["calibration"]["quantities"]} == {"nic_delivered_Gbps", "net_hop_us",
                                                                   "launch_us_per_gpu"}
    assert any("at most 10 node(s), this machine 16" in n for n in cal["notes"])   # the band's runs reach 10 nodes
    assert main(["cluster", "cost", "all_to_all", "--nbytes", "1G", "--preset", "aws-p5", "--nodes", "8",
                 "--calibrate-from", small]) == 2
    assert "grouped send/recv" in capsys.readouterr().err
