"""The simulate and cost subcommands: their JSON contracts and their one-line errors."""
import json

import pytest

from commlab.cli import main
from commlab.schedules import ALGORITHMS


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_simulate_json(algorithm, capsys):
    assert main(["simulate", algorithm, "--ranks", "5", "--json", "--nbytes", "1000"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["algorithm"] == algorithm and out["n_ranks"] == 5 and out["correct"] is True
    assert len(out["bytes_sent_per_rank"]) == 5
    for step in out["steps"]:
        for t in step:
            assert set(t) == {"src", "dst", "chunk", "reduce"}
    if algorithm.startswith("ring"):
        for step in out["steps"]:
            assert all(t["dst"] == (t["src"] + 1) % 5 for t in step)


def test_simulate_text(capsys):
    assert main(["simulate", "ring-reduce-scatter", "--ranks", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("step ") for line in lines) == 2


def test_cost_json_matches_the_worked_example(capsys):
    assert main(["cost", "all_reduce", "--nbytes", "14GB", "--ranks", "8", "--link", "nvlink4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"op", "algo", "n_ranks", "nbytes", "link", "time_s", "algbw_GBps", "busbw_GBps"}
    assert out["time_s"] == pytest.approx(0.0544, abs=5e-4)
    assert out["busbw_GBps"] == pytest.approx(out["algbw_GBps"] * 1.75)


@pytest.mark.parametrize("argv, needle", [
    (["simulate", "ring-all-reduce", "--ranks", "0"], "0"),
    (["simulate", "ring-all-reduce", "--ranks", "four"], "four"),
    (["simulate", "star", "--ranks", "4"], "star"),
    (["cost", "all_reduce", "--nbytes", "-5", "--ranks", "4", "--link", "nvlink4"], "-5"),
    (["cost", "all_reduce", "--nbytes", "lots", "--ranks", "4", "--link", "nvlink4"], "lots"),
    (["cost", "all_reduce", "--nbytes", "1M", "--ranks", "4", "--link", "warp"], "warp"),
    (["cost", "all_reduce", "--nbytes", "1M", "--ranks", "4", "--link", "nvlink4", "--algo", "star"], "star"),
    (["cost", "everything", "--nbytes", "1M", "--ranks", "4", "--link", "nvlink4"], "everything"),
])
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err
