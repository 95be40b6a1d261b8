"""`commlab simulate` at large N: what it lists stays small enough to answer in seconds, and what it refuses
is refused with the limit in a one-line message (exit 2), never a MemoryError."""
from __future__ import annotations

import json

import pytest

from commlab import schedules
from commlab.cli import main
from commlab.errors import CommlabError


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("commlab simulate: error: ")
    return err


@pytest.mark.parametrize("n", [2048, 4096])
def test_a_ring_too_large_to_list_is_refused_with_the_limit(capsys, n):
    err = _one_line_error(capsys, ["simulate", "ring-all-reduce", "--ranks", str(n)])
    assert f"--ranks {n}" in err and f"{2 * n * (n - 1):,} transfers" in err and "up to 256 ranks" in err


def test_the_largest_ring_listed_runs_and_is_correct(capsys):
    assert main(["simulate", "ring-all-reduce", "--ranks", "256", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["correct"] and len(data["steps"]) == 2 * 255 and sum(map(len, data["steps"])) == 2 * 256 * 255


@pytest.mark.parametrize("algorithm", ["naive-all-reduce", "recursive-doubling-all-reduce", "double-tree-all-reduce"])
def test_the_advertised_maximum_of_4096_ranks_runs_for_the_other_algorithms(capsys, algorithm):
    assert main(["simulate", algorithm, "--ranks", "4096", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n_ranks"] == 4096 and data["correct"] is True


@pytest.mark.parametrize("argv, words", [
    (["--ranks", "4", "--nbytes", "1e300"], "--nbytes must be at most 1 PiB (1125899906842624 bytes), got '1e300'"),
    (["--ranks", "4097"], "from 1 to 4096, got 4097"),
])
def test_sizes_and_counts_beyond_the_limits_are_one_line_errors(capsys, argv, words):
    assert words in _one_line_error(capsys, ["simulate", "ring-all-reduce", *argv])


def test_building_a_ring_schedule_beyond_its_budget_is_a_commlab_error_not_a_memory_error():
    with pytest.raises(CommlabError, match="ring-all-reduce on 4096 ranks has 33,546,240 transfers.*up to 1025 ranks"):
        schedules.build("ring-all-reduce", 4096)
    assert schedules.quadratic_transfers("ring-all-gather", 8) == len(schedules.build("ring-all-gather", 8).transfers())
    assert schedules.quadratic_transfers("ring-all-reduce", 8) == len(schedules.build("ring-all-reduce", 8).transfers())


@pytest.mark.parametrize("algorithm", ["ring-reduce-scatter", "ring-all-gather", "ring-all-reduce",
                                       "halving-doubling-all-reduce", "pat-all-gather", "pat-reduce-scatter"])
def test_quadratic_counts_match_the_built_schedules(algorithm):
    for n in (1, 2, 3, 5, 6, 7, 8, 12, 16, 33):
        assert schedules.quadratic_transfers(algorithm, n) == len(schedules.build(algorithm, n).transfers()), n


@pytest.mark.parametrize("algorithm", ["halving-doubling-all-reduce", "pat-all-gather", "pat-reduce-scatter"])
def test_every_quadratic_schedule_is_limited_in_simulate_with_the_limit_named(capsys, algorithm):
    words = _one_line_error(capsys, ["simulate", algorithm, "--ranks", "4096"])
    assert "at most 131,072" in words and f"{algorithm} is simulated on up to" in words
