"""The cluster picture and explorer: the bottleneck the model names is the level drawn hot; the house rules of
legibility (no figure wider than 10 in, no text under 10 pt, every text inside the figure); the widget's wiring."""
from __future__ import annotations


import matplotlib
import pytest

from commlab.cluster import cluster_cost
from commlab.viz.cluster import ALARM, LEVEL_COLORS
from commlab.viz.cluster_explorer import cluster_explorer, cluster_figure
from commlab.viz.style import MIN_FONT_PT

matplotlib.use("Agg")

CASES = [("dgx-h100-ndr", 64, "all_reduce", "ring", 2**30), ("h100-16k-roce", 2048, "all_to_all", "direct", 2**28),
         ("aws-p5", 1, "all_reduce", "nvls-tree", 2**20), ("gb200-nvl72", 144, "all_gather", "pat", 2**33)]


@pytest.mark.parametrize("args", CASES)
def test_legible_and_inside(args, drawn_texts):
    fig = cluster_figure(*args)
    assert fig.get_figwidth() <= 10.0
    texts = drawn_texts(fig)
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    for text, extent in ((t, t.get_window_extent(renderer)) for t in texts):
        assert text.get_fontsize() >= MIN_FONT_PT, text.get_text()
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, text.get_text()


def test_the_hot_level_is_the_models_bottleneck():
    fig = cluster_figure("h100-16k-roce", 2048, "all_to_all", "direct", 2**28)
    level = cluster_cost("all_to_all", [2**28], "h100-16k-roce", 2048)["direct"].bottleneck_levels()[0]
    assert level == "pod"
    hot = [line for line in fig.axes[0].lines if line.get_color() == ALARM and line.get_linewidth() >= 3.0]
    assert hot and all(line.get_ydata()[0] >= 3.7 for line in hot)        # spine-to-core links only
    bars = fig.axes[1].patches
    assert any(matplotlib.colors.same_color(b.get_facecolor(), LEVEL_COLORS["pod"]) for b in bars)


def test_the_explorer_redraws_and_follows_the_collective():
    ex = cluster_explorer()
    assert ex.image.value and not ex.text.value
    ex.controls["op"].value = "all_to_all"
    assert list(ex.controls["algo"].options) == ["direct"] and ex.controls["algo"].value == "direct"
    assert not ex.text.value                                              # no transient "does not run" message
    ex.controls["preset"].value = "dgx-2"
    ex.controls["nodes"].value = 2048                                      # more than its fabric connects
    assert "connects 1 to 81 nodes" in ex.text.value
