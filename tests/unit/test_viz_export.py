"""viz export: the kernel-free HTML player (under 2 MB for an 8-rank all-reduce), GIF and one PNG per step."""
import base64
import io
import re

import matplotlib
import numpy as np
import pytest
from PIL import Image

from commlab.errors import CommlabError
from commlab.viz import RingAnimation, TreeAnimation, save_gif, save_pngs, to_html
from commlab.viz.export import STATIC_DPI

matplotlib.use("Agg")

TWO_MB = 2 * 1000 * 1000


def frames_in(html: str) -> list[bytes]:
    """The PNG frames matplotlib's jshtml player embeds, decoded."""
    found = re.findall(r'data:image/png;base64,([^"]+)"', html)
    return [base64.b64decode(re.sub(r"[\\\s]", "", chunk)) for chunk in found]


def test_html_for_8_rank_all_reduce_is_self_contained_and_under_2_mb():
    anim = RingAnimation("ring-all-reduce", 8).set_step(5)
    html = to_html(anim)
    assert len(html.encode("utf-8")) < TWO_MB
    frames = frames_in(html)
    assert len(frames) == 2 * (8 - 1) + 1
    assert len(set(frames)) == len(frames)             # every step is a different picture
    assert "<script" in html and "http" not in html.split("<script", 1)[1].split("</script>")[0].lower()
    assert anim.step == 5                                      # exporting leaves the widget's step alone
    first = np.asarray(Image.open(io.BytesIO(frames[0])).convert("RGB"), dtype=float)
    assert first.std() > 20
    assert first.shape[1] == round(anim.figure.get_figwidth() * STATIC_DPI)   # a browser's 96 px per inch


def test_exports_leave_the_step_alone_through_the_next_draw(tmp_path):
    """matplotlib's FuncAnimation shows its first frame at the figure's next draw; after an export that draw is
    the widget's, and must not send the animation back to step 0."""
    anim = RingAnimation("ring-all-reduce", 4).set_step(3)
    to_html(anim)
    save_gif(anim, tmp_path / "a.gif")
    shown = anim.to_png_bytes()                       # the widget's next frame: a full draw, then blitted
    anim.figure.canvas.draw()
    assert anim.step == 3 and anim.caption.startswith("step 3 of")
    assert anim.to_png_bytes() == shown
    assert shown == RingAnimation("ring-all-reduce", 4).set_step(3).to_png_bytes()


def test_gif_has_one_frame_per_step(tmp_path):
    anim = TreeAnimation("tree-all-reduce", 4)
    path = save_gif(anim, tmp_path / "tree.gif", interval_ms=300)
    with Image.open(path) as gif:
        assert gif.n_frames == anim.n_steps + 1
    with pytest.raises(CommlabError, match="gif"):
        save_gif(anim, tmp_path / "tree.mp4")


def test_pngs_start_with_the_input_then_one_per_step(tmp_path):
    anim = RingAnimation("ring-reduce-scatter", 3)
    paths = save_pngs(anim, tmp_path / "frames")
    assert [p.name for p in paths] == ["step_000.png", "step_001.png", "step_002.png"]
    assert paths[0].read_bytes() == anim.set_step(0).to_png_bytes(dpi=STATIC_DPI)
    assert paths[2].read_bytes() == anim.set_step(2).to_png_bytes(dpi=STATIC_DPI)
    with Image.open(paths[0]) as first:          # drawn at a browser's 96 pixels per inch
        assert first.width == round(anim.figure.get_figwidth() * STATIC_DPI)
    assert len({p.read_bytes() for p in paths}) == 3
    (tmp_path / "file").write_text("x")
    with pytest.raises(CommlabError, match="directory"):
        save_pngs(anim, tmp_path / "file")


def test_methods_match_the_functions(tmp_path):
    anim = RingAnimation("ring-all-gather", 2)
    assert len(frames_in(anim.to_html())) == 2
    assert anim.save_gif(tmp_path / "a.gif").exists()
    assert len(anim.save_pngs(tmp_path / "p")) == 2
    with pytest.raises(CommlabError, match="interval_ms"):
        to_html(anim, interval_ms=0)
