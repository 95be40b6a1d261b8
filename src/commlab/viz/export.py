"""Animations that need no kernel: self-contained HTML, GIF and one PNG per step.

The static book and GitHub-style viewers do not run widgets, so chapters also embed :func:`to_html`
(matplotlib's ``FuncAnimation.to_jshtml``: every frame as a base64 PNG plus a small player). A browser shows
one PNG pixel per CSS pixel, 96 to the inch, so the HTML and GIF frames are drawn at :data:`STATIC_DPI` = 96 (or
the animation's own dpi if higher): a 10 pt caption then reads as 10 pt. The live widget draws at the
animation's dpi, by default the same 96 (commlab.viz.animation.LIVE_DPI). The HTML of an 8-rank ring
all-reduce (15 frames) stays near 1.2 MB.

The HTML loads nothing from the network: ``to_jshtml`` links Font Awesome from a CDN for its buttons' icons,
and :func:`to_html` replaces that link with characters drawn by a few lines of CSS (:data:`ICON_CSS`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from commlab.errors import CommlabError
from commlab.output import write_atomic

#: matplotlib refuses to embed more than this many MB in one HTML animation (rcParams animation.embed_limit).
EMBED_LIMIT_MB = 20.0
#: Pixels per inch of exported frames: a browser's CSS inch, so text shows at its size in points.
STATIC_DPI = 96.0
#: Time per frame, in milliseconds: from 50 frames a second to one frame a minute.
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 20, 60_000

_FONT_AWESOME = re.compile(r"<link\b[^>]*font-awesome[^>]*>", re.IGNORECASE)
#: Characters for the Font Awesome icons (``<i class="fa fa-play">``) of ``to_jshtml``'s buttons.
ICON_CSS = """
.animation .fa { font-style: normal; font-family: "DejaVu Sans", sans-serif; display: inline-block; }
.animation .fa-flip-horizontal { transform: scale(-1, 1); }
.animation .fa-minus::before { content: "\\2212"; } .animation .fa-plus::before { content: "+"; }
.animation .fa-play::before { content: "\\25B6"; } .animation .fa-pause::before { content: "\\275A\\275A"; }
.animation .fa-step-backward::before { content: "|\\25C0"; } .animation .fa-step-forward::before { content: "\\25B6|"; }
.animation .fa-fast-backward::before { content: "\\21E4"; } .animation .fa-fast-forward::before { content: "\\21E5"; }
"""


def without_font_awesome(page_html: str) -> str:
    """``page_html`` without the Font Awesome stylesheet links that ``to_jshtml`` players carry.

    >>> without_font_awesome('<link rel="stylesheet"\\nhref="https://cdn/font-awesome/4.4.0/css/font-awesome.min.css">x')
    'x'
    """
    return _FONT_AWESOME.sub("", page_html)


#: matplotlib's player starts itself with ``setTimeout(..., 0)``, looking its frame and slider up by id. A static
#: page has them in the document by then; JupyterLab runs an output's scripts before it attaches the output to
#: the page (and attaches a cell scrolled out of view later still), so the lookup found nothing and the frame
#: stayed 0 x 0 under its buttons. The player waits instead until its frame is in the document. (The ``;`` first:
#: matplotlib writes its frames without semicolons, and a line that opens with "(" would call the last one.)
_START = re.compile(r"setTimeout\(function\(\) \{\s*(?P<start>anim\w+ = new Animation\([^;]*\);)\s*\}, 0\);")
_WAIT_THEN_START = (";(function commlabStart(tries) {{ if (!document.getElementById(img_id)) {{ "
                    "setTimeout(function() {{ commlabStart(tries + 1); }}, tries < 100 ? 50 : 500); return; }} "
                    "{start} }})(0);")


def start_when_attached(player_html: str) -> str:
    """``player_html`` whose player starts once its frame is in the document (see :data:`_START`).

    >>> out = start_when_attached("setTimeout(function() { anim1 = new Animation(f, i, s, 9, l); }, 0);")
    >>> out.startswith(";(function commlabStart(tries)") and "anim1 = new Animation(f, i, s, 9, l);" in out
    True
    """
    return _START.sub(lambda m: _WAIT_THEN_START.format(start=m["start"]), player_html)


def offline_player(player_html: str) -> str:
    """A ``to_jshtml`` player that fetches nothing (the Font Awesome link replaced by :data:`ICON_CSS`) and
    starts in JupyterLab as on a page (:func:`start_when_attached`)."""
    return f'<style type="text/css">{ICON_CSS}</style>\n{start_when_attached(without_font_awesome(player_html))}'


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
    if isinstance(interval_ms, bool) or not isinstance(interval_ms, int) \
            or not MIN_INTERVAL_MS <= interval_ms <= MAX_INTERVAL_MS:
        raise CommlabError(f"interval_ms must be a whole number of milliseconds from {MIN_INTERVAL_MS} to "
                           f"{MAX_INTERVAL_MS} (one frame a minute), got {interval_ms!r}")
    return interval_ms


def to_html(anim, interval_ms: int = 900, dpi: float | None = None) -> str:
    """A self-contained HTML player (``<style>``, ``<div>`` and ``<script>``, frames inline, nothing fetched from
    the network) of every step of ``anim``.

    ``dpi``: pixels per inch of the frames (default :data:`STATIC_DPI`, or the animation's dpi if higher)."""
    import matplotlib

    with (matplotlib.rc_context({"animation.embed_limit": EMBED_LIMIT_MB, "savefig.dpi": _static_dpi(anim, dpi)}),
          _Player(anim, interval_ms) as player):
        return offline_player(player.to_jshtml(default_mode="loop"))


def save_gif(anim, path: str | os.PathLike, interval_ms: int = 900, dpi: float | None = None) -> Path:
    """Write every step of ``anim`` as an animated GIF (matplotlib's PillowWriter) and return the path.

    ``dpi``: as for :func:`to_html`."""
    from matplotlib.animation import PillowWriter

    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise CommlabError(f"save_gif writes a .gif file, got {str(path)!r}")
    with _Player(anim, interval_ms) as player:
        # matplotlib's stub says fps: int, but PillowWriter only computes each frame's duration as 1000 / fps:
        # a float keeps interval_ms exact (900 ms, not the 1000 ms of fps=1)
        writer = PillowWriter(fps=1000 / interval_ms)  # type: ignore[arg-type]
        player.save(path, writer=writer, dpi=_static_dpi(anim, dpi))
    return path


def save_pngs(anim, directory: str | os.PathLike) -> list[Path]:
    """Write step_000.png (the input) then one PNG per step into ``directory`` (created if needed), at
    :data:`STATIC_DPI` (or the animation's dpi if higher), caption included. A failed write (a full disk) is
    a CommlabError naming the file."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise CommlabError(f"save_pngs needs a directory, and {str(directory)!r} is a file")
    directory.mkdir(parents=True, exist_ok=True)
    step, paths = anim.step, []
    try:
        for k in range(anim.n_steps + 1):
            path = directory / f"step_{k:03d}.png"
            write_atomic(path, anim.set_step(k).to_png_bytes(dpi=_static_dpi(anim, None)))
            paths.append(path)
    finally:
        anim.set_step(step)
    return paths
