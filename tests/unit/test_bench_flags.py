"""`commlab bench`'s nccl-tests flags and outputs, without starting ranks: sizes as nccl-tests parses them,
-c N, -i, -g/-t, outputs checked before the sweep, nccl-tests' -J schema, the CSV, NCCL_TESTS_MIN_BW."""
from __future__ import annotations

import csv
import io
import json

import pytest

from commlab.bench import BenchConfig, BenchResult
from commlab.bench import nccl_json
from commlab.bench.config import MAX_SIZES, parse_size
from commlab.bench.outputs import csv_text
from commlab.cli import main
from commlab.errors import CommlabError
from commlab.nccl import Measure, Row, parse_log


@pytest.fixture(autouse=True)
def _no_sweep(monkeypatch):
    """Nothing here may start ranks: bad input must be refused before any sweep."""
    import commlab.bench.notebook as notebook

    def refuse(*args, **kwargs):
        raise AssertionError("a sweep was started")

    monkeypatch.setattr(notebook, "run_sweep", refuse)


@pytest.mark.parametrize("text, nbytes", [
    ("8", 8), ("8m", 8 * 2**20), ("8M", 8 * 2**20), ("1g", 2**30), ("1G", 2**30), ("64k", 65536),
    ("1.5k", 1536), ("0.5m", 2**19), ("64MiB", 64 * 2**20), ("1GB", 10**9)])
def test_sizes_are_read_as_nccl_tests_parsesize_reads_them(text, nbytes):
    """nccl-tests' parsesize (src/common.cu): sscanf("%lf %1s"), K/M/G in either case, binary."""
    assert parse_size(text) == nbytes


def test_check_iterations_step_bytes_and_their_limits():
    assert BenchConfig("all_reduce", check=3).check == 3 and BenchConfig("all_reduce", check=False).check == 0
    config = BenchConfig("all_reduce", "1k", "4k", step_nbytes="1k")
    assert config.sizes_nbytes() == [1024, 2048, 3072, 4096] and config.preamble()["step"] == "1024(bytes)"
    with pytest.raises(CommlabError, match=f"gives more than {MAX_SIZES} sizes"):
        BenchConfig("all_reduce", 1, "1M", step_nbytes=1)
    with pytest.raises(CommlabError, match=r"check iterations \(-c\) must be a whole number >= 0, got -1"):
        BenchConfig("all_reduce", check=-1)


def _one_line_error(capsys, argv) -> str:
    assert main(["bench", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("commlab bench: error: ")
    return err


@pytest.mark.parametrize("argv, words", [
    (["all_reduce", "-g", "8"], "-g 8: commlab bench runs one rank per process"),
    (["all_reduce", "-t", "2"], "-t 2: commlab bench runs one rank per process"),
    (["all_reduce", "-f", "4", "-i", "1M"], "-f 4 and -i 1M: give one of them"),
    (["all_reduce", "-e", "8q"], "-e must be a size such as 8, 64K, 8m, 1G"),
    (["all_reduce", "-c", "x"], "-c must be a whole number, got 'x'"),
    (["all_reduce", "--timeout", "0"], "--timeout must be a number of seconds > 0, got '0'"),
])
def test_flags_commlab_does_not_take_are_refused_pointing_to_the_right_one(capsys, argv, words):
    err = _one_line_error(capsys, argv)
    assert words in err
    assert argv[1] not in ("-g", "-t") or "start N ranks with --ranks N" in err


def test_every_output_is_checked_before_the_sweep(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cases = [
        (["--json-out", str(blocker / "rows.json")], "cannot write --json-out"),
        (["--csv", str(tmp_path)], f"cannot write --csv {str(tmp_path)!r}: it is a directory"),
        (["-J", str(tmp_path / "rows.txt")], "cannot write -J .*: the file name must end in .json"),
        (["--plot", str(tmp_path / "p.xyz")], "cannot write --plot .*: the file name must end in"),
        (["--plot", str(tmp_path / "p.png"), "--link", "nvlink9"], "unknown link"),
        (["--link", "nvlink4"], "--link nvlink4 draws the roof of --plot: give --plot FILE too"),
    ]
    import re

    for extra, words in cases:
        assert re.search(words, _one_line_error(capsys, ["all_reduce", *extra])), extra


def test_a_bad_nccl_tests_min_bw_is_refused(capsys, monkeypatch):
    monkeypatch.setenv("NCCL_TESTS_MIN_BW", "fast")
    assert "NCCL_TESTS_MIN_BW must be a bandwidth in GB/s, got 'fast'" in _one_line_error(capsys, ["all_reduce"])


def _result(partial=None, wrong=0) -> BenchResult:
    config = BenchConfig("all_reduce", 1024, 4096, iters=7, check=2)
    rows = []
    for size in config.sizes_nbytes():
        t_us = 10.0 + size / 1000
        algbw = size / (t_us * 1e-6) / 1e9
        rows.append(Row(size, size // 4, "float", "sum", -1, Measure(t_us, algbw, algbw, wrong),
                        Measure(t_us, algbw, algbw, 0)))
    devices = tuple({"pid": 100 + r, "host": "node", "device": "-", "name": "CPU (cpu)"} for r in range(2))
    return BenchResult("all_reduce", 2, "gloo", "float", tuple(rows[:2] if partial else rows), config, devices,
                       "# commlab version 0.1.0 torch=2.13.0", partial)


def test_nccl_tests_json_has_its_keys_in_its_order():
    """The keys and their order as nccl-tests' src/util.cu (JSON_FILE_VERSION 3) writes them."""
    doc = nccl_json.document(_result(), ["commlab", "bench", "all_reduce"], "2025-01-01 00:00:00",
                             env={"NCCL_DEBUG": "INFO", "HF_TOKEN": "hf_secret"})
    assert list(doc) == ["version", "start_time", "args", "env", "nccl_version", "config", "results",
                         "out_of_bounds", "average_bus_bandwidth", "errors", "end_time"]
    assert doc["version"] == 3 and doc["nccl_version"] is None
    assert doc["env"] == ["NCCL_DEBUG=INFO", "HF_TOKEN=<redacted>"]
    assert list(doc["config"]) == ["nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor",
                                   "warmup_iters", "iterations", "aggregated_iterations", "validation", "graph",
                                   "blocking_collectives", "per_iter_timing", "per_iter_skip", "parallel_init",
                                   "devices"]
    assert doc["config"]["validation"] == 2 and doc["config"]["blocking_collectives"] == "false"
    assert list(doc["config"]["devices"][1]) == ["rank", "group", "pid", "hostname", "device", "device_hex",
                                                 "device_info"]
    first = doc["results"][0]
    assert list(first) == ["size", "count", "type", "redop", "root", "out_of_place", "in_place",
                           "actual_iterations", "experiment_name"]
    assert first["root"] == "    -1" and first["actual_iterations"] == 7 and first["experiment_name"] == ""
    assert list(first["out_of_place"]) == ["time", "alg_bw", "bus_bw", "nwrong"]
    assert first["out_of_place"]["nwrong"] == 0.0
    assert doc["out_of_bounds"] == {"count": 0, "okay": "true"}
    assert doc["average_bus_bandwidth"]["okay"] == "unchecked" and doc["errors"] == []
    json.loads(json.dumps(doc, allow_nan=False))


def test_nccl_tests_json_min_bw_and_a_partial_sweep():
    result = _result(partial="interrupted (Ctrl-C)")
    doc = nccl_json.document(result, [], "t", min_busbw_GBps=1e6)
    assert doc["average_bus_bandwidth"]["okay"] == "false" and len(doc["results"]) == 2
    assert doc["errors"] == ["partial: interrupted (Ctrl-C); 2 of 3 sizes measured"]
    assert nccl_json.document(_result(), [], "t", min_busbw_GBps=0.0)["average_bus_bandwidth"]["okay"] == "true"


def test_nccl_tests_json_never_overwrites(tmp_path):
    path = tmp_path / "run.json"
    assert nccl_json.free_path(str(path)) == str(path)
    path.write_text("{}")
    (tmp_path / "run.json.0").write_text("{}")
    assert nccl_json.free_path(str(path)) == str(path) + ".1"


def test_csv_has_one_line_per_size_with_the_tables_values():
    result = _result()
    rows = list(csv.DictReader(io.StringIO(csv_text(result))))
    table = parse_log(result.table()).rows
    assert [int(r["size_bytes"]) for r in rows] == [r.size_bytes for r in table]
    assert [float(r["oop_busbw_GBps"]) for r in rows] == pytest.approx([r.oop.busbw_GBps for r in table], abs=0.006)
    partial = csv_text(_result(partial="interrupted (Ctrl-C)"))
    assert partial.startswith("# partial: interrupted (Ctrl-C); 2 of 3 sizes measured\nsize_bytes,")


def test_the_table_opens_with_the_versions_and_says_ok_or_failed_against_a_minimum():
    result = _result()
    lines = result.table().splitlines()
    assert lines[0] == "# commlab version 0.1.0 torch=2.13.0"
    assert lines[1] == "# Collective test starting: all_reduce_perf"
    assert result.table(min_busbw_GBps=1e6).count(" FAILED") == 1
    assert result.below_min_bw(1e6) and not result.below_min_bw(None)
    partial = _result(partial="rank 1 failed (RuntimeError: boom)")
    assert "# partial: rank 1 failed (RuntimeError: boom); 2 of 3 sizes measured" in partial.table()
    assert partial.to_json()["partial"] == "rank 1 failed (RuntimeError: boom); 2 of 3 sizes measured"
    assert [r.size_bytes for r in parse_log(partial.table()).rows] == [1024, 2048]
