"""The artists of a schedule animation, built once per (layout, N) and updated per frame.

Each rank's buffer is a box of cells: column c is chunk c, row s (rank 0 at the bottom) is source rank s,
coloured with rank s's colour once chunk c holds rank s's contribution (``Run.holds``) and pale grey before.
A full column is a finished chunk. All cells of a panel are one PolyCollection and all arrows one pool
(:mod:`commlab.viz.arrows`), so a frame only changes face colours, which arrows show, and a few texts; the
static parts (labels, key, title) sit in a cached background (:class:`commlab.viz.render.Blitter`).
"""
from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from commlab.viz.arrows import ArrowPool, arrow_geometry, edge_point
from commlab.viz.layout import Layout
from commlab.viz.render import Blitter
from commlab.viz.style import ALARM, EMPTY, INK, MIN_FONT_PT, MUTED, ink_on, rank_colors

#: A transfer's place among the arrows: (panel, src, dst).
Pair = tuple[int, int, int]
KEY = ("Each box is one rank's buffer: a column per chunk (chunk 0 on the left), a row per source rank "
       "(rank 0 at the bottom), coloured once that rank's data is in the chunk. Arrow label cK+ : chunk K, "
       "added by the receiver; cK : chunk K, stored.")
#: Inches above the panels (title), above each panel, for a trace's alert.
TOP_IN, PANEL_TITLE_IN, ALERT_IN = 0.45, 0.3, 0.55
#: The bottom band that holds only the caption (3 lines at 10 pt, 0.5 in, and margins): the live widget crops
#: it and shows the caption as HTML text.
CAPTION_IN = 0.75
#: Every text of the scene but the title is set at the house minimum, in points.
TEXT_PT = MIN_FONT_PT
#: Line pitch of wrapped text, as a multiple of the font size (matplotlib's default linespacing).
LINE_PITCH = 1.2
#: Arrow head length in inches.
HEAD_IN = 0.13


def key_text(width_in: float) -> str:
    """The key, wrapped to the figure's width at :data:`TEXT_PT`."""
    return textwrap.fill(KEY, caption_width(width_in, TEXT_PT))


def bottom_in(width_in: float) -> float:
    """Inches below the panels: the key (as many lines as it wraps to, plus margins), then the caption band."""
    key_lines = key_text(width_in).count("\n") + 1
    return CAPTION_IN + key_lines * LINE_PITCH * TEXT_PT / 72 + 0.2


def figure_size_in(layout: Layout, n_ranks: int, alert_room: bool = False) -> tuple[float, float, float]:
    """(width, height, height of one panel) in inches: the panels keep the layout's aspect ratio."""
    x0, x1, y0, y1 = layout.limits
    width_in = 5.6 + 0.2 * n_ranks if layout.label_side == "outside" else max(6.4, 0.55 * n_ranks + 1.0)
    panel_in = 0.96 * width_in * (y1 - y0) / (x1 - x0)
    title_in = PANEL_TITLE_IN if any(layout.panel_titles) else 0.0
    top_in = TOP_IN + (ALERT_IN if alert_room else 0.0)
    return width_in, bottom_in(width_in) + top_in + (panel_in + title_in) * layout.n_panels, panel_in


def caption_width(width_in: float, fontsize: float) -> int:
    """Characters per line that fit ``width_in`` inches at ``fontsize`` points (about 0.55 em per character)."""
    return int(0.95 * width_in * 72 / (0.55 * fontsize))


def _cell_verts(centre: np.ndarray, w: float, h: float, n_rows: int, n_cols: int) -> np.ndarray:
    """[n_rows * n_cols, 4, 2] corners of a box's cells, row-major from the bottom-left."""
    x0, y0 = centre[0] - w / 2, centre[1] - h / 2
    rows, cols = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    left, bottom = x0 + cols.ravel() * w / n_cols, y0 + rows.ravel() * h / n_rows
    right, top = left + w / n_cols, bottom + h / n_rows
    return np.stack([np.stack([left, bottom], 1), np.stack([right, bottom], 1),
                     np.stack([right, top], 1), np.stack([left, top], 1)], axis=1)


class Scene:
    """One figure's worth of buffers, arrows and text for ``n_ranks`` ranks laid out by ``layout``."""

    def __init__(self, fig: Figure, layout: Layout, n_ranks: int, pairs: set[Pair], title: str,
                 alert_room: bool = False) -> None:
        self.layout, self.n_ranks = layout, n_ranks
        self.palette = np.array([to_rgba(c) for c in rank_colors(n_ranks)])      # [n_ranks, 4]
        self.empty = np.array(to_rgba(EMPTY))
        width_in, height_in, panel_in = figure_size_in(layout, n_ranks, alert_room)
        fig.set_size_inches(width_in, height_in)
        self.data_per_in = (layout.limits[1] - layout.limits[0]) / (0.96 * width_in)
        self.axes = self._make_axes(fig, panel_in / height_in, PANEL_TITLE_IN / height_in)
        self.cells, self.outlines = self._make_buffers()
        self.arrows = self._make_arrows(pairs, HEAD_IN * self.data_per_in)
        self.title = fig.text(0.02, 1 - 0.08 / height_in, title, ha="left", va="top", fontsize=13,
                              weight="bold", color=INK)
        self.alert = fig.text(0.02, 1 - 0.36 / height_in, "", ha="left", va="top", fontsize=TEXT_PT, color=ALARM,
                              weight="bold")
        fig.text(0.02, (CAPTION_IN + 0.06) / height_in, key_text(width_in), ha="left", va="bottom",
                 fontsize=TEXT_PT, color=MUTED)
        self.caption = fig.text(0.02, (CAPTION_IN - 0.06) / height_in, "", ha="left", va="top", fontsize=TEXT_PT,
                                color=INK)
        self.caption_width = caption_width(width_in, TEXT_PT)
        self.alert_width = int(0.88 * self.caption_width)  # bold is wider
        self.blitter = Blitter(fig, self._dynamic())

    def _dynamic(self) -> list:
        """The artists a frame changes, in drawing order (everything else stays in the cached background)."""
        out = list(self.cells) + [outline for panel in self.outlines for outline in panel]
        out += [artist for pool in self.arrows for artist in pool.artists]
        return out + [self.caption, self.alert]

    @property
    def rank_artists(self) -> list:
        """One outline per drawn buffer (gid "rank-<r>"): what a test counts to see N ranks drawn."""
        return [outline for panel in self.outlines for outline in panel]

    def cell_colours(self, panel: int, rank: int) -> np.ndarray:
        """[source rank, chunk column, rgba] as drawn now for ``rank``'s buffer in ``panel``."""
        n_cols = len(self.layout.panel_chunks[panel])
        faces = self.cells[panel].get_facecolor().reshape(self.n_ranks, self.n_ranks, n_cols, 4)
        return faces[rank]

    def arrows_shown(self) -> list[tuple[int, int, str, tuple]]:
        """(src, dst, label, rgba) of every arrow drawn now, panel by panel."""
        out = []
        for pool in self.arrows:
            for (src, dst), label in pool.labels.items():
                if label.get_visible():
                    out.append((src, dst, label.get_text(), to_rgba(label.get_color())))
        return out

    def _make_axes(self, fig: Figure, panel_frac: float, title_frac: float) -> list:
        axes = []
        bottom = bottom_in(fig.get_size_inches()[0]) / fig.get_size_inches()[1]
        pitch = panel_frac + (title_frac if any(self.layout.panel_titles) else 0.0)
        for p in range(self.layout.n_panels):
            ax = fig.add_axes((0.02, bottom + (self.layout.n_panels - 1 - p) * pitch, 0.96, panel_frac))
            ax.set_axis_off()
            x0, x1, y0, y1 = self.layout.limits
            ax.set_xlim(x0, x1)
            ax.set_ylim(y0, y1)
            ax.set_aspect("equal", adjustable="box")
            if self.layout.panel_titles[p]:
                ax.set_title(self.layout.panel_titles[p], fontsize=TEXT_PT, color=MUTED, loc="left")
            axes.append(ax)
        return axes

    def _make_buffers(self) -> tuple[list, list[list]]:
        cells, outlines = [], []
        w, h = self.layout.box_w, self.layout.box_h
        for p, ax in enumerate(self.axes):
            n_cols = len(self.layout.panel_chunks[p])
            centres = self.layout.centres[p]
            verts = np.concatenate([_cell_verts(c, w, h, self.n_ranks, n_cols) for c in centres])
            edge_pt = 0.6 if self.n_ranks * n_cols <= 64 else 0.25   # thinner white grid for 16 x 16 cells
            # an (n, 4, 2) array takes PolyCollection's fast path; matplotlib's stub asks for a Sequence
            grid = PolyCollection(verts, facecolors=EMPTY, edgecolors="white",  # type: ignore[arg-type]
                                  linewidths=edge_pt, zorder=2)
            cells.append(ax.add_collection(grid))
            outlines.append([ax.add_patch(Rectangle((x - w / 2, y - h / 2), w, h, fill=False, edgecolor=INK,
                                                    linewidth=1.0, zorder=4, gid=f"rank-{rank}"))
                             for rank, (x, y) in enumerate(centres)])
            for rank, (x, y) in enumerate(centres):
                self._rank_label(ax, rank, x, y)
            if self.layout.edges:
                tree = [centres[[a, b]] for a, b in self.layout.edges[p]]
                ax.add_collection(LineCollection(tree, colors="#CCCCCC", linewidths=1.2, zorder=1))
        return cells, outlines

    def _rank_label(self, ax, rank: int, x: float, y: float) -> None:
        colour = rank_colors(self.n_ranks)[rank]
        style = dict(fontsize=TEXT_PT, color=ink_on(colour), zorder=5,
                     bbox=dict(boxstyle="round,pad=0.2", facecolor=colour, edgecolor="none"))
        if self.layout.label_side == "outside":
            r = np.hypot(x, y) or 1.0
            reach = self._label_reach(x / r, y / r, f"rank {rank}")
            ax.text(x + x / r * reach, y + y / r * reach, f"rank {rank}", ha="center", va="center", **style)
        else:
            ax.text(x, y - self.layout.box_h / 2 - 0.1, str(rank), ha="center", va="top", **style)

    def _label_reach(self, ux: float, uy: float, text: str) -> float:
        """How far from its box's centre, along the unit direction (ux, uy), a label's centre goes so that the
        label clears the box by 0.05 in on every side.

        The label is a box of about 0.6 em per character plus its pad; it clears the buffer's box when its
        centre is outside the box grown by the label's half sizes and the gap (their Minkowski sum), whose edge
        along (ux, uy) is at min(grown_half_w / |ux|, grown_half_h / |uy|) from the centre."""
        gap = 0.05 * self.data_per_in
        half_w = self.layout.box_w / 2 + (0.6 * len(text) + 0.4) * TEXT_PT / 72 / 2 * self.data_per_in + gap
        half_h = self.layout.box_h / 2 + (LINE_PITCH + 0.4) * TEXT_PT / 72 / 2 * self.data_per_in + gap
        return min(half_w / max(abs(ux), 1e-9), half_h / max(abs(uy), 1e-9))

    def _make_arrows(self, pairs: set[Pair], head_len: float) -> list[ArrowPool]:
        half_w, half_h = self.layout.box_w / 2, self.layout.box_h / 2
        pools = []
        for p, ax in enumerate(self.axes):
            geometry = {}
            for panel, src, dst in sorted(pairs):
                if panel == p:
                    a, b = self.layout.centres[p][src], self.layout.centres[p][dst]
                    start, end = edge_point(a, b, half_w, half_h, 0.04), edge_point(b, a, half_w, half_h, 0.04)
                    geometry[(src, dst)] = arrow_geometry(start, end, self.layout.arc_rad, head_len)
            pools.append(ArrowPool(ax, geometry, TEXT_PT, INK, halo=bool(self.layout.edges)))
        return pools

    def update(self, holds_k: np.ndarray, transfers, alarm, ghosts, caption: str, alert: str = "") -> None:
        """Show one frame: ``holds_k`` is bool [n_ranks, n_chunks, n_ranks]; transfers as Transfer tuples."""
        for p, chunks in enumerate(self.layout.panel_chunks):
            held = holds_k[:, list(chunks), :].transpose(0, 2, 1)                  # [rank, source, chunk]
            faces = np.where(held[..., None], self.palette[None, :, None, :], self.empty)
            self.cells[p].set_facecolor(faces.reshape(-1, 4))
            for outline in self.outlines[p]:
                outline.set(edgecolor=INK, linewidth=1.0, linestyle="-")
        styles: list[dict] = [{} for _ in self.axes]
        self._style(styles, transfers, INK)
        self._style(styles, alarm, ALARM)
        self._style(styles, ghosts, ALARM, ghost=True)
        for pool, panel_styles in zip(self.arrows, styles):
            pool.show(panel_styles)
        self.caption.set_text(caption)
        self.alert.set_text(alert)

    def _style(self, styles: list[dict], transfers, colour: str, ghost: bool = False) -> None:
        """Add (label, colour, dashed) per (src, dst) to ``styles``; red ones also outline the receiver."""
        words: dict[Pair, list[str]] = {}
        for t in transfers:
            pair = (self.layout.panel_of(t.chunk), t.src, t.dst)
            words.setdefault(pair, []).append(f"c{t.chunk}{'+' if t.reduce else ''}")
            if colour == ALARM:
                self.outlines[pair[0]][t.dst].set(edgecolor=ALARM, linewidth=2.6, linestyle="--")
        for (panel, src, dst), labels in words.items():
            styles[panel][(src, dst)] = (("missing " if ghost else "") + ",".join(labels), colour, ghost)
