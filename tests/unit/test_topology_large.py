"""`commlab topo --from-file` answers any matrix the parser accepts: all-NVLink machines of hundreds of GPUs and
graphs built to make a clique search exponential (Moon and Moser, 1965) alike."""
from __future__ import annotations

import itertools
import subprocess
import sys

from commlab.topology import nvlink_count, nvlink_groups, parse_topo_text
from commlab.topology.advice import advice, nvlink_grouping


def matrix_text(n: int, nvlinked) -> str:
    """``nvidia-smi topo -m`` text for n GPUs, NV2 where ``nvlinked(i, j)``, SYS elsewhere."""
    lines = ["\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity"]
    for i in range(n):
        cells = ["X" if i == j else ("NV2" if nvlinked(i, j) else "SYS") for j in range(n)]
        lines.append(f"GPU{i}\t" + "\t".join(cells) + "\t0-63\t0")
    return "\n".join(lines) + "\n"


def _is_clique(topo, group) -> bool:
    return all(nvlink_count(topo.relation(a, b)) for a, b in itertools.combinations(group, 2))


def _check_partition(topo, groups) -> None:
    assert sorted(g for group in groups for g in group) == list(range(topo.n_gpus))
    assert all(_is_clique(topo, g) for g in groups)


def test_an_all_nvlink_matrix_of_300_gpus_is_one_group_found_exactly(tmp_path):
    path = tmp_path / "nvswitch-300.txt"
    path.write_text(matrix_text(300, lambda i, j: True))
    done = subprocess.run([sys.executable, "-m", "commlab", "topo", "--from-file", str(path), "--json"],
                          capture_output=True, text=True, timeout=120)  # a guard against a hang, not a timing
    assert done.returncode == 0, done.stderr
    assert '"tp_size": 300' in done.stdout
    topo = parse_topo_text(path.read_text())
    assert nvlink_grouping(topo) == ((tuple(range(300)),), True)


def test_nvlink_islands_are_found_exactly_without_a_search():
    topo = parse_topo_text(matrix_text(96, lambda i, j: i // 8 == j // 8))  # twelve 8-GPU NVSwitch boxes
    groups, exact = nvlink_grouping(topo, budget=0)
    assert exact and groups == tuple(tuple(range(8 * k, 8 * k + 8)) for k in range(12))


def test_a_graph_with_exponentially_many_cliques_is_grouped_greedily_and_says_so():
    # complete multipartite graph on 20 triangles: 3**20 maximal cliques of 20 GPUs each
    topo = parse_topo_text(matrix_text(60, lambda i, j: i // 3 != j // 3))
    groups, exact = nvlink_grouping(topo, budget=2000)
    assert not exact
    _check_partition(topo, groups)
    assert len(groups[0]) == 20  # one GPU of every triangle: the largest clique
    said = advice(topo).sentences[0]
    assert said.startswith("The NVLink groups of these 60 GPUs were found greedily")


def test_a_small_hybrid_graph_is_still_searched_exactly():
    # two 4-cliques joined by a perfect matching (the V100 hybrid cube-mesh shape)
    edges = {frozenset(p) for q in (range(4), range(4, 8)) for p in itertools.combinations(q, 2)}
    edges |= {frozenset((i, i + 4)) for i in range(4)}
    topo = parse_topo_text(matrix_text(8, lambda i, j: frozenset((i, j)) in edges))
    assert nvlink_grouping(topo) == (((0, 1, 2, 3), (4, 5, 6, 7)), True)
    assert nvlink_groups(topo) == ((0, 1, 2, 3), (4, 5, 6, 7))
