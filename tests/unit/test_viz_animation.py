"""viz animations: captions against the schedule's own transfers and the ring rule, frames that change with
the step and come back identical, the number of ranks drawn, chunk colours against the collective's meaning."""
import io

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgb
from PIL import Image

from commlab import schedules
from commlab.errors import CommlabError
from commlab.viz import RingAnimation, ScheduleAnimation, TreeAnimation
from commlab.viz.style import EMPTY, RANK_COLORS

matplotlib.use("Agg")


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)


def rank_images(anim):
    return [a for a in anim.figure.findobj() if str(a.get_gid() or "").startswith("rank-")]


def words(t) -> str:
    return f"rank {t.src} sends chunk {t.chunk} to rank {t.dst}, which {'adds' if t.reduce else 'stores'} it"


@pytest.mark.parametrize("algorithm", ["ring-reduce-scatter", "ring-all-gather", "ring-all-reduce"])
@pytest.mark.parametrize("n_ranks", [2, 5])
def test_caption_names_every_transfer_of_the_step(algorithm, n_ranks):
    anim = RingAnimation(algorithm, n_ranks)
    schedule = schedules.build(algorithm, n_ranks)
    assert anim.n_steps == schedule.n_steps
    for k in range(1, anim.n_steps + 1):
        caption = anim.set_step(k).caption
        assert caption.startswith(f"step {k} of {schedule.n_steps}: ")
        for t in schedule.steps[k - 1]:
            assert words(t) in caption
        assert caption.count("sends chunk") == len(schedule.steps[k - 1])


def test_arrows_are_the_steps_transfers_ring_forwards():
    """Each frame draws one arrow per transfer of its step, rank r -> r + 1, labelled with the chunk."""
    n = 5
    anim = RingAnimation("ring-all-reduce", n)
    assert anim.arrows_shown() == []
    for k in range(1, anim.n_steps + 1):
        shown = sorted((src, dst, label) for src, dst, label, _ in anim.set_step(k).arrows_shown())
        want = sorted((t.src, t.dst, f"c{t.chunk}{'+' if t.reduce else ''}")
                      for t in schedules.build("ring-all-reduce", n).steps[k - 1])
        assert shown == want
        assert all(dst == (src + 1) % n for src, dst, _ in shown)


def test_ring_reduce_scatter_caption_follows_the_ring_rule():
    """Architecture contract: in step s rank r sends chunk (r - s - 1) mod N to rank (r + 1) mod N and adds."""
    n = 6
    anim = RingAnimation("ring-reduce-scatter", n)
    for s in range(n - 1):
        caption = anim.set_step(s + 1).caption
        for r in range(n):
            assert f"rank {r} sends chunk {(r - s - 1) % n} to rank {(r + 1) % n}, which adds it" in caption


def test_each_step_changes_the_picture_and_stepping_back_restores_it():
    anim = RingAnimation("ring-all-reduce", 4)
    frames = [anim.set_step(k).to_png_bytes() for k in range(anim.n_steps + 1)]
    for before, after in zip(frames, frames[1:]):
        assert before != after
    for k in reversed(range(anim.n_steps + 1)):
        assert anim.set_step(k).to_png_bytes() == frames[k]


def test_n_changes_the_number_of_ranks_drawn():
    anim = RingAnimation("ring-all-reduce", 4)
    assert len(rank_images(anim)) == 4
    anim.set_n_ranks(9)
    assert len(rank_images(anim)) == 9
    assert anim.n_steps == 2 * (9 - 1)
    anim.set_algorithm("ring-all-gather")
    assert (anim.n_ranks, anim.n_steps, anim.step) == (9, 8, 0)


def _cell_colours(anim, rank) -> np.ndarray:
    """[source rank, chunk, rgb] of one drawn buffer."""
    return anim._scene.cell_colours(0, rank)[..., :3]


def test_colours_show_what_each_rank_holds():
    """Reduce-scatter starts with every chunk of rank r holding only r; all-reduce ends with every chunk of
    every rank holding every rank (the collective's meaning, not the run's holds array)."""
    n = 5
    palette = np.array([to_rgb(c) for c in RANK_COLORS[:n]])
    empty = np.array(to_rgb(EMPTY))
    anim = RingAnimation("ring-reduce-scatter", n)
    for r in range(n):
        cells = _cell_colours(anim, r)
        for s in range(n):
            want = palette[s] if s == r else empty
            assert np.allclose(cells[s], want), (r, s)
    anim = RingAnimation("ring-all-reduce", n).set_step(2 * (n - 1))
    for r in range(n):
        assert np.allclose(_cell_colours(anim, r), palette[:, None, :])


def test_all_gather_final_frame_gives_every_chunk_its_owner_only():
    """torch's all_gather: chunk c is rank c's piece, so after the ring every rank's chunk c holds rank c."""
    n = 4
    palette = np.array([to_rgb(c) for c in RANK_COLORS[:n]])
    anim = RingAnimation("ring-all-gather", n).set_step(n - 1)
    for r in range(n):
        cells = _cell_colours(anim, r)
        for c in range(n):
            for s in range(n):
                assert np.allclose(cells[s, c], palette[s] if s == c else to_rgb(EMPTY))


@pytest.mark.parametrize("bad", [1, 17, 0, "4", 4.0, True])
def test_bad_n_is_a_commlab_error(bad):
    with pytest.raises(CommlabError, match="n_ranks"):
        RingAnimation("ring-all-reduce", bad)


def test_bad_algorithm_and_step_are_commlab_errors():
    with pytest.raises(CommlabError, match="algorithm"):
        RingAnimation("tree-all-reduce", 4)
    with pytest.raises(CommlabError, match="algorithm"):
        TreeAnimation("ring-all-reduce", 4)
    anim = RingAnimation("ring-all-reduce", 3)
    with pytest.raises(CommlabError, match="step"):
        anim.set_step(anim.n_steps + 1)
    with pytest.raises(CommlabError, match="step"):
        anim.set_step(-1)


@pytest.mark.parametrize("algorithm", ["tree-all-reduce", "double-tree-all-reduce"])
def test_tree_animation_steps_reduce_then_broadcast(algorithm):
    n = 8
    anim = TreeAnimation(algorithm, n)
    schedule = schedules.build(algorithm, n)
    depth = int(np.ceil(np.log2(n)))
    assert anim.n_steps == 2 * depth
    panels = 2 if algorithm.startswith("double") else 1
    assert len(rank_images(anim)) == panels * n
    last = pixels(anim.to_png_bytes())
    for k in range(1, anim.n_steps + 1):
        caption = anim.set_step(k).caption
        for t in schedule.steps[k - 1]:
            assert words(t) in caption
        reduces = {t.reduce for t in schedule.steps[k - 1]}
        assert reduces == ({True} if k <= depth else {False})
        frame = pixels(anim.to_png_bytes())
        assert not np.array_equal(frame, last)
        last = frame


@pytest.mark.parametrize("algorithm", schedules.ALGORITHMS)
def test_every_algorithm_renders_a_non_blank_frame(algorithm):
    anim = ScheduleAnimation(algorithm, 6).set_step(1)
    image = pixels(anim.to_png_bytes())
    assert image.std() > 20
    assert anim.caption.startswith("step 1 of ")


def test_full_redraw_at_another_dpi_matches_the_frame():
    anim = RingAnimation("ring-all-reduce", 4).set_step(3)
    fast = pixels(anim.to_png_bytes())
    slow = pixels(anim.to_png_bytes(dpi=anim.figure.dpi * 2))
    assert abs(slow.shape[0] - 2 * fast.shape[0]) <= 1
    assert abs(slow.mean() - fast.mean()) < 2.0
