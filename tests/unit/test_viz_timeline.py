"""viz timelines: communication labelled by its collective, bars that stay visible however short, and read back
from the rendered pixels the way a reader sees them."""
import io
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgb
from PIL import Image

from commlab import hardware, overlap, units
from commlab.overlap.timeline import CommInterval, ComputeInterval, Timeline
from commlab.viz import plot_timeline, png_bytes
from commlab.viz.timeline import STREAM_COLORS, timeline_streams

matplotlib.use("Agg")


def fsdp_forward(prefetch: bool):
    layers = overlap.uniform_layers(8, 64 * units.MiB, backward_s=4e-3, forward_s=2e-3)
    ndr = hardware.link("ib-ndr")
    return overlap.simulate_fsdp_forward(overlap.FSDPConfig(layers=layers, n_ranks=16, alpha_s=ndr.latency_s,
                                                            bw_GBps=ndr.unidir_GBps, prefetch=prefetch))


def test_communication_is_labelled_by_its_collective():
    comm = (CommInterval(3, 0.0, 1.0, 8, (3,), op="all_reduce"), CommInterval(2, 1.0, 2.0, 8, (2,), op="all_gather"),
            CommInterval(1, 2.0, 3.0, 8, (1,), op="reduce_scatter"))
    streams, _ = timeline_streams(Timeline(compute=(ComputeInterval(0, 0.0, 3.0),), comm=comm))
    assert [label for label, _, _ in dict(streams)["communication"]] == ["AR 3", "AG 2", "RS 1"]


def test_an_interval_without_an_op_keeps_its_bucket_name():
    bare = SimpleNamespace(bucket=4, start_s=0.0, end_s=1.0)     # a profiler's interval: no collective named
    timeline = SimpleNamespace(compute=[], comm=[bare], exposed_intervals=lambda: ())
    streams, _ = timeline_streams(timeline)
    assert dict(streams)["communication"] == [("b4", 0.0, 1.0)]


def test_fsdp_forward_draws_its_all_gathers_by_layer():
    timeline = fsdp_forward(prefetch=True)
    assert {iv.op for iv in timeline.comm} == {"all_gather"}
    fig = plot_timeline(timeline, title="FSDP forward, prefetch")
    drawn = {t.get_text() for t in fig.axes[0].texts}
    assert drawn == {f"AG {layer}" for layer in range(8)} | {f"layer {layer}" for layer in range(8)}


def column_coverage(fig, t_s: float, row: int, colour: str) -> np.ndarray:
    """How much of ``colour`` each pixel column within 6 px of time ``t_s`` shows at the centre of stream row
    ``row`` (0 = bottom): 1 where the pixel is the colour, 0 where it is white (read from the PNG)."""
    rgb = np.asarray(Image.open(io.BytesIO(png_bytes(fig))).convert("RGB"), dtype=float) / 255
    ax = fig.axes[0]
    x, y = ax.transData.transform((t_s, row))
    line = rgb[rgb.shape[0] - int(round(y)), int(x) - 6:int(x) + 7]
    target = np.array(to_rgb(colour))
    return np.clip(((1 - line) @ (1 - target)) / ((1 - target) @ (1 - target)), 0, 1)


def test_a_30_us_all_reduce_on_a_100_ms_axis_is_visible():
    streams = [("compute", [("forward", 0.0, 0.04), ("backward", 0.04, 0.1)]),
               ("communication", [("AR 0", 0.05, 0.05003), ("AR 1", 0.07, 0.07003)])]
    fig = plot_timeline(streams, title="a 30 us all-reduce on a 100 ms axis")
    px_per_s = fig.axes[0].transData.transform((1.0, 0))[0] - fig.axes[0].transData.transform((0.0, 0))[0]
    assert 30e-6 * px_per_s < 0.5, "the bar itself is under half a pixel wide"
    for start_s in (0.05, 0.07):
        coverage = column_coverage(fig, start_s + 15e-6, 0, STREAM_COLORS[1])
        assert coverage.sum() >= 1.2, coverage.round(2)          # at least 1.2 px worth of the stream's colour
        assert coverage.max() >= 0.6, coverage.round(2)


def test_neighbouring_wide_bars_keep_their_white_gap_and_nothing_else_cuts_them():
    streams = [("compute", [("forward", 0.0, 0.037), ("backward", 0.037, 0.1)])]
    fig = plot_timeline(streams)
    ticks = [t for t in fig.axes[0].get_xticks() if 0.045 < t < 0.095]
    assert ticks, "a grid line's time inside the backward bar"
    coverage = column_coverage(fig, 0.037, 0, STREAM_COLORS[0])
    assert coverage.min() < 0.5 and coverage.max() > 0.95, coverage.round(2)
    assert column_coverage(fig, ticks[0], 0, STREAM_COLORS[0]).min() > 0.95, "the grid line runs under the bar"


@pytest.mark.parametrize("prefetch", [False, True])
def test_the_exposed_key_names_the_simulators_exposed_time(prefetch):
    timeline = fsdp_forward(prefetch)
    fig = plot_timeline(timeline)
    key = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert key == [f"exposed communication: {units.format_time(timeline.exposed_comm_s)}"]
