"""``commlab cluster``: list, show, cost (the issue's JSON keys), export; bad input as one-line errors."""
from __future__ import annotations

import json

import pytest

from commlab.cli import main
from commlab.cluster import cluster_cost, preset_names


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_list_and_show(capsys):
    assert main(["cluster", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in preset_names())
    listed = _json(capsys, ["cluster", "list", "--json"])["presets"]
    assert [p["name"] for p in listed] == list(preset_names())
    shown = _json(capsys, ["cluster", "show", "dgx-h100-ndr", "--json"])
    assert shown["fabric"]["rail_optimised"] and shown["fabric"]["sharp"] and shown["max_nodes"] == 8192
    assert main(["cluster", "show", "h100-16k-roce"]) == 0
    assert "arxiv.org/abs/2407.21783" in capsys.readouterr().out


def test_the_issue_command_answers_per_algorithm(capsys):
    obj = _json(capsys, ["cluster", "cost", "all_reduce", "--nbytes", "1G", "--preset", "dgx-h100-ndr",
                         "--nodes", "2048", "--algo", "all", "--json"])
    assert obj["n_ranks"] == 16384 and obj["nbytes"] == 2**30 and obj["nccl_pick"] == "nvls-tree"
    direct = cluster_cost("all_reduce", [2**30], "dgx-h100-ndr", 2048)
    for item in obj["algos"]:
        assert {"time_us", "busbw_GBps", "bottleneck"} <= set(item)
        if item["available"]:
            assert item["time_us"] == pytest.approx(float(direct[item["algo"]].time_s[0]) * 1e6)
            assert item["bottleneck"].split(":")[0] == item["bottleneck_level"]
    assert {i["algo"] for i in obj["algos"]} == set(direct.algos)


def test_one_algorithm_and_text_output(capsys):
    obj = _json(capsys, ["cluster", "cost", "allgather", "--nbytes", "256M", "--preset", "aws-p5", "--nodes", "2",
                         "--algo", "pat", "--json"])
    assert [i["algo"] for i in obj["algos"]] == ["pat"] and obj["op"] == "all_gather"
    assert main(["cluster", "cost", "all_reduce", "--nbytes", "64M", "--preset", "aws-p4de", "--nodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "cannot run: needs NVLink SHARP" in out and "NCCL's default pick" in out


@pytest.mark.parametrize("argv, words", [
    (["--preset", "dgx-h200", "--nodes", "2"], "the presets are: dgx-h100-ndr"),
    (["--preset", "dgx-h100-ndr", "--nodes", "0"], "connects 1 to 8192 nodes"),
    (["--preset", "h100-1k-superpod", "--nodes", "129"], "connects 1 to 128 nodes"),
    (["--preset", "dgx-h100-ndr", "--nodes", "2", "--algo", "ringg"], "the algorithms for all_reduce are"),
    (["--preset", "gb200-nvl72", "--nodes", "20"], "multiple of 18"),
])
def test_bad_input_is_one_line_naming_what_is_accepted(capsys, argv, words):
    assert main(["cluster", "cost", "all_reduce", "--nbytes", "1G"] + argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def test_export_writes_astra_sim_files(tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["cluster", "export", "--format", "astra-sim", "dgx-h100-ndr", "--out", str(out), "--nodes",
                 "64"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["network.yml", "remote_memory.json", "run.sh", "system.json"]
    assert main(["cluster", "export", "--format", "ns-3", "dgx-h100-ndr", "--out", str(out)]) == 2
    assert "the formats are: astra-sim" in capsys.readouterr().err
    assert main(["cluster"]) == 2
