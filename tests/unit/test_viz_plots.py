"""viz plots: bandwidth curves against a real nccl-tests log, topology heatmap, timelines, explorers' figures.
Every view renders to a non-blank PNG; bad input is a CommlabError, not an empty picture."""
import io

import matplotlib
import numpy as np
import pytest
from PIL import Image

from commlab.nccl.examples import DATA_DIR as NCCL_DATA_DIR
from commlab import hardware, overlap
from commlab.errors import CommlabError
from commlab.nccl import parse_log
from commlab.viz import (
    cost_figure, link_ratio_figure, plot_bandwidth, plot_timeline, plot_topology, png_bytes,
)

matplotlib.use("Agg")

FIXTURES = NCCL_DATA_DIR / "nccl-tests"  # the real published logs, shipped with commlab


def not_blank(fig) -> bool:
    rgb = np.asarray(Image.open(io.BytesIO(png_bytes(fig))).convert("L"), dtype=float)
    return rgb.std() > 10


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text)]


@pytest.fixture(scope="module")
def h100_log():
    path = FIXTURES / "07_all_reduce_H100-p5-NVSwitch_8r.txt"
    if not path.exists():
        pytest.skip(f"fixture {path} not present")
    return parse_log(path.read_text())


def test_bandwidth_plot_of_a_real_log_with_roof_and_model(h100_log):
    from commlab.cost import busbw_GBps, fit_alpha_beta

    sizes = np.array([r.size_bytes for r in h100_log.rows], dtype=float)
    t_s = np.array([r.oop.time_us for r in h100_log.rows]) * 1e-6
    model = fit_alpha_beta(sizes, t_s)
    curve = (sizes, busbw_GBps("all_reduce", sizes, model.time_s(sizes), 8))
    fig = plot_bandwidth([("H100 p5", h100_log.rows), ("pairs", [(1024, 1.0), (2**20, 50.0)])],
                         roof=hardware.link("nvlink4"), model=model, model_curve=curve)
    assert not_blank(fig)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    roofs = [line for line in ax.get_lines() if np.allclose(line.get_ydata(), 450.0)]
    assert roofs, "the NVLink 4 roof is drawn at its one-way 450 GB/s"
    drawn = ax.get_lines()[0]
    busbw = sorted((r.size_bytes, r.oop.busbw_GBps) for r in h100_log.rows)
    shown = np.asarray(drawn.get_ydata(), dtype=float)
    want = np.array([bw for _, bw in busbw])
    assert np.allclose(shown[want > 0], want[want > 0])
    legend = " ".join(texts(fig))
    assert "NVLink 4" in legend and "alpha" in legend and "GB/s" in legend


def test_algbw_model_curve_is_asked_of_cost_and_busbw_needs_a_curve(h100_log):
    from commlab.cost import AlphaBeta

    model = AlphaBeta(alpha_s=20e-6, beta_s_per_byte=1 / 400e9, r2=1.0)
    fig = plot_bandwidth([("H100 p5", h100_log.rows)], model=model, metric="algbw")
    line = fig.axes[0].get_lines()[-1]
    s = np.asarray(line.get_xdata())
    assert np.allclose(line.get_ydata(), s / (20e-6 + s / 400e9) / 1e9)   # closed form algbw = S / (a + S/B)
    with pytest.raises(CommlabError, match="model_curve"):
        plot_bandwidth([("H100 p5", h100_log.rows)], model=model, metric="busbw")


@pytest.mark.parametrize("runs", [[], [("empty", [])], [("bad", [(0, 1.0)])]])
def test_bandwidth_plot_rejects_nothing_to_draw(runs):
    with pytest.raises(CommlabError):
        plot_bandwidth(runs)
    with pytest.raises(CommlabError, match="metric"):
        plot_bandwidth([("a", [(8, 1.0)])], metric="speed")


def test_topology_legend_goes_fast_to_slow():
    matrix = [["X", "SYS", "NV4", "PIX"],
              ["SYS", "X", "NV18", "PHB"],
              ["NV4", "NV18", "X", "NODE"],
              ["PIX", "PHB", "NODE", "X"]]
    fig = plot_topology(matrix, ["GPU0", "GPU1", "GPU2", "GPU3"])
    assert not_blank(fig)
    legend = [t.get_text().split(":")[0] for t in fig.legends[0].get_texts()]
    assert legend == ["X", "NV18", "NV4", "PIX", "PHB", "NODE", "SYS"]      # nvidia-smi's legend order


def test_topology_of_a_parsed_example():
    from commlab.topology.examples import example

    topo = example("a40-pcie-8")
    fig = plot_topology(topo)
    assert not_blank(fig)
    assert sum(t == "X" for t in texts(fig)) == len(topo.gpus)


@pytest.mark.parametrize("matrix, labels", [
    ([["X", "NV2"], ["NV2"]], ["a", "b"]),
    ([["X", "FAST"], ["FAST", "X"]], ["a", "b"]),
    ([["X"]], ["a", "b"]),
])
def test_topology_rejects_bad_matrices(matrix, labels):
    with pytest.raises(CommlabError):
        plot_topology(matrix, labels)


def test_timeline_of_the_overlap_simulator_highlights_exposed_time():
    from commlab.units import format_time

    config = overlap.DDPConfig(layers=overlap.uniform_layers(6, 40_000_000, 0.03), n_ranks=8, alpha_s=5e-6,
                               bw_GBps=10, bucket_cap_mb=25)
    timeline = overlap.simulate(config)
    assert timeline.exposed_comm_s > 0
    fig = plot_timeline(timeline)
    assert not_blank(fig)
    assert any(format_time(timeline.exposed_comm_s) in t for t in texts(fig))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["communication", "compute"]   # first stream on top


def test_timeline_from_streams_and_bad_streams():
    streams = [("compute", [("fwd", 0.0, 1.0), ("bwd", 1.0, 3.0)]), ("comm", [("ar", 2.0, 3.5)])]
    assert not_blank(plot_timeline(streams, exposed=[(3.0, 3.5)]))
    with pytest.raises(CommlabError):
        plot_timeline([])
    with pytest.raises(CommlabError, match="start_s <= end_s"):
        plot_timeline([("compute", [("x", 2.0, 1.0)])])
    with pytest.raises(CommlabError, match="exposed"):
        plot_timeline(streams, exposed=[(3.0, 2.0)])


def test_cost_figure_legend_matches_the_closed_form_ring_time():
    from commlab.units import format_time

    n, alpha_s, bw_Bps, nbytes = 16, 5e-6, 50e9, 2**26
    fig = cost_figure(n, alpha_s, bw_Bps, nbytes)
    assert not_blank(fig)
    ring_s = 2 * (n - 1) * (alpha_s + nbytes / (n * bw_Bps))          # Patarasuk and Yuan
    naive_s = 2 * (n - 1) * (alpha_s + nbytes / bw_Bps)
    labels = texts(fig)
    assert f"ring: {format_time(ring_s)}" in labels
    assert f"naive: {format_time(naive_s)}" in labels
    assert any(t.startswith("ring = tree at ") for t in labels)
    with pytest.raises(CommlabError):
        cost_figure(1, alpha_s, bw_Bps, nbytes)
    with pytest.raises(CommlabError, match="nbytes"):
        cost_figure(n, alpha_s, bw_Bps, 0)


def test_link_ratio_figure_shows_the_catalogue_ratio_and_times():
    from commlab.units import format_time

    fig = link_ratio_figure("nvlink4", "pcie5", 14e9)
    assert not_blank(fig)
    a, b = hardware.link("nvlink4"), hardware.link("pcie5")
    labels = texts(fig)
    assert any(f"{a.unidir_GBps / b.unidir_GBps:.3g}x" in t for t in labels)
    assert format_time(b.latency_s + 14e9 / (b.unidir_GBps * 1e9)) in labels   # alpha + S/B over PCIe 5
    with pytest.raises(CommlabError, match="unknown link"):
        link_ratio_figure("nvlink9", "pcie5", 1e9)
    with pytest.raises(CommlabError, match="nbytes"):
        link_ratio_figure("nvlink4", "pcie5", -1)


# Presentation: nothing cut, one colour per relation across the book, text a reader can read.

def relation_cells(fig) -> list[list[tuple]]:
    """The RGBA drawn in each matrix cell, read back from the heatmap image."""
    image = fig.axes[0].images[0]
    return [[tuple(np.round(c, 6)) for c in row] for row in image.to_rgba(image.get_array())]


def relative_luminance(rgba) -> float:
    """WCAG 2 / IEC 61966-2-1 relative luminance of an sRGB colour (written out here)."""
    rgb = np.asarray(rgba[:3], dtype=float)
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def drawn_extents(fig):
    """Render the figure whole (bbox_inches=None) and return its renderer, as a notebook shows it."""
    fig.savefig(io.BytesIO(), format="png", bbox_inches=None)
    return fig.canvas.get_renderer()


def inside(inner, outer, tol=0.5) -> bool:
    return (inner.x0 >= outer.x0 - tol and inner.y0 >= outer.y0 - tol
            and inner.x1 <= outer.x1 + tol and inner.y1 <= outer.y1 + tol)


def twelve_gpus():
    n = 12
    matrix = [["X" if i == j else ("NV12" if i // 4 == j // 4 else "SYS") for j in range(n)] for i in range(n)]
    return matrix, [f"GPU{i} (long name)" for i in range(n)]


@pytest.mark.parametrize("name", ["a40-pcie-8", "pcie-4gpu", "h100-sxm-8", "v100-sxm2-8", "twelve", "mixed"])
def test_topology_figure_cuts_nothing_and_keeps_the_legend_off_the_matrix(name):
    from commlab.topology.examples import example

    if name == "twelve":
        fig = plot_topology(*twelve_gpus(), title="a title wider than the matrix it sits over, by a long way")
    elif name == "mixed":
        fig = plot_topology([["X", "PXB", "NV1"], ["PXB", "X", "SOC"], ["NV1", "SOC", "X"]])
    else:
        fig = plot_topology(example(name))
    renderer = drawn_extents(fig)
    ax, legend = fig.axes[0], fig.legends[0]
    everything = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)   # inches -> pixels
    assert inside(everything, fig.bbox), (everything, fig.bbox)
    matrix_and_labels = ax.get_tightbbox(renderer)
    key = legend.get_window_extent(renderer)
    assert inside(key, fig.bbox) and inside(matrix_and_labels, fig.bbox)
    assert key.y1 < matrix_and_labels.y0, "the legend sits under the matrix and its labels"


def test_topology_colours_are_one_scale_for_the_whole_book():
    from commlab.topology.examples import example

    pcie_only = example("pcie-4gpu")                       # PHB at (0, 1), SYS at (0, 2), and nothing faster
    mixed = [["X", "SYS", "NV4", "PIX"],
             ["SYS", "X", "NV18", "PHB"],
             ["NV4", "NV18", "X", "NODE"],
             ["PIX", "PHB", "NODE", "X"]]
    assert pcie_only.relation(0, 1) == "PHB" and pcie_only.relation(0, 2) == "SYS"
    a, b = relation_cells(plot_topology(pcie_only)), relation_cells(plot_topology(mixed))
    assert a[0][1] == b[1][3], "PHB has one colour in every figure"
    assert a[0][2] == b[0][1], "so has SYS"
    assert a[0][0] == b[0][0], "so has X"
    assert b[1][2] != b[1][3], "NV18 is not PHB's colour"


def test_topology_colours_run_dark_to_light_from_fastest_to_slowest():
    fastest_first = ["NV18", "NV12", "NV8", "NV6", "NV4", "NV2", "NV1", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC"]
    n = len(fastest_first) + 1
    matrix = [["X"] + fastest_first] + [["SYS"] * n for _ in range(n - 1)]
    for i in range(n):
        matrix[i][i] = "X"
    cells = relation_cells(plot_topology(matrix))[0][1:]
    luminance = [relative_luminance(c) for c in cells]
    assert all(lo < hi for lo, hi in zip(luminance, luminance[1:])), list(zip(fastest_first, luminance))
    contrast = [(hi + 0.05) / (lo + 0.05) for lo, hi in zip(luminance, luminance[1:])]   # WCAG contrast ratio
    assert min(contrast[4:]) > 1.15, contrast   # NV4 and slower: neighbours that share machines stay apart


def visible_texts(fig):
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]


# Text sizes of every view (these included): test_viz_legibility.py.


@pytest.mark.parametrize("links", [("nvlink4", "pcie5", 14e9), ("nvlink2", "eth-25-tcp", 1e6)])
def test_link_ratio_footer_is_inside_and_clear_of_both_panels(links):
    fig = link_ratio_figure(*links)
    renderer = drawn_extents(fig)
    footer = [t for t in visible_texts(fig) if t.get_text().startswith("figures: commlab.hardware")]
    assert len(footer) == 1
    box = footer[0].get_window_extent(renderer)
    assert inside(box, fig.bbox)
    for ax in fig.axes:
        assert not box.overlaps(ax.get_tightbbox(renderer)), ax.get_xlabel()
    everything = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
    assert inside(everything, fig.bbox)
