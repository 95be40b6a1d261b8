"""Animations that need no kernel: self-contained HTML, GIF and one PNG per step.

The static book and GitHub-style viewers do not run widgets, so chapters also embed :func:`to_html`
(matplotlib's ``FuncAnimation.to_jshtml``: every frame as a base64 PNG plus a small player). A browser shows
one PNG pixel per CSS pixel, 96 to the inch, so the HTML and GIF frames are drawn at :data:`STATIC_DPI` = 96 (or
the animation's own dpi if higher): a 10 pt caption then reads as 10 pt. The live widget draws at the
animation's dpi, by default the same 96 (commlab.viz.animation.LIVE_DPI). The HTML of an 8-rank ring
all-reduce (15 frames) stays near 1.2 MB.
"""
from __future__ import annotations

import os
from pathlib import Path

from commlab.errors import CommlabError

#: matplotlib refuses to embed more than this many MB in one HTML animation (rcParams animation.embed_limit).
EMBED_LIMIT_MB = 20.0
#: Pixels per inch of exported frames: a browser's CSS inch, so text shows at its size in points.
STATIC_DPI = 96.0


def _static_dpi(anim, dpi: float | None) -> float:
    return dpi or max(anim.figure.dpi, STATIC_DPI)


class _Player:
    """A FuncAnimation over every step of ``anim``, for one export (``with _Player(...) as player``).

    A FuncAnimation also waits for the figure's next draw to show its first frame; after the export that draw
    would be the widget's, and would silently send the animation back to step 0. Leaving the ``with`` block
    turns the frame function into a no-op, so the export leaves the animation's step alone.
    """

    def __init__(self, anim, interval_ms: int) -> None:
        self.anim, self.interval_ms, self.active = anim, _check_interval(interval_ms), False

    def _draw(self, k: int) -> list:
        if self.active:
            self.anim.set_step(k)
        return []

    def __enter__(self):
        from matplotlib.animation import FuncAnimation

        self.active = True
        self.step = self.anim.step
        return FuncAnimation(self.anim.figure, self._draw, frames=range(self.anim.n_steps + 1),
                             interval=self.interval_ms, repeat=True, cache_frame_data=False)

    def __exit__(self, *exc) -> None:
        self.active = False
        self.anim.set_step(self.step)


def _check_interval(interval_ms: int) -> int:
    if not isinstance(interval_ms, int) or interval_ms < 20:
        raise CommlabError(f"interval_ms must be a whole number of milliseconds >= 20, got {interval_ms!r}")
    return interval_ms


def to_html(anim, interval_ms: int = 900, dpi: float | None = None) -> str:
    """A self-contained HTML player (``<div>`` + ``<script>``, frames inline) of every step of ``anim``.

    ``dpi``: pixels per inch of the frames (default :data:`STATIC_DPI`, or the animation's dpi if higher)."""
    import matplotlib

    with matplotlib.rc_context({"animation.embed_limit": EMBED_LIMIT_MB, "savefig.dpi": _static_dpi(anim, dpi)}):
        with _Player(anim, interval_ms) as player:
            return player.to_jshtml(default_mode="loop")


def save_gif(anim, path: str | os.PathLike, interval_ms: int = 900, dpi: float | None = None) -> Path:
    """Write every step of ``anim`` as an animated GIF (matplotlib's PillowWriter) and return the path.

    ``dpi``: as for :func:`to_html`."""
    from matplotlib.animation import PillowWriter

    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise CommlabError(f"save_gif writes a .gif file, got {str(path)!r}")
    with _Player(anim, interval_ms) as player:
        player.save(path, writer=PillowWriter(fps=1000 / interval_ms), dpi=_static_dpi(anim, dpi))
    return path


def save_pngs(anim, directory: str | os.PathLike) -> list[Path]:
    """Write step_000.png (the input) then one PNG per step into ``directory`` (created if needed), at
    :data:`STATIC_DPI` (or the animation's dpi if higher), caption included."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise CommlabError(f"save_pngs needs a directory, and {str(directory)!r} is a file")
    directory.mkdir(parents=True, exist_ok=True)
    step, paths = anim.step, []
    try:
        for k in range(anim.n_steps + 1):
            path = directory / f"step_{k:03d}.png"
            path.write_bytes(anim.set_step(k).to_png_bytes(dpi=_static_dpi(anim, None)))
            paths.append(path)
    finally:
        anim.set_step(step)
    return paths
