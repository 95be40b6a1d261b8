"""Step-by-step animations of a schedule: the ring (chapter 05), the trees (chapter 06), a reader's trace (lab).

An animation owns one figure. Changing the step only updates its artists; changing N or the algorithm
rebuilds them on the same figure. Every frame is a pure function of (algorithm or trace, N, step), so a
slider can go back and forth and ``to_png_bytes`` returns the same bytes for the same frame.

>>> anim = RingAnimation("ring-reduce-scatter", n_ranks=4)
>>> anim.n_steps
3
>>> anim.set_step(1).caption.startswith("step 1 of 3: rank 0 sends chunk 3 to rank 1, which adds it")
True
"""
from __future__ import annotations

import textwrap
from collections.abc import Iterable

from commlab.errors import CommlabError, check_choice
from commlab.schedules import ALGORITHMS, Transfer
from commlab.viz.frames import Playback, playback, trace_playback
from commlab.viz.layout import Layout, circle_layout, tree_layout
from commlab.viz.render import new_figure, png_bytes
from commlab.viz.scene import CAPTION_IN, Scene
from commlab.viz.style import use_book_style

TREE_ALGORITHMS = ("tree-all-reduce", "double-tree-all-reduce")
RING_ALGORITHMS = ("ring-reduce-scatter", "ring-all-gather", "ring-all-reduce", "bidir-ring-all-reduce")
#: Drawn with ranks on a circle: the rings, and (generic view) naive and recursive doubling.
CIRCLE_ALGORITHMS = RING_ALGORITHMS + ("naive-all-reduce", "recursive-doubling-all-reduce")
#: Lines of the caption drawn inside the figure; ``.caption`` keeps every word.
CAPTION_LINES = 3
#: Pixels per inch of the figure, and so of the live widget's frames: a browser's CSS inch, as for the static
#: exports (commlab.viz.export.STATIC_DPI), so the widget's 10 pt text shows at 10 pt. Measured with
#: benchmarks/viz.py (benchmarks/README.md, "Views"): an 8-rank ring frame costs 20-21 ms of CPU at 96 dpi
#: against 17-18 ms at 80, well inside the 50 ms a frame the widget is allowed.
LIVE_DPI = 96.0


class ScheduleAnimation:
    """Any algorithm of commlab.schedules.ALGORITHMS, trees drawn as trees and the rest on a circle."""

    algorithms: tuple[str, ...] = ALGORITHMS
    """The algorithms this view accepts (the widget's dropdown)."""

    def __init__(self, algorithm: str = "ring-all-reduce", n_ranks: int = 4, dpi: float = LIVE_DPI) -> None:
        check_choice("algorithm", algorithm, self.algorithms)
        self._start(playback(algorithm, n_ranks), dpi)

    @classmethod
    def from_trace(cls, trace: Iterable[Transfer], n_ranks: int, collective: str = "all_reduce",
                   algorithm: str | None = None, dpi: float = LIVE_DPI) -> ScheduleAnimation:
        """Play a recorded trace (Transfers from the reader's own code), marking where it departs from the
        reference schedule (``algorithm``, by default the ring for ``collective``) in the caption and in red."""
        played = trace_playback(trace, n_ranks, collective, algorithm)
        if played.reference is None:
            raise RuntimeError("trace_playback gave a trace without its reference schedule")
        check_choice("reference algorithm", played.reference.algorithm, cls.algorithms)
        anim = cls.__new__(cls)
        anim._start(played, dpi)
        return anim

    # --- state -------------------------------------------------------------------------------------------
    def _start(self, played: Playback, dpi: float) -> None:
        self.dpi = dpi
        self.figure = new_figure(6.4, 7.0, dpi=dpi)
        self._load(played)

    def _load(self, played: Playback) -> None:
        self.playback = played
        shown = played.reference or played.schedule
        layout = self._layout(shown)
        pairs = {(layout.panel_of(t.chunk), t.src, t.dst)
                 for s in (played.schedule, shown) for t in s.transfers()}
        self.figure.clear()
        with use_book_style():
            self._scene = Scene(self.figure, layout, shown.n_ranks, pairs, played.title,
                                alert_room=played.reference is not None)
        self._step = -1
        self.set_step(0)

    def _layout(self, schedule) -> Layout:
        if schedule.algorithm in TREE_ALGORITHMS:
            return tree_layout(schedule)
        return circle_layout(schedule.n_ranks, schedule.n_chunks)

    @property
    def step(self) -> int:
        """The frame shown: 0 is the input, k the state after k steps."""
        return self._step

    @property
    def n_steps(self) -> int:
        return self.playback.n_steps

    @property
    def n_ranks(self) -> int:
        return self.playback.schedule.n_ranks

    @property
    def algorithm(self) -> str:
        """The algorithm shown (for a trace, the reference it is compared with)."""
        return (self.playback.reference or self.playback.schedule).algorithm

    @property
    def is_trace(self) -> bool:
        return self.playback.reference is not None

    @property
    def caption(self) -> str:
        """The current frame in words (every transfer of the step, and any departure of a trace)."""
        return self.playback.caption(self._step)

    @property
    def rank_artists(self) -> list:
        """The drawn buffers (one per rank and panel), each with gid "rank-<r>"."""
        return self._scene.rank_artists

    def arrows_shown(self) -> list[tuple[int, int, str, tuple]]:
        """The arrows drawn in this frame: (src, dst, label such as "c2+", rgba colour)."""
        return self._scene.arrows_shown()

    # --- controls ----------------------------------------------------------------------------------------
    def set_step(self, k: int) -> ScheduleAnimation:
        """Show frame ``k`` (0..n_steps); returns self so calls chain."""
        k = self.playback.check_frame(k)
        if k != self._step:
            played = self.playback
            alarm, ghosts = played.alarm(k)
            scene = self._scene
            caption = textwrap.fill(played.step_words(k), scene.caption_width, max_lines=CAPTION_LINES,
                                    placeholder=" ...")
            alert = textwrap.fill(played.departure_words(k), scene.alert_width, max_lines=3, placeholder=" ...")
            scene.update(played.holds[k], played.transfers(k), alarm, ghosts, caption, alert)
            self._step = k
        return self

    def set_n_ranks(self, n_ranks: int) -> ScheduleAnimation:
        """Rebuild for ``n_ranks`` ranks (2 to 16), back at step 0."""
        if self.is_trace:
            raise CommlabError(f"a trace was recorded on {self.n_ranks} ranks; record a new one to change N "
                               f"(asked for n_ranks={n_ranks!r})")
        if n_ranks != self.n_ranks:
            self._load(playback(self.algorithm, n_ranks))
        return self

    def set_algorithm(self, algorithm: str) -> ScheduleAnimation:
        """Rebuild for ``algorithm`` (one of ``self.algorithms``), back at step 0."""
        check_choice("algorithm", algorithm, self.algorithms)
        if self.is_trace:
            raise CommlabError(f"a trace is compared with {self.algorithm}; pass algorithm= to from_trace instead "
                               f"(asked for {algorithm!r})")
        if algorithm != self.algorithm:
            self._load(playback(algorithm, self.n_ranks))
        return self

    # --- output ------------------------------------------------------------------------------------------
    def to_png_bytes(self, dpi: float | None = None, compress_level: int = 6, caption: bool = True,
                     palette: bool = False) -> bytes:
        """The current frame as PNG bytes: blitted (fast) at the figure's dpi, fully redrawn at another dpi.

        The live widget asks for ``caption=False`` (it shows the caption as text under the picture, and
        rasterising its glyphs is a third of a frame's time) and ``palette=True`` (256 colours, smaller).
        """
        if dpi is not None and dpi != self.figure.dpi:
            return png_bytes(self.figure, dpi=dpi, compress_level=compress_level)
        crop_px = 0 if caption else round(CAPTION_IN * self.figure.dpi)
        self._scene.caption.set_visible(caption)
        try:
            return self._scene.blitter.png(compress_level, crop_bottom_px=crop_px, palette=palette)
        finally:
            self._scene.caption.set_visible(True)

    def to_html(self, interval_ms: int = 900) -> str:
        """A self-contained HTML player of every step (see commlab.viz.export.to_html)."""
        from commlab.viz.export import to_html

        return to_html(self, interval_ms=interval_ms)

    def save_gif(self, path, interval_ms: int = 900):
        """Write an animated GIF of every step; returns the path."""
        from commlab.viz.export import save_gif

        return save_gif(self, path, interval_ms=interval_ms)

    def save_pngs(self, directory):
        """Write step_000.png (the input) and one PNG per step; returns the paths."""
        from commlab.viz.export import save_pngs

        return save_pngs(self, directory)

    def _repr_png_(self) -> bytes:
        return self.to_png_bytes()

    def widget(self, interval_ms: int = 900):
        """An ipywidgets box: Play/Pause, step slider, N, algorithm, the frame and its caption."""
        from commlab.viz.widget import animation_widget

        return animation_widget(self, interval_ms=interval_ms)


class RingAnimation(ScheduleAnimation):
    """Ranks on a circle: the ring reduce-scatter, all-gather and all-reduce, the bidirectional ring (two rings,
    one each way, on 2N chunks), and naive and recursive doubling."""

    algorithms = CIRCLE_ALGORITHMS


class TreeAnimation(ScheduleAnimation):
    """Binary tree and NCCL's double binary tree all-reduce: reduce up to the root, then broadcast down."""

    algorithms = TREE_ALGORITHMS

    def __init__(self, algorithm: str = "double-tree-all-reduce", n_ranks: int = 8, dpi: float = LIVE_DPI) -> None:
        super().__init__(algorithm, n_ranks, dpi)


def ring_widget(algorithm: str = "ring-all-reduce", n_ranks: int = 4, interval_ms: int = 900):
    """The ring animation's widget in one call (chapter 05)."""
    return RingAnimation(algorithm, n_ranks).widget(interval_ms=interval_ms)


def tree_widget(algorithm: str = "double-tree-all-reduce", n_ranks: int = 8, interval_ms: int = 900):
    """The tree animation's widget in one call (chapter 06)."""
    return TreeAnimation(algorithm, n_ranks).widget(interval_ms=interval_ms)
