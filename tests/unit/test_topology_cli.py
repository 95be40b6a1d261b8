"""`commlab topo` through commlab.cli.main: text, JSON, files, examples, and errors as one line with exit 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from commlab.cli import main
from commlab.topology import example, parse_topo_text

DATA = Path(__file__).resolve().parents[1] / "data" / "topo"


def run_json(capsys, *argv) -> dict:
    assert main(["topo", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_example_as_json(capsys):
    data = run_json(capsys, "--example", "h100-sxm-8")
    assert data["gpus"] == ["NVIDIA H100 80GB HBM3"] * 8
    assert data["matrix"] == [list(row) for row in example("h100-sxm-8").matrix]
    assert data["nvlink_groups"] == [list(range(8))] and data["ring_order"] == list(range(8))
    assert [nic["name"] for nic in data["nics"]] == [f"mlx5_{k}" for k in range(8)]
    assert data["nics"][2]["relations"][2] == "PIX"
    assert data["source"] == "example: h100-sxm-8" and data["reason"] == ""


def test_from_file_as_json_matches_the_parser(capsys):
    path = DATA / "v100_sxm2_8gpu_hybrid_cube_mesh.txt"
    data = run_json(capsys, "--from-file", str(path))
    assert data["matrix"] == [list(row) for row in parse_topo_text(path.read_text()).matrix]
    assert data["gpus"] == [f"GPU{i}" for i in range(8)]
    assert data["nvlink_groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_text_output_has_the_aligned_matrix_and_the_advice(capsys):
    assert main(["topo", "--example", "pcie-4gpu"]) == 0
    out = capsys.readouterr().out
    assert "GPU0     X      PHB     SYS     SYS     PHB     SYS     0-5     0" in out
    assert "NVLink groups: {0} {1} {2} {3}" in out and "No NVLink" in out


def test_this_machine_without_gpus_says_why_and_suggests_an_example(capsys, monkeypatch):
    from commlab import topology
    from commlab.topology.model import Topology

    monkeypatch.setattr(topology, "read", lambda: Topology.unavailable("NVML library not found (test)"))
    assert main(["topo"]) == 0
    out = capsys.readouterr().out
    assert "NVML library not found (test)" in out and "--example" in out and "h100-sxm-8" in out
    assert main(["topo", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpus"] == [] and data["reason"] == "NVML library not found (test)"


@pytest.mark.parametrize("argv, words", [
    (["--example", "nope"], "unknown example topology 'nope'"),
    (["--from-file", "/no/such/file.txt"], "cannot read FILE '/no/such/file.txt'"),
])
def test_user_errors_are_one_line_and_exit_2(capsys, argv, words):
    assert main(["topo", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("commlab topo: error:") and words in err and "\n" not in err


def test_bad_file_contents_are_one_line_and_exit_2(capsys, tmp_path):
    bad = tmp_path / "topo.txt"
    bad.write_text("not a topology\n")
    assert main(["topo", "--from-file", str(bad)]) == 2
    assert "expected the text of `nvidia-smi topo -m`" in capsys.readouterr().err


def test_from_file_and_example_exclude_each_other():
    with pytest.raises(SystemExit) as info:
        main(["topo", "--example", "h100-sxm-8", "--from-file", "x"])
    assert info.value.code == 2
