"""The topology lab: the reference layout and the checks of parallel groups against real published
topologies, the groups as gloo process groups, and the script (labs/scripts/topology.py)."""
from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from commlab import topology
from commlab.labs.solutions import topology as lab

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SCRIPT = Path(__file__).resolve().parents[2] / "labs" / "scripts" / "topology.py"
EIGHT = ("h100-sxm-8", "a100-sxm-8", "v100-sxm2-8", "a40-pcie-8")
SIZES = [(t, p, 8 // (t * p)) for t in (1, 2, 4, 8) for p in (1, 2, 4, 8) if 8 % (t * p) == 0]


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def _run(args: list[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout_s)


def _is_grid(groups, tp, pp, dp) -> bool:
    """Independent check: (TP group, DP group, PP group) of each GPU is unique, and groups have their sizes."""
    where = {kind: {g: k for k, grp in enumerate(groups[kind]) for g in grp} for kind in ("tp", "dp", "pp")}
    triples = {(where["tp"][g], where["dp"][g], where["pp"][g]) for g in range(8)}
    sizes_ok = all(len(grp) == n for kind, n in (("tp", tp), ("pp", pp), ("dp", dp)) for grp in groups[kind])
    return len(triples) == 8 and sizes_ok


def _tp_on_nvlink(topo, groups) -> bool:
    return all(topology.nvlink_count(topo.relation(i, j)) > 0
               for grp in groups["tp"] for i, j in itertools.combinations(grp, 2))


@pytest.mark.parametrize("name", EIGHT)
def test_reference_layout_is_a_grid_and_the_check_agrees_with_the_wiring(name):
    topo = topology.example(name)
    for tp, pp, dp in SIZES:
        groups, problems = lab.try_choose(lab.choose_groups, topo, tp, pp, dp)
        assert _is_grid(groups, tp, pp, dp), (name, tp, pp, dp, groups)
        assert (problems == []) == _tp_on_nvlink(topo, groups), (name, tp, pp, dp, problems)


def test_the_lab_sizes_fit_all_three_machines_and_tp_4_does_not():
    sizes = lab.my_sizes()
    assert sizes["tp"] * sizes["pp"] * sizes["dp"] == 8
    for name in ("h100-sxm-8", "v100-sxm2-8", "a40-pcie-8"):
        assert lab.try_choose(lab.choose_groups, topology.example(name), **sizes)[1] == []
    problems = lab.try_choose(lab.choose_groups, topology.example("a40-pcie-8"), 4, 2, 1)[1]
    assert problems[0].startswith("TP group [0, 1, 2, 3] is not on NVLink: GPU0 and GPU2 are joined by NODE")


def test_check_groups_names_each_kind_of_mistake():
    a40 = topology.example("a40-pcie-8")
    good = {"tp": [[0, 1], [2, 3], [4, 5], [6, 7]], "dp": [[0, 2], [1, 3], [4, 6], [5, 7]],
            "pp": [[0, 4], [1, 5], [2, 6], [3, 7]]}
    assert lab.check_groups(a40, good, 2, 2, 2) == []
    assert "must multiply" in lab.check_groups(a40, good, 2, 2, 4)[0]
    twice = dict(good, pp=[[0, 4], [0, 5], [2, 6], [3, 7]])
    assert lab.check_groups(a40, twice, 2, 2, 2)[0] == ("pp: every GPU must be in exactly one pp group; twice: [0], "
                                                        "missing: [1]")
    sized = dict(good, dp=[[0, 2, 1, 3], [4, 6, 5, 7]])
    assert "every group must have dp=2 GPUs" in lab.check_groups(a40, sized, 2, 2, 2)[0]
    same = dict(good, dp=[[0, 1], [2, 3], [4, 5], [6, 7]])
    assert lab.check_groups(a40, same, 2, 2, 2)[0].startswith("tp group [0, 1] and dp group [0, 1] share GPUs [0, 1]")
    crossing = {"tp": [[0, 2], [1, 3], [4, 6], [5, 7]], "dp": [[0, 1], [2, 3], [4, 5], [6, 7]], "pp": good["pp"]}
    assert lab.check_groups(a40, crossing, 2, 2, 2)[0].startswith("TP group [0, 2] is not on NVLink")
    assert lab.check_groups(a40, [[0, 1]], 2, 2, 2)[0].startswith("choose_groups must return a dict")


def _not_written(topo, tp, pp, dp):
    raise NotImplementedError("write choose_groups")


def test_try_choose_reports_missing_code_and_sizes_in_words():
    a40 = topology.example("a40-pcie-8")
    assert "not written yet" in lab.try_choose(_not_written, a40, 2, 2, 2)[1][0]
    assert "whole numbers >= 1" in lab.try_choose(lab.choose_groups, a40, None, 2, 2)[1][0]


def test_sub_topology_keeps_the_relations_of_the_chosen_gpus():
    v100 = topology.example("v100-sxm2-8")
    part = lab.sub_topology(v100, [4, 0, 7])
    assert part.n_gpus == 3 and [g.index for g in part.gpus] == [0, 1, 2]
    assert [[part.relation(i, j) for j in range(3)] for i in range(3)] == \
        [[v100.relation(a, b) for b in (4, 0, 7)] for a in (4, 0, 7)]


def test_groups_become_process_groups_that_reduce_inside_themselves():
    half = lab.sub_topology(topology.example("a40-pcie-8"), range(4))
    groups, problems = lab.try_choose(lab.choose_groups, half, 2, 1, 2)
    assert problems == []
    outcome = lab.check_process_groups(groups, 4)
    assert outcome.ok, outcome.problem
    assert outcome.details["sums"][3] == {"tp": (5, [2, 3]), "pp": (3, [3]), "dp": (4, [1, 3])}


def test_script_by_itself_right_and_wrong_layouts():
    right = _run([str(SCRIPT), "--ranks", "4"])
    assert right.returncode == 0, right.stderr[-2000:]
    assert "tp=2 pp=1 dp=2 on 4 ranks: right" in right.stdout and "CPU memory copy" in right.stdout
    wrong = _run([str(SCRIPT), "--ranks", "4", "--tp", "4"])
    assert wrong.returncode == 1 and "is not on NVLink" in wrong.stdout


def test_script_under_torchrun():
    done = _run(["-m", "torch.distributed.run", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                 "--rdzv-endpoint", "127.0.0.1:0", str(SCRIPT), "--example", "v100-sxm2-8"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tp=2 pp=1 dp=1 on 2 ranks: right" in done.stdout
