"""parse_topo_text against real `nvidia-smi topo -m` outputs (tests/data/topo, each naming its source).

Expected values below were read off the published texts by eye, not produced by the parser.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commlab.errors import CommlabError
from commlab.topology import Gpu, Topology, format_matrix, parse_topo_text

DATA = Path(__file__).resolve().parents[1] / "data" / "topo"
FILES = sorted(DATA.glob("*.txt"))


def load(name: str) -> Topology:
    return parse_topo_text((DATA / name).read_text())


def test_every_file_names_its_source_on_the_first_line():
    assert len(FILES) >= 10
    for path in FILES:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# source: https://github.com/"), path.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_real_outputs_parse_to_square_symmetric_matrices_with_x_on_the_diagonal(path):
    topo = parse_topo_text(path.read_text())
    n = topo.n_gpus
    assert n >= 1 and topo.source == "nvidia-smi text" and topo.reason == ""
    for i in range(n):
        assert topo.relation(i, i) == "X"
        for j in range(n):
            assert topo.relation(i, j) == topo.relation(j, i)


def test_nvswitch_box_with_twelve_nics_and_a_nic_legend():
    topo = load("nv18_8gpu_12nic_spaces.txt")
    assert topo.n_gpus == 8
    assert {topo.relation(i, j) for i in range(8) for j in range(8) if i != j} == {"NV18"}
    assert [nic.label for nic in topo.nics] == [f"NIC{k}" for k in range(12)]
    assert [nic.name for nic in topo.nics] == [f"mlx5_{k}" for k in range(12)]
    assert topo.nics[9].relations == ("SYS", "SYS", "SYS", "SYS", "NODE", "PIX", "NODE", "NODE")
    assert topo.gpus[0].cpu_affinity == "4,6,8,10,12" and topo.gpus[0].numa_node == 0
    assert topo.gpus[7].cpu_affinity == "1,3,5,7,9,11" and topo.gpus[7].numa_node == 1


def test_tab_separated_output_with_a_nic_legend_that_is_not_the_identity():
    topo = load("h20_8gpu_8nic_tabs.txt")
    assert topo.nics[0].name == "mlx5_1" and topo.nics[7].name == "mlx5_8"
    assert topo.nics[3].relations == ("NODE", "NODE", "NODE", "PIX", "SYS", "SYS", "SYS", "SYS")
    assert topo.gpus[4].cpu_affinity == "48-95,144-191" and topo.gpus[4].numa_node == 1


def test_tabs_and_their_terminal_copy_read_the_same():
    text = (DATA / "h20_8gpu_8nic_tabs.txt").read_text()
    spaced = "\n".join(line.expandtabs(8) for line in text.splitlines())
    assert "\t" not in spaced
    assert parse_topo_text(spaced) == parse_topo_text(text)


def test_ansi_underline_on_the_header_is_ignored():
    text = (DATA / "h20_8gpu_8nic_tabs.txt").read_text()
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("\tGPU0"))
    lines[k] = "\x1b[4m" + lines[k] + "\x1b[0m"
    assert parse_topo_text("\n".join(lines)) == parse_topo_text(text)


def test_the_source_comment_line_is_skipped():
    text = (DATA / "two_gpu_phb_hf.txt").read_text()
    assert parse_topo_text(text) == parse_topo_text(text.split("\n", 1)[1])


def test_old_driver_with_device_named_nic_columns_and_nvlink_mesh():
    topo = load("v100_sxm2_8gpu_hybrid_cube_mesh.txt")
    assert topo.matrix[0] == ("X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS")
    assert topo.matrix[5] == ("SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1")
    assert [(nic.label, nic.name) for nic in topo.nics] == [("mlx5_0", "mlx5_0")]
    assert topo.nics[0].relations == ("NODE", "NODE", "PIX", "PIX", "SYS", "SYS", "SYS", "SYS")
    assert topo.gpus[4].cpu_affinity == "12-23,36-47" and topo.gpus[4].numa_node is None


def test_shell_prompt_before_the_header_and_pcie_switch_relations():
    topo = load("a5000_8gpu_pcie_prompt.txt")
    assert topo.matrix[2] == ("PXB", "PXB", "X", "PIX", "SYS", "SYS", "SYS", "SYS")
    assert [nic.name for nic in topo.nics] == ["mlx5_0", "mlx5_1"]
    assert topo.gpus[5].cpu_affinity == "16-31" and topo.gpus[5].numa_node == 1


def test_values_of_an_older_driver_that_are_not_aligned_under_their_headers():
    topo = load("two_gpu_phb_hf.txt")
    assert topo.matrix == (("X", "PHB"), ("PHB", "X"))
    assert topo.gpus[1].cpu_affinity == "0-11" and topo.gpus[1].numa_node is None


def test_one_gpu_with_empty_affinity_fields():
    topo = load("rtx2080s_1gpu_windows_tabs.txt")
    assert topo.matrix == (("X",),)
    assert topo.gpus[0].cpu_affinity is None and topo.gpus[0].numa_node is None


def test_nvlink_mesh_of_four_h100_with_nic_rows_and_trailing_blank():
    topo = load("h100_4gpu_nv6_4nic.txt")
    assert {topo.relation(i, j) for i in range(4) for j in range(4) if i != j} == {"NV6"}
    assert [nic.relations.index("PIX") for nic in topo.nics] == [0, 1, 2, 3]
    assert [gpu.numa_node for gpu in topo.gpus] == [3, 1, 7, 5]


def test_five_gpus_with_a_prompt_and_tab_padding():
    topo = load("five_gpu_node_phb_tabs.txt")
    assert topo.relation(3, 4) == "PHB" and topo.relation(0, 4) == "NODE"
    assert [gpu.numa_node for gpu in topo.gpus] == [0] * 5


@pytest.mark.parametrize("text, expected", [
    ("", "no header line"),
    ("Legend:\n  X = Self\n", "no header line"),
    ("\tGPU0\tGPU1\nGPU0\t X \tPIXNODE\nGPU1\tPHB\t X \n", "row GPU0: expected 2 relations"),
    ("\tGPU0\tGPU1\nGPU0\t X \tPHB\n", "no row for GPU1"),
    ("\tGPU0\tGPU1\nGPU0\tPHB\tPHB\nGPU1\tPHB\t X \n", "expected X where it meets its own column"),
    ("        GPU1    GPU0\nGPU1     X      NV2\nGPU0    NV2      X\n", "GPU0, GPU1, ... first and in order"),
    ("\tGPU0\tGPU1\nGPU0\t X \tFAST\nGPU1\tFAST\t X \n", "(X, NV#, PIX, PXB, PHB, NODE or SYS)"),
])
def test_bad_text_raises_commlab_error_saying_what_was_expected(text, expected):
    with pytest.raises(CommlabError, match="expected") as info:
        parse_topo_text(text)
    assert expected in str(info.value)


def test_not_text_is_refused():
    with pytest.raises(CommlabError, match="got a bytes"):
        parse_topo_text(b"GPU0")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_format_then_parse_gives_back_the_matrix_and_nics(path):
    topo = parse_topo_text(path.read_text())
    again = parse_topo_text(format_matrix(topo, legend=True))
    assert again.matrix == topo.matrix
    assert [(n.name, n.relations) for n in again.nics] == [(n.name, n.relations) for n in topo.nics]
    assert [(g.cpu_affinity, g.numa_node) for g in again.gpus] == [(g.cpu_affinity, g.numa_node) for g in topo.gpus]


_CELLS = st.sampled_from(["NV1", "NV2", "NV4", "NV12", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 9), data=st.data())
def test_any_symmetric_matrix_survives_format_and_parse(n, data):
    cells = {(i, j): data.draw(_CELLS) for i in range(n) for j in range(i + 1, n)}
    matrix = tuple(tuple("X" if i == j else cells[min(i, j), max(i, j)] for j in range(n)) for i in range(n))
    topo = Topology(gpus=tuple(Gpu(i) for i in range(n)), matrix=matrix)
    assert parse_topo_text(format_matrix(topo)).matrix == matrix


# The shipped examples (commlab/data/topology): each names its source, title, GPU model and PCIe generation.

def test_every_shipped_example_carries_the_four_header_comments():
    from importlib import resources

    from commlab.topology import example_names

    assert "v100-sxm2-8" in example_names()
    folder = resources.files("commlab").joinpath("data", "topology")
    for name in example_names():
        header = [line for line in folder.joinpath(f"{name}.txt").read_text().splitlines() if line.startswith("#")]
        assert header[0].startswith("# source: https://github.com/"), name
        assert [line.split(":")[0] for line in header[:4]] == ["# source", "# title", "# gpu_name", "# pcie_gen"]


def test_the_dgx1_v100_example_is_the_published_hybrid_cube_mesh():
    from commlab.topology import example

    topo = example("v100-sxm2-8")
    # rows 0 and 7 as printed in DLPerf's Wide & Deep report (read by eye)
    assert topo.matrix[0] == ("X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS")
    assert topo.matrix[7] == ("SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X")
    assert {gpu.name for gpu in topo.gpus} == {"Tesla V100-SXM2-16GB"}
    assert {gpu.pcie_gen_max for gpu in topo.gpus} == {3}
    assert topo.nics[0].relations == ("NODE", "NODE", "PIX", "PIX", "SYS", "SYS", "SYS", "SYS")
    assert topo.matrix == load("v100_sxm2_8gpu_hybrid_cube_mesh.txt").matrix   # DLPerf's other report, same box


def test_the_dgx1_v100_example_advice_keeps_tp_inside_a_cube_face():
    from commlab.topology import advice, example

    # Worked out by hand from the matrix: GPU i's NVLink peers are
    #   0: 1 2 3 4   1: 0 2 3 5   2: 0 1 3 6   3: 0 1 2 7
    #   4: 0 5 6 7   5: 1 4 6 7   6: 2 4 5 7   7: 3 4 5 6
    # {0,1,2,3} and {4,5,6,7} are fully joined (4-cliques). No fifth GPU joins either: its one link into the
    # other quad (0-4, 1-5, 2-6, 3-7) reaches a single member. So the two quads, and TP <= 4.
    got = advice(example("v100-sxm2-8"))
    assert got.nvlink_groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert got.tp_size == 4
    # The NV2 pairs 0-3, 3-2, 2-1, 1-5, 5-6, 6-7, 7-4, 4-0 close a ring of 8, so no hop needs to be NV1 or SYS.
    assert got.ring_bottleneck == "NV2"
