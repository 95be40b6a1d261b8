"""viz widgets, driven from Python as a reader's clicks would drive them: Play and the slider move together,
the picture and caption follow, N and the algorithm rebuild; explorers redraw on every control."""
import io

import matplotlib
import numpy as np
import pytest

from commlab import schedules
from commlab.viz import (
    RingAnimation, cost_explorer, cost_figure, link_ratio_explorer, png_bytes, ring_widget, tree_widget,
)

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


# The explorers open at exactly the values a chapter asks for, on sliders of round values.

def mantissa(value: float) -> float:
    return value / 10 ** np.floor(np.log10(value))


def test_cost_explorer_shows_chapter_06s_values_exactly():
    from commlab import hardware
    from commlab.units import format_bandwidth, format_time

    ndr = hardware.link("ib-ndr")
    explorer = cost_explorer(n_ranks=64, alpha_s=ndr.latency_s, bw_Bps=ndr.unidir_Bps, nbytes=2**20)
    shown = {name: (c.label, c.value) for name, c in explorer.controls.items()}
    assert shown == {"n_ranks": ("64", 64), "alpha_s": (format_time(ndr.latency_s), ndr.latency_s),
                     "bw_Bps": (format_bandwidth(ndr.unidir_Bps), ndr.unidir_Bps), "nbytes": ("1 MiB", 2**20)}
    explorer = cost_explorer(alpha_s=1e-6, bw_Bps=50e9)
    assert (explorer.controls["alpha_s"].label, explorer.controls["bw_Bps"].label) == ("1 us", "50 GB/s")
    assert explorer.values() == {"n_ranks": 8, "alpha_s": 1e-6, "bw_Bps": 50e9, "nbytes": 64 * 2**20}
    assert explorer.image.value == png_bytes(cost_figure(8, 1e-6, 50e9, 64 * 2**20), compress_level=1)


def test_cost_explorer_sliders_are_round_and_take_an_off_grid_value_exactly():
    explorer = cost_explorer(n_ranks=10, alpha_s=3e-6, bw_Bps=25e9, nbytes=10**6)
    labels = {name: c.label for name, c in explorer.controls.items()}
    assert labels == {"n_ranks": "10", "alpha_s": "3 us", "bw_Bps": "25 GB/s", "nbytes": "1 MB"}
    assert explorer.values() == {"n_ranks": 10, "alpha_s": 3e-6, "bw_Bps": 25e9, "nbytes": 10**6}
    for name, low, high, requested in (("alpha_s", 1e-7, 1e-4, 3e-6), ("bw_Bps", 1e9, 1e12, 25e9)):
        values = [v for _, v in explorer.controls[name].options]
        assert values == sorted(values) and values[0] == low and values[-1] == high
        grid = [v for v in values if v != requested]
        assert len(grid) == 10                                           # 1, 2, 5 per decade over three decades
        assert all(np.isclose(mantissa(v), [1, 2, 5]).any() for v in grid), grid
    sizes = [v for _, v in explorer.controls["nbytes"].options if v != 10**6]
    assert sizes == [2**k for k in range(10, 35)]


def test_a_value_on_the_grid_is_not_listed_twice():
    options = cost_explorer(alpha_s=2e-6).controls["alpha_s"].options
    assert [label for label, _ in options].count("2 us") == 1 and len(options) == 10


@pytest.mark.parametrize("bad", [{"alpha_s": 0.0}, {"bw_Bps": -1.0}, {"n_ranks": 1}, {"nbytes": 0}])
def test_cost_explorer_rejects_values_it_cannot_draw(bad):
    from commlab.errors import CommlabError

    with pytest.raises(CommlabError):
        cost_explorer(**bad)


def test_explorer_is_exported_without_importing_ipywidgets_at_import_time():
    import subprocess
    import sys

    import commlab.viz
    from commlab.viz.explorer import Explorer

    assert commlab.viz.Explorer is Explorer and "Explorer" in commlab.viz.__all__
    code = "import sys, commlab.viz; assert 'ipywidgets' not in sys.modules; from commlab.viz import Explorer"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_widget_frame_has_the_static_exports_pixels_per_inch():
    from PIL import Image

    from commlab.viz.export import STATIC_DPI
    from commlab.viz.scene import CAPTION_IN

    box = ring_widget("ring-all-reduce", 8)
    width_in, height_in = box.animation.figure.get_size_inches()
    width_px, height_px = Image.open(io.BytesIO(box.image.value)).size
    assert abs(width_px - width_in * STATIC_DPI) <= 1
    assert abs(height_px - (height_in - CAPTION_IN) * STATIC_DPI) <= 1.5      # the caption band is cropped
