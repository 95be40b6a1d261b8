"""viz widgets, driven from Python as a reader's clicks would drive them: Play and the slider move together,
the picture and caption follow, N and the algorithm rebuild; explorers redraw on every control."""
import matplotlib
import pytest

from commlab import schedules
from commlab.viz import RingAnimation, cost_explorer, link_ratio_explorer, ring_widget, tree_widget

matplotlib.use("Agg")


def rank_count(anim) -> int:
    return sum(str(a.get_gid() or "").startswith("rank-") for a in anim.figure.findobj())


def test_play_and_slider_drive_the_frame_and_caption():
    box = ring_widget("ring-reduce-scatter", 4)
    anim = box.animation
    schedule = schedules.build("ring-reduce-scatter", 4)
    start = box.image.value
    box.play.value = 2                                     # what Play does on its second tick
    assert box.slider.value == 2 and anim.step == 2
    assert box.image.value != start
    for t in schedule.steps[1]:
        assert f"rank {t.src} sends chunk {t.chunk} to rank {t.dst}" in box.text.value
    frame_2 = box.image.value
    box.slider.value = 1                                   # stepping back
    assert box.play.value == 1 and anim.step == 1
    box.slider.value = 2
    assert box.image.value == frame_2


def test_n_and_algorithm_controls_rebuild_and_reset_the_step():
    box = RingAnimation("ring-all-reduce", 4).widget()
    anim = box.animation
    box.slider.value = 5
    box.n_ranks.value = 7
    assert rank_count(anim) == 7
    assert (anim.step, box.slider.value, box.play.value) == (0, 0, 0)
    assert box.slider.max == box.play.max == schedules.build("ring-all-reduce", 7).n_steps
    box.algorithm.value = "ring-all-gather"
    assert anim.algorithm == "ring-all-gather"
    assert box.slider.max == 7 - 1
    box.slider.value = box.slider.max
    assert anim.caption.startswith("step 6 of 6")


def test_a_trace_widget_locks_n_and_algorithm():
    trace = schedules.build("ring-all-gather", 3).transfers()
    box = RingAnimation.from_trace(trace, 3, collective="all_gather").widget()
    assert box.n_ranks.disabled and box.algorithm.disabled
    box.play.value = box.play.max
    assert "DEPARTS" not in box.text.value


def test_tree_widget_steps():
    box = tree_widget("double-tree-all-reduce", 4)
    before = box.image.value
    box.slider.value = 1
    assert box.image.value != before


def test_cost_explorer_redraws():
    explorer = cost_explorer()
    first = explorer.image.value
    assert first
    explorer.controls["n_ranks"].value = 64
    assert explorer.image.value != first and explorer.text.value == ""


def test_an_explorer_shows_a_commlab_error_as_text():
    import ipywidgets as widgets

    from commlab.viz.cost_view import cost_figure
    from commlab.viz.explorer import Explorer

    explorer = Explorer({"n_ranks": widgets.IntSlider(value=4, min=0, max=8)}, cost_figure)
    good = explorer.image.value
    explorer.controls["n_ranks"].value = 1
    assert "n_ranks" in explorer.text.value and explorer.image.value == good


def test_link_ratio_explorer_redraws():
    explorer = link_ratio_explorer()
    first = explorer.image.value
    explorer.controls["link_b"].value = "ib-ndr"
    assert explorer.image.value != first
    assert set(explorer.controls["link_a"].options) >= {("NVLink 4 (H100) (nvlink4)", "nvlink4")}


@pytest.mark.parametrize("bad", [1, 17])
def test_widget_helpers_reject_bad_n(bad):
    from commlab.errors import CommlabError

    with pytest.raises(CommlabError):
        ring_widget("ring-all-reduce", bad)
