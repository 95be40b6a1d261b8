"""viz.plot_bandwidth's legend stays off the data: measured in display coordinates on the rendered figure, against
the real nccl-tests logs the book ships (fixture 02 is a flat run along the bottom of the axes)."""
import io

import matplotlib
import numpy as np
import pytest
from matplotlib.path import Path
from matplotlib.transforms import Bbox

from commlab import hardware
from commlab.nccl import fixture_link, nccl_tests_log, parse_log
from commlab.viz import plot_bandwidth

matplotlib.use("Agg")


def rows_of(key: int) -> list:
    return [row for row in parse_log(nccl_tests_log(key).read_text()).rows if row.size_bytes > 0]


def legend_and_lines(fig):
    """The legend's box and each line's drawn points, both in display pixels of a whole-figure render."""
    fig.savefig(io.BytesIO(), format="png", bbox_inches=None)
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legend = ax.get_legend() or fig.legends[0]
    lines = []
    for line in ax.get_lines():
        xy = np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float)
        xy = line.get_transform().transform(xy[np.all(np.isfinite(xy), axis=1)])
        lines.append((line, xy))
    return legend.get_window_extent(renderer), lines, renderer


def assert_legend_clears_the_data(fig):
    box, lines, _ = legend_and_lines(fig)
    assert lines
    for line, xy in lines:
        radius_px = line.get_markersize() / 2 * fig.dpi / 72 if line.get_marker() not in (None, "None", "") else 0
        padded = Bbox.from_extents(box.x0 - radius_px, box.y0 - radius_px, box.x1 + radius_px, box.y1 + radius_px)
        inside = [tuple(p) for p in xy if padded.contains(*p)]
        assert not inside, f"{line.get_label()!r}: points {inside} under the legend {box}"
        if len(xy) > 1:
            assert not Path(xy).intersects_bbox(box, filled=False), f"{line.get_label()!r} runs under the legend"


def test_the_legend_clears_a_flat_run_along_the_bottom():
    rows = rows_of(2)
    busbw = [row.oop.busbw_GBps for row in rows]
    assert max(busbw) - min(busbw) < 0.05 * max(busbw), "fixture 02 is the flat run this test is about"
    fig = plot_bandwidth([("A100 no P2P", rows)], roof=hardware.link(fixture_link(2)))
    assert_legend_clears_the_data(fig)
    box, lines, renderer = legend_and_lines(fig)
    roof_note = [t for t in fig.axes[0].texts if t.get_text().startswith("roof:")]
    assert roof_note and not roof_note[0].get_window_extent(renderer).overlaps(box)


def test_the_legend_clears_two_runs_a_model_and_the_roof():
    from commlab.cost import busbw_GBps, fit_alpha_beta

    rows = rows_of(7)
    sizes = np.array([r.size_bytes for r in rows], dtype=float)
    model = fit_alpha_beta(sizes, np.array([r.oop.time_us for r in rows]) * 1e-6)
    curve = (sizes, busbw_GBps("all_reduce", sizes, model.time_s(sizes), 8))
    fig = plot_bandwidth([("H100 p5", rows), ("A100 no P2P", rows_of(2))], roof=hardware.link(fixture_link(7)),
                         model=model, model_curve=curve)
    assert_legend_clears_the_data(fig)


@pytest.mark.parametrize("key", [1, 5, 9, 13, 20])
def test_the_legend_clears_other_real_runs(key):
    link = fixture_link(key)
    fig = plot_bandwidth([(nccl_tests_log(key).stem, rows_of(key))], roof=hardware.link(link) if link else None)
    assert_legend_clears_the_data(fig)
