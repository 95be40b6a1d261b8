"""viz legibility, the house rule for every view: no figure wider than 10 in, every text a reader reads at
10 pt or more and inside the figure, and the texts that could collide kept apart (measured on the rendered
figure, the way a notebook shows it)."""
import io

import matplotlib
import pytest

from commlab.nccl.examples import DATA_DIR as NCCL_DATA_DIR
from commlab import hardware, overlap
from commlab.schedules import Transfer
from commlab.viz import (
    RingAnimation, TreeAnimation, cost_figure, link_ratio_figure, plot_bandwidth, plot_collective, plot_timeline,
    plot_topology, to_html,
)
from commlab.viz.style import MIN_FONT_PT

matplotlib.use("Agg")

FIXTURES = NCCL_DATA_DIR / "nccl-tests"  # the real published logs, shipped with commlab
MAX_WIDTH_IN = 10.0


def rendered(fig):
    """Draw the figure whole (bbox_inches=None) and return its renderer."""
    fig.savefig(io.BytesIO(), format="png", bbox_inches=None)
    return fig.canvas.get_renderer()


def inside(inner, outer, tol=1.0) -> bool:
    return (inner.x0 >= outer.x0 - tol and inner.y0 >= outer.y0 - tol
            and inner.x1 <= outer.x1 + tol and inner.y1 <= outer.y1 + tol)


def ring_frame():
    return RingAnimation("ring-all-reduce", 8).set_step(3).figure


def ring_16_frame():
    return RingAnimation("ring-all-reduce", 16).set_step(5).figure


def tree_frame():
    return TreeAnimation("double-tree-all-reduce", 8).set_step(2).figure


def static_export_frame():
    """The figure as to_html leaves it after drawing every frame, caption included, then at step 4."""
    anim = RingAnimation("ring-reduce-scatter", 4).set_step(2)
    to_html(anim)
    assert anim.step == 2
    anim.set_step(1)
    anim.to_png_bytes(caption=True)
    assert anim._scene.caption.get_visible() and anim._scene.caption.get_text().startswith("step 1")
    return anim.figure


def trace_frame():
    """A trace that departs at its first step: the red alert line is drawn too."""
    n = 4
    wrong = [Transfer(0, r, (r + 1) % n, r, True) for r in range(n)]
    anim = RingAnimation.from_trace(wrong, n, collective="reduce_scatter")
    anim.set_step(anim.playback.departure_frame)
    assert anim._scene.alert.get_text()
    return anim.figure


def bandwidth_view():
    rows = [(2.0**k, min(450.0, 2.0 ** (k - 12))) for k in range(6, 34, 2)]
    return plot_bandwidth([("made-up curve for layout", rows)], roof=hardware.link("nvlink4"))


def bandwidth_fixture_view():
    from commlab.nccl import parse_log

    path = FIXTURES / "07_all_reduce_H100-p5-NVSwitch_8r.txt"
    if not path.exists():
        pytest.skip(f"fixture {path} not present")
    return plot_bandwidth([("H100 p5", parse_log(path.read_text()).rows)], roof=hardware.link("nvlink4"))


#: Titles of 70 characters, as chapter 07 writes them, over the timeline's exposed-time key.
LONG_TITLES = ("96 buckets: step 123.4 ms (no overlap: 150.2 ms), bucket_cap_mb = 25MB",
               "one DDP step, rank 0, gloo, bucket_cap_mb=2: exposed 12.3 ms of 45.6ms")


def timeline_view(title=LONG_TITLES[0]):
    config = overlap.DDPConfig(layers=overlap.uniform_layers(6, 40_000_000, 0.03), n_ranks=8, alpha_s=5e-6,
                               bw_GBps=10, bucket_cap_mb=25)
    timeline = overlap.simulate(config)
    return plot_timeline(timeline, title=title)


def fsdp_timeline_view():
    layers = overlap.uniform_layers(8, 64 * 2**20, backward_s=4e-3, forward_s=2e-3)
    config = overlap.FSDPConfig(layers=layers, n_ranks=16, alpha_s=1e-6, bw_GBps=50, prefetch=True)
    return plot_timeline(overlap.simulate_fsdp_forward(config), title=LONG_TITLES[1])


def topology_view():
    from commlab.topology.examples import example

    return plot_topology(example("h100-sxm-8"))


VIEWS = {
    "ring-frame": ring_frame, "ring-16-frame": ring_16_frame, "tree-frame": tree_frame,
    "static-export-frame": static_export_frame, "trace-frame": trace_frame, "bandwidth": bandwidth_view,
    "bandwidth-fixture": bandwidth_fixture_view, "cost": lambda: cost_figure(),
    "cost-64-ndr": lambda: cost_figure(64, 1e-6, 50e9, 2**20), "link-ratio": lambda: link_ratio_figure(),
    "topology": topology_view, "topology-2": lambda: plot_topology([["X", "NV2"], ["NV2", "X"]]),
    "topology-12-long-names": lambda: plot_topology(
        [["X" if i == j else "SYS" for j in range(12)] for i in range(12)], [f"GPU{i} (long name)" for i in range(12)]),
    "timeline": timeline_view, "timeline-fsdp": fsdp_timeline_view,
    "collective-all-to-all": lambda: plot_collective("all_to_all", 4),
    "collective-reduce": lambda: plot_collective("reduce", 4, root=1),
    "collective-gather-16": lambda: plot_collective("gather", 16, root=3),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_every_text_is_at_least_10_pt_and_inside_a_figure_at_most_10_in_wide(name, drawn_texts):
    fig = VIEWS[name]()
    texts = drawn_texts(fig)
    renderer = fig.canvas.get_renderer()
    assert fig.get_figwidth() <= MAX_WIDTH_IN + 1e-9, fig.get_figwidth()
    assert texts
    small = {t.get_text(): t.get_fontsize() for t in texts if t.get_fontsize() < MIN_FONT_PT}
    assert not small, small
    cut = [t.get_text() for t in texts if not inside(t.get_window_extent(renderer), fig.bbox)]
    assert not cut, cut


def boxes_overlap(a, b, tol=0.5) -> bool:
    return a.x0 < b.x1 - tol and b.x0 < a.x1 - tol and a.y0 < b.y1 - tol and b.y0 < a.y1 - tol


@pytest.mark.parametrize("args", [(8, 5e-6, 50e9, 2**26), (64, 1e-6, 50e9, 2**20), (2, 5e-6, 50e9, 2**10),
                                  (1024, 100e-6, 1e9, 2**34)])
def test_cost_figure_key_and_titles_clear_the_panels(args):
    fig = cost_figure(*args)
    renderer = rendered(fig)
    key = fig.legends[0].get_window_extent(renderer)
    for ax in fig.axes:
        assert not boxes_overlap(key, ax.get_tightbbox(renderer)), ax.get_title()
    title = fig._suptitle.get_window_extent(renderer)
    panel_titles = [ax.title.get_window_extent(renderer) for ax in fig.axes]
    assert not any(boxes_overlap(title, box) for box in panel_titles)
    assert not boxes_overlap(*panel_titles)
    for ax in fig.axes:
        assert not boxes_overlap(ax.get_window_extent(renderer), title)


@pytest.mark.parametrize("title", LONG_TITLES)
def test_timeline_key_clears_a_70_character_title_and_the_bars(title):
    assert len(title) == 70
    fig = timeline_view(title)
    renderer = rendered(fig)
    ax = fig.axes[0]
    assert ax.get_title(loc="left") == title
    (legend,) = fig.legends
    key = legend.get_window_extent(renderer)
    assert inside(key, fig.bbox) and inside(ax.title.get_window_extent(renderer), fig.bbox)
    assert not boxes_overlap(key, ax.title.get_window_extent(renderer))
    assert not boxes_overlap(key, ax.get_window_extent(renderer))


def test_timeline_span_labels_fit_their_bars():
    """A label is drawn only where it fits: its rendered width stays within its bar."""
    fig = timeline_view()
    renderer = rendered(fig)
    ax = fig.axes[0]
    bars = [path.get_extents(transform) for coll in ax.collections
            for path, transform in [(p, coll.get_transform()) for p in coll.get_paths()]]
    labels = [t for t in ax.texts if t.get_text()]
    assert labels
    for label in labels:
        box = label.get_window_extent(renderer)
        centre = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
        holder = [b for b in bars if b.x0 <= centre[0] <= b.x1 and b.y0 <= centre[1] <= b.y1]
        assert holder, label.get_text()
        assert min(b.width for b in holder) >= box.width, label.get_text()


@pytest.mark.parametrize("algorithm, n_ranks", [("ring-all-reduce", 2), ("ring-all-reduce", 8),
                                                ("ring-all-reduce", 16), ("recursive-doubling-all-reduce", 5),
                                                ("naive-all-reduce", 3)])
def test_rank_labels_clear_every_buffer(algorithm, n_ranks, drawn_texts):
    anim = RingAnimation(algorithm, n_ranks)
    renderer = rendered(anim.figure)
    boxes = [a.get_window_extent(renderer) for a in anim.rank_artists]
    labels = [t for t in drawn_texts(anim.figure) if t.get_text().startswith("rank ") and t.axes is not None]
    assert len(labels) == n_ranks
    for label in labels:
        patch = label.get_bbox_patch().get_window_extent(renderer)
        assert not any(boxes_overlap(patch, box) for box in boxes), label.get_text()


def test_key_and_caption_bands_do_not_overlap_the_panels_or_each_other():
    for anim in (RingAnimation("ring-all-reduce", 2), RingAnimation("ring-all-reduce", 16),
                 TreeAnimation("double-tree-all-reduce", 16)):
        anim.set_step(1)
        renderer = rendered(anim.figure)
        caption = anim._scene.caption.get_window_extent(renderer)
        key = [t for t in anim.figure.texts if t.get_text().startswith("Each box")][0].get_window_extent(renderer)
        assert not boxes_overlap(caption, key)
        for ax in anim.figure.axes:
            panel = ax.get_window_extent(renderer)
            assert not boxes_overlap(key, panel) and not boxes_overlap(caption, panel)
        assert caption.y1 <= anim.figure.dpi * 0.75 + 1, "the live widget crops the caption band (CAPTION_IN)"
        assert key.y0 >= anim.figure.dpi * 0.75
