"""The animation as an ipywidgets box: Play/Pause, a step slider linked to it, N, the algorithm, the frame.

The frame is shown as PNG bytes in an ``ipywidgets.Image`` (no ipympl, no inline backend needed), so the box
works the same in JupyterLab, in the static book's kernel-less HTML (as its last image) and under nbval.
Play and the slider are linked on the kernel side (``widgets.link``), so setting either from Python moves
the other and redraws, which is what the tests do.
"""
from __future__ import annotations

import html

import ipywidgets as widgets

from commlab.errors import CommlabError
from commlab.viz.frames import MAX_RANKS, MIN_RANKS

#: zlib level for live frames: fast to encode, a few per cent larger than the default.
LIVE_COMPRESS_LEVEL = 1
#: The frame's tallest on screen: the window's height less what the box and JupyterLab draw around it (two
#: rows of controls, the caption, JupyterLab's menu, tab and toolbar rows), so that the controls, the rings and
#: the caption are on one screen (a 1000 px window: 640 px of frame); never less than 240 px.
FRAME_MAX_HEIGHT = "max(240px, calc(100vh - 360px))"


class AnimationBox(widgets.VBox):
    """A VBox with named controls: ``play``, ``slider``, ``n_ranks``, ``algorithm``, ``image``, ``text``."""

    def __init__(self, anim, interval_ms: int = 900) -> None:
        self.animation = anim
        self.play = widgets.Play(value=0, min=0, max=anim.n_steps, step=1, interval=interval_ms,
                                 description="Play", show_repeat=True)
        self.slider = widgets.IntSlider(value=0, min=0, max=anim.n_steps, description="step")
        widgets.link((self.play, "value"), (self.slider, "value"))
        self.n_ranks = widgets.IntSlider(value=anim.n_ranks, min=MIN_RANKS, max=MAX_RANKS, description="N",
                                         continuous_update=False, disabled=anim.is_trace)
        self.algorithm = widgets.Dropdown(options=list(anim.algorithms), value=anim.algorithm,
                                          description="algorithm", disabled=anim.is_trace,
                                          layout=widgets.Layout(width="330px"))
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", max_height=FRAME_MAX_HEIGHT,
                                                                       width="auto", object_fit="contain"))
        self.text = widgets.HTML()
        super().__init__([widgets.HBox([self.play, self.slider]), widgets.HBox([self.n_ranks, self.algorithm]),
                          self.image, self.text])
        self.slider.observe(self._on_step, names="value")
        self.n_ranks.observe(self._on_rebuild, names="value")
        self.algorithm.observe(self._on_rebuild, names="value")
        self._draw_step(anim.step)

    def _draw_step(self, k: int) -> None:
        self.animation.set_step(k)
        self._show()

    def _show(self, error: str = "") -> None:
        self.image.value = self.animation.to_png_bytes(compress_level=LIVE_COMPRESS_LEVEL, caption=False,
                                                       palette=True)
        words = html.escape(error or self.animation.caption)
        colour = "#D00000" if error or "DEPARTS" in words else "inherit"
        self.text.value = f"<div style='max-width:720px;color:{colour}'>{words}</div>"

    def _on_step(self, change) -> None:
        self._draw_step(change["new"])

    def _on_rebuild(self, _change) -> None:
        try:
            self.animation.set_algorithm(self.algorithm.value)
            self.animation.set_n_ranks(self.n_ranks.value)
        except CommlabError as exc:
            self._show(error=str(exc))
            return
        self.play.playing = False
        self.slider.value = 0  # the link moves play too; the observer redraws step 0
        self.slider.max = self.play.max = self.animation.n_steps
        self._show()


def animation_widget(anim, interval_ms: int = 900) -> AnimationBox:
    """The widget of a :class:`~commlab.viz.animation.ScheduleAnimation` (its ``.widget()``)."""
    return AnimationBox(anim, interval_ms=interval_ms)
