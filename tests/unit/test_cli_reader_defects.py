"""What a reader of the README and a practitioner with nccl-tests logs met on the command line: the short
names of the schedules, sizes echoed as written, a "wrote FILE" line per file, a scorecard that fits 100
columns and marks its misses, an unnamed NV18, PHB advice that does not contradict itself, even numbers, and
a busbw panel whose limits enclose the data."""
from __future__ import annotations

import json
import re

import matplotlib
import numpy as np
import pytest

from commlab.cli import main
from commlab.nccl.examples import nccl_tests_log

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen

NV18 = ("\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
        + "".join(f"GPU{i}\t" + "\t".join(" X " if i == j else "NV18" for j in range(4)) + "\t0-47\t0\n"
                  for i in range(4)))
PHB = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPHB\t0-47\t0\nGPU1\tPHB\t X \t0-47\t0\n"


@pytest.mark.parametrize("short, name", [("ring", "ring-all-reduce"), ("Ring", "ring-all-reduce"),
                                         ("tree", "tree-all-reduce"), ("double-tree", "double-tree-all-reduce"),
                                         ("halving-doubling", "halving-doubling-all-reduce")])
def test_simulate_takes_the_short_name_a_reader_uses(short, name, capsys):
    assert main(["simulate", short, "--ranks", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["algorithm"] == name


def test_animate_takes_ring_and_says_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "ring.html"
    assert main(["animate", "ring", "--ranks", "3", "--out", str(out)]) == 0
    assert out.is_file() and f"wrote {out}" in capsys.readouterr().out


def test_an_unknown_name_lists_the_short_names_too(capsys):
    assert main(["simulate", "rung", "--ranks", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ring (= ring-all-reduce)" in err and "'rung'" in err


@pytest.mark.parametrize("size, echoed", [("1G", "1 GiB"), ("64M", "64 MiB"), ("14GB", "14 GB"),
                                          ("1.5GiB", "1.5 GiB"), ("1000003", "1 MB (1,000,003 bytes)")])
def test_cost_echoes_the_size_exactly(size, echoed, capsys):
    assert main(["cost", "all_reduce", "--ranks", "8", "--link", "nvlink4", "--nbytes", size]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f" of {echoed} over " in first, first


def test_nccl_tests_plot_says_wrote_and_the_regimes_read_in_even_units(tmp_path, capsys):
    plot = tmp_path / "p.png"
    assert main(["nccl-tests", str(nccl_tests_log(7)), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert plot.is_file() and f"wrote {plot}" in out.splitlines()
    regimes = [line for line in out.splitlines() if line.strip().startswith("regime")]
    assert regimes and all(re.search(r"B = \d{1,3}(\.\d+)? [KMGT]?B/s", line) for line in regimes), regimes
    assert not re.search(r"B = 0\.0\d+ GB/s", out)


def test_nccl_tests_plot_under_json_keeps_stdout_json(tmp_path, capsys):
    plot = tmp_path / "p.png"
    assert main(["nccl-tests", str(nccl_tests_log(7)), "--plot", str(plot), "--json"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert f"wrote {plot}" in captured.err


def test_busbw_panel_limits_enclose_every_point_and_the_roof():
    from commlab.hardware import link
    from commlab.viz.nccl_tests_plot import LogCurve, plot_nccl_tests

    busbw = np.array([0.01, 0.1, 3.0, 84.0, 480.0])
    curve = LogCurve("run", np.array([8.0, 64.0, 4096.0, 2.0**22, 2.0**34]), busbw, np.ones(5))
    for roof in (None, link("nvlink4")):
        fig = plot_nccl_tests([curve], roof=roof)
        ax = fig.axes[0]
        low, high = ax.get_ylim()
        assert ax.get_yscale() == "log"
        assert low < busbw.min() and high > busbw.max(), (low, high)
        if roof is not None:
            assert low < roof.unidir_GBps < high
            # room above the roof for its label: a tenth of a decade at least
            assert np.log10(high) - np.log10(roof.unidir_GBps) > 0.1
        # the data spans the panel instead of being squashed against its top: >= 4 of the ~5 decades drawn
        assert np.log10(high / low) < np.log10(busbw.max() / busbw.min()) + 1.5
        plt.close(fig)


def test_scorecard_fits_100_columns_marks_each_miss_and_keeps_its_json(capsys):
    assert main(["scorecard"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    assert not any("pred>=64M" in line or "clus med" in line for line in lines)
    assert any(line.startswith("log ") and "median" in line for line in lines)
    assert any("misses its goal" in line for line in lines)                          # the legend
    goal = next(line for line in lines if line.startswith("predicted goals"))
    n_met, n_scored = map(int, re.search(r"met on (\d+) of (\d+)", goal).groups())
    marked = {line[:2] for line in lines if re.match(r"\d\d_", line) and "!" in line}
    if n_met < n_scored:
        missed = set(re.search(r"missed by ([\d, ]+)", goal).group(1).replace(" ", "").split(","))
        assert len(missed) == n_scored - n_met and missed <= marked
    assert main(["scorecard", "--json"]) == 0
    log = json.loads(capsys.readouterr().out)["logs"][0]
    assert {"log", "rows", "fitted", "predicted", "machine", "cluster"} <= set(log)


def test_topo_reads_an_unnamed_nv18_as_nvlink4(tmp_path, capsys):
    path = tmp_path / "nv18.txt"
    path.write_text(NV18)
    assert main(["topo", "--from-file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "NVLink 4 (H100)" in out and "cannot be bounded" not in out and "450 GB/s" in out


def test_topo_phb_advice_does_not_speak_of_a_bound_it_could_not_set(tmp_path, capsys):
    path = tmp_path / "phb.txt"
    path.write_text(PHB)
    assert main(["topo", "--from-file", str(path)]) == 0
    out = capsys.readouterr().out
    if "cannot be bounded" in out:
        assert "That bound" not in out
    assert "P2P" in out
