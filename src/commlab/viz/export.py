"""Animations that need no kernel: self-contained HTML, GIF and one PNG per step.

The static book and GitHub-style viewers do not run widgets, so chapters also embed :func:`to_html`
(matplotlib's ``FuncAnimation.to_jshtml``: every frame as a base64 PNG plus a small player). Frames are drawn at
the animation's dpi (80 by default), which keeps an 8-rank ring all-reduce (15 frames) near 1 MB.
"""
from __future__ import annotations

import os
from pathlib import Path

from commlab.errors import CommlabError

#: matplotlib refuses to embed more than this many MB in one HTML animation (rcParams animation.embed_limit).
EMBED_LIMIT_MB = 20.0


def _func_animation(anim, interval_ms: int):
    from matplotlib.animation import FuncAnimation

    def draw(k: int) -> list:
        anim.set_step(k)
        return []

    return FuncAnimation(anim.figure, draw, frames=range(anim.n_steps + 1), interval=interval_ms,
                         repeat=True, cache_frame_data=False)


def _check_interval(interval_ms: int) -> int:
    if not isinstance(interval_ms, int) or interval_ms < 20:
        raise CommlabError(f"interval_ms must be a whole number of milliseconds >= 20, got {interval_ms!r}")
    return interval_ms


def to_html(anim, interval_ms: int = 900, dpi: float | None = None) -> str:
    """A self-contained HTML player (``<div>`` + ``<script>``, frames inline) of every step of ``anim``."""
    import matplotlib

    step = anim.step
    try:
        with matplotlib.rc_context({"animation.embed_limit": EMBED_LIMIT_MB,
                                    "savefig.dpi": dpi or anim.figure.dpi}):
            player = _func_animation(anim, _check_interval(interval_ms))
            html = player.to_jshtml(default_mode="loop")
    finally:
        anim.set_step(step)
    return html


def save_gif(anim, path: str | os.PathLike, interval_ms: int = 900, dpi: float | None = None) -> Path:
    """Write every step of ``anim`` as an animated GIF (matplotlib's PillowWriter) and return the path."""
    from matplotlib.animation import PillowWriter

    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise CommlabError(f"save_gif writes a .gif file, got {str(path)!r}")
    step = anim.step
    try:
        player = _func_animation(anim, _check_interval(interval_ms))
        player.save(path, writer=PillowWriter(fps=1000 / interval_ms), dpi=dpi or anim.figure.dpi)
    finally:
        anim.set_step(step)
    return path


def save_pngs(anim, directory: str | os.PathLike) -> list[Path]:
    """Write step_000.png (the input) then one PNG per step into ``directory`` (created if needed)."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise CommlabError(f"save_pngs needs a directory, and {str(directory)!r} is a file")
    directory.mkdir(parents=True, exist_ok=True)
    step, paths = anim.step, []
    try:
        for k in range(anim.n_steps + 1):
            path = directory / f"step_{k:03d}.png"
            path.write_bytes(anim.set_step(k).to_png_bytes())
            paths.append(path)
    finally:
        anim.set_step(step)
    return paths
