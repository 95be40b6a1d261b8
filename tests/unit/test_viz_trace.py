"""viz traces: a reader's recorded transfers played back, the first departure named and drawn in red."""
import io

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgba
from PIL import Image

from commlab import schedules
from commlab.errors import CommlabError
from commlab.schedules import Transfer
from commlab.viz import RingAnimation
from commlab.viz.style import ALARM

matplotlib.use("Agg")


def red_pixels(png: bytes) -> int:
    """Pixels close to the alarm colour (#D00000)."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)
    return int(np.sum((rgb[..., 0] > 180) & (rgb[..., 1] < 50) & (rgb[..., 2] < 50)))


def ring_trace(n_ranks, collective="all_reduce"):
    """The ring as a reader's code would record it, written from the architecture's ring rule: reduce-scatter
    step s, rank r sends chunk (r - s - 1) mod N and the receiver adds; all-gather step s, rank r sends chunk
    (r - s) mod N and the receiver stores; all-reduce is the one then the other."""
    out = []
    if collective in ("all_reduce", "reduce_scatter"):
        out += [Transfer(s, r, (r + 1) % n_ranks, (r - s - 1) % n_ranks, True)
                for s in range(n_ranks - 1) for r in range(n_ranks)]
    if collective in ("all_reduce", "all_gather"):
        first = n_ranks - 1 if collective == "all_reduce" else 0
        out += [Transfer(first + s, r, (r + 1) % n_ranks, (r - s) % n_ranks, False)
                for s in range(n_ranks - 1) for r in range(n_ranks)]
    return out


def test_a_correct_trace_follows_the_reference():
    n = 4
    anim = RingAnimation.from_trace(ring_trace(n), n, collective="all_reduce")
    assert anim.playback.departure is None
    assert anim.n_steps == 2 * (n - 1)
    for k in range(anim.n_steps + 1):
        anim.set_step(k)
        assert "DEPARTS" not in anim.caption
        assert red_pixels(anim.to_png_bytes()) == 0


def _swap(trace, index, **changes):
    out = list(trace)
    fields = ("step", "src", "dst", "chunk", "reduce")
    out[index] = Transfer(*[changes.get(f, getattr(out[index], f)) for f in fields])
    return out


@pytest.mark.parametrize("change, kind", [
    ({"chunk": 0}, "wrong chunk"),
    ({"reduce": False}, "missing reduce"),
    ({"dst": 3}, "wrong peer"),
])
def test_the_first_departure_is_named_and_drawn_in_red(change, kind):
    n = 4
    good = ring_trace(n)
    index = next(i for i, t in enumerate(good) if t.step == 1 and t.src == 1)   # rank 1 at step 1 (0-based)
    assert good[index].chunk != 0 and good[index].dst != 3
    bad = _swap(good, index, **change)
    anim = RingAnimation.from_trace(bad, n, collective="all_reduce")
    assert anim.playback.departure.step == 1
    before = anim.set_step(1)
    assert "DEPARTS" not in before.caption and red_pixels(before.to_png_bytes()) == 0
    anim.set_step(2)                                   # frame 2 shows step 1 (0-based)
    assert "DEPARTS" in anim.caption and kind in anim.caption
    assert red_pixels(anim.to_png_bytes()) > 50
    receiver = bad[index].dst
    outline = anim._scene.outlines[0][receiver]
    assert outline.get_edgecolor() == to_rgba(ALARM)
    anim.set_step(3)
    assert "departed from ring-all-reduce at step 2" in anim.caption


def test_a_missing_message_is_drawn_as_a_ghost_arrow():
    n = 3
    good = ring_trace(n)
    dropped = [t for t in good if not (t.step == 0 and t.src == 2)]
    anim = RingAnimation.from_trace(dropped, n, collective="all_reduce").set_step(1)
    assert "missing transfer" in anim.caption
    ghosts = [(src, dst, text) for src, dst, text, colour in anim.arrows_shown() if colour == to_rgba(ALARM)]
    assert ghosts == [(2, 0, "missing c1+")]
    assert red_pixels(anim.to_png_bytes()) > 20


def test_a_trace_that_stops_early_is_flagged_on_its_last_frame():
    n = 3
    short = [t for t in ring_trace(n) if t.step < 2]
    anim = RingAnimation.from_trace(short, n, collective="all_reduce")
    assert anim.n_steps == 2
    assert "DEPARTS" in anim.set_step(2).caption
    assert "after its last step" in anim.caption


def test_a_trace_from_another_n_is_a_commlab_error():
    with pytest.raises(CommlabError, match="another number of ranks"):
        RingAnimation.from_trace(ring_trace(6), 4, collective="all_reduce")


def test_a_trace_cannot_change_n_or_algorithm():
    anim = RingAnimation.from_trace(ring_trace(3), 3)
    with pytest.raises(CommlabError, match="recorded on 3 ranks"):
        anim.set_n_ranks(4)
    with pytest.raises(CommlabError):
        anim.set_algorithm("ring-all-gather")
    with pytest.raises(CommlabError, match="collective"):
        RingAnimation.from_trace(ring_trace(3), 3, collective="broadcast")


@pytest.mark.parametrize("collective", ["all_reduce", "reduce_scatter", "all_gather"])
def test_trace_matches_the_schedule_builder(collective):
    """Our hand-written ring trace and commlab.schedules agree (so the tests above start from a correct trace)."""
    n = 5
    algorithm = {"all_reduce": "ring-all-reduce", "reduce_scatter": "ring-reduce-scatter",
                 "all_gather": "ring-all-gather"}[collective]
    assert sorted(ring_trace(n, collective)) == sorted(schedules.build(algorithm, n).transfers())
    anim = RingAnimation.from_trace(ring_trace(n, collective), n, collective=collective)
    assert anim.playback.departure is None and anim.algorithm == algorithm
