"""Before and after one collective, ranks x elements (chapter 04): whose data each element holds, and its value.

Each row is one rank's buffer and each cell one element. The values are
``commlab.collectives.spec(op).reference(inputs, root)``; which source ranks reach each output element is
``commlab.collectives.contributions(op, n_ranks, length, root)`` (the reference run on indicator inputs).
This module computes neither: it colours a cell with its source rank's colour (the rank labels on the left
are the key), paints a cell that sums several ranks dark with a strip of their colours under the value, greys
the inputs the collective never reads and the non-root outputs of ``reduce`` (contents undefined: a backend may
use them as scratch) and ``gather`` (no output at all).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from commlab import collectives
from commlab.errors import CommlabError, check_n_ranks
from commlab.viz.render import new_figure
from commlab.viz.style import EMPTY, INK, MIN_FONT_PT, MUTED, ink_on, rank_colors, use_book_style

#: Collectives whose result torch defines on the root only (torch.distributed.reduce and gather docs).
ROOT_ONLY = ("reduce", "gather")
#: A cell that sums several ranks' data.
SUM_COLOR = "#3A3A3A"
#: The most ranks and the most elements in one row that the picture draws legibly.
MAX_RANKS, MAX_ELEMENTS = 16, 64
#: Geometry in inches: widest cell, row pitch, rank-label column, row-note column, widest and narrowest figure.
_CELL_MAX_IN, _ROW_IN, _LABEL_IN, _NOTE_IN, _MAX_WIDTH_IN, _MIN_WIDTH_IN = 0.6, 0.34, 0.85, 0.95, 10.0, 6.5
#: Title, panel title, gap between the panels, legend band and padding, in inches.
_TITLE_IN, _PANEL_TITLE_IN, _GAP_IN, _LEGEND_IN, _PAD_IN = 0.4, 0.3, 0.2, 0.4, 0.12
#: Estimated advance of one digit at MIN_FONT_PT (DejaVu Sans digits are 0.64 em), in inches.
_CHAR_IN = 0.64 * MIN_FONT_PT / 72


def example_inputs(op: str, n_ranks: int, per_chunk: int = 2) -> list[np.ndarray]:
    """Rank r holds ``(r + 1) * [1, 2, 3, ...]``, sized as torch expects for ``op``: ``per_chunk`` elements per
    chunk where the collective cuts a buffer into n_ranks chunks (nccl-tests' count rule, collectives.spec)."""
    n = check_n_ranks(n_ranks, 1, MAX_RANKS)
    spec = collectives.spec(op)
    count = per_chunk if spec.whole_buffer_size else per_chunk * n
    length = spec.input_count(count, n)
    return [np.arange(1, length + 1, dtype=float) * (rank + 1) for rank in range(n)]


@dataclass(frozen=True)
class Picture:
    """What :func:`plot_collective` draws, all of it from commlab.collectives."""

    op: str
    root: int
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    reach: np.ndarray
    """bool [output rank, element, source rank], collectives.contributions."""

    @property
    def n_ranks(self) -> int:
        return len(self.inputs)

    def defined(self, rank: int) -> bool:
        """Whether ``rank``'s output is the collective's result (reduce and gather: the root only)."""
        return self.op not in ROOT_ONLY or rank == self.root

    def read(self, rank: int) -> bool:
        """Whether ``rank``'s input reaches any defined output."""
        rows = [q for q in range(self.n_ranks) if self.defined(q)]
        return bool(self.reach[rows, :, rank].any())


def _checked_inputs(inputs, n_ranks: int) -> list[np.ndarray]:
    try:
        arrays = [np.asarray(x, dtype=float) for x in inputs]
    except (TypeError, ValueError) as exc:
        raise CommlabError(f"inputs must be one list of numbers per rank, got {inputs!r}") from exc
    lengths = [a.shape for a in arrays]
    if len(arrays) != n_ranks or any(a.ndim != 1 for a in arrays) or len({a.size for a in arrays}) != 1:
        raise CommlabError(f"inputs must be {n_ranks} one-dimensional buffers of one length, got shapes {lengths}")
    if not 1 <= arrays[0].size <= MAX_ELEMENTS or not all(np.isfinite(a).all() for a in arrays):
        raise CommlabError(f"each input must hold 1 to {MAX_ELEMENTS} finite numbers, got shapes {lengths}")
    return arrays


def collective_picture(op: str, n_ranks: int, inputs=None, root: int = 0) -> Picture:
    """The values and sources :func:`plot_collective` draws (inputs default to :func:`example_inputs`)."""
    n = check_n_ranks(n_ranks, 1, MAX_RANKS)
    name = collectives.canonical(op)
    inputs = example_inputs(name, n) if inputs is None else _checked_inputs(inputs, n)
    outputs = collectives.spec(name).reference(inputs, root=root)
    if max(len(out) for out in outputs) > MAX_ELEMENTS:
        raise CommlabError(f"{name} on {n} ranks would draw {max(len(out) for out in outputs)} elements in a row; "
                           f"at most {MAX_ELEMENTS} fit: pass shorter inputs")
    reach = collectives.contributions(name, n, len(inputs[0]), root=root)
    return Picture(name, root, inputs, outputs, reach)


def value_text(value: float) -> str:
    """A cell's value: whole numbers as integers, others with three significant digits.

    >>> value_text(10.0), value_text(2.5), value_text(1 / 3)
    ('10', '2.5', '0.333')
    """
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e5 else f"{value:.3g}"


@dataclass(frozen=True)
class _Geometry:
    """Sizes in inches: each panel is n_ranks rows of n_cols cells, with room for labels, notes and a key."""

    n_cols: int
    cell_in: float
    width_in: float
    height_in: float
    panel_in: float
    pitch_in: float
    """From the top of one panel's title to the next one's."""
    sums: bool
    """Whether any cell sums several ranks (then the key to sums is drawn)."""


def _geometry(picture: Picture) -> _Geometry:
    n_cols = max(len(x) for x in picture.inputs + picture.outputs)
    notes = any(not picture.read(r) or not picture.defined(r) for r in range(picture.n_ranks))
    note_in = _NOTE_IN if notes else 0.0
    cell_in = min(_CELL_MAX_IN, (_MAX_WIDTH_IN - 2 * _PAD_IN - _LABEL_IN - note_in) / n_cols)
    width_in = max(_MIN_WIDTH_IN, 2 * _PAD_IN + _LABEL_IN + n_cols * cell_in + note_in)
    panel_in = picture.n_ranks * _ROW_IN
    pitch_in = _PANEL_TITLE_IN + panel_in + _GAP_IN
    sums = bool(picture.reach.sum(axis=2).max() > 1)
    height_in = 2 * _PAD_IN + _TITLE_IN + 2 * pitch_in - _GAP_IN + (_LEGEND_IN if sums else 0.0)
    return _Geometry(n_cols, cell_in, width_in, height_in, panel_in, pitch_in, sums)


def plot_collective(op: str, n_ranks: int, *, inputs=None, root: int = 0) -> Figure:
    """Every rank's buffer before (inputs) and after (outputs) collective ``op`` on ``n_ranks`` ranks (1 to 16).

    ``inputs``: one buffer per rank, all of one length (default :func:`example_inputs`); ``root``: the root of
    a rooted collective. A cell shows the colour of the rank whose data it holds and its value; a dark cell
    with a strip of colours sums those ranks. Inputs that no result reads, and the non-root outputs of
    ``reduce`` and ``gather`` (undefined in torch), are grey with a note. Values are printed where they fit at
    10 pt (the title says when they do not). Raises CommlabError for an unknown collective, a bad root or
    inputs of the wrong shape.
    """
    picture = collective_picture(op, n_ranks, inputs, root)
    g = _geometry(picture)
    fits = _values_fit(picture, g.cell_in)
    with use_book_style():
        fig = new_figure(g.width_in, g.height_in)
        title = _title(picture) + ("" if fits else " (cells too narrow to print the values)")
        fig.text(_PAD_IN / g.width_in, 1 - _PAD_IN / g.height_in, title, ha="left", va="top", fontsize=12,
                 weight="bold")
        panels = ((picture.inputs, "before: each rank's input, coloured by that rank"),
                  (picture.outputs, _after_words(picture)))
        for index, (rows, words) in enumerate(panels):
            top_in = _PAD_IN + _TITLE_IN + index * g.pitch_in
            fig.text(_PAD_IN / g.width_in, 1 - top_in / g.height_in, words, ha="left", va="top", fontsize=11)
            box = ((_PAD_IN + _LABEL_IN) / g.width_in, 1 - (top_in + _PANEL_TITLE_IN + g.panel_in) / g.height_in,
                   g.n_cols * g.cell_in / g.width_in, g.panel_in / g.height_in)
            _panel(fig.add_axes(box), picture, rows, index == 1, g.n_cols, fits)
        if g.sums:
            _legend(fig, g.width_in, g.height_in)
    return fig


def _title(picture: Picture) -> str:
    rooted = collectives.spec(picture.op).rooted
    return f"{picture.op} on {picture.n_ranks} ranks" + (f", root rank {picture.root}" if rooted else "")


def _after_words(picture: Picture) -> str:
    if picture.op == "gather":
        return f"after: only rank {picture.root} receives the gathered buffer (the others get no output)"
    if picture.op in ROOT_ONLY:
        return f"after: only rank {picture.root}'s buffer holds the result (torch leaves the others undefined)"
    return "after: each rank's output, coloured by the rank whose data each element holds"


def _values_fit(picture: Picture, cell_in: float) -> bool:
    """Whether every value fits its cell at MIN_FONT_PT (estimated from the digits' advance)."""
    widest = max(len(value_text(v)) for row in picture.inputs + picture.outputs for v in row)
    return widest * _CHAR_IN + 0.06 <= cell_in


def _panel(ax, picture: Picture, rows, after: bool, n_cols: int, fits: bool) -> None:
    """One panel: a row of cells per rank, the rank labels on the left, any row note on the right."""
    ax.set_axis_off()
    ax.set_xlim(0, n_cols)
    ax.set_ylim(picture.n_ranks, 0)
    colours = rank_colors(picture.n_ranks)
    plain: tuple[list, list] = ([], [])
    greyed: list = []
    strips: tuple[list, list] = ([], [])
    for rank, values in enumerate(rows):
        _rank_label(ax, rank, colours[rank])
        if not (picture.defined(rank) if after else picture.read(rank)):
            greyed += [_rect(j, rank, 0.0) for j in range(len(values))]
            note = ("no output" if picture.op == "gather" else "undefined") if after else "not read"
            _row_note(ax, rank, len(values), note)
            continue
        for j, value in enumerate(values):
            sources = np.flatnonzero(picture.reach[rank, j]) if after else np.array([rank])
            face = colours[sources[0]] if len(sources) == 1 else SUM_COLOR
            plain[0].append(_rect(j, rank, 0.0))
            plain[1].append(face)
            if len(sources) > 1:
                _strip(strips, j, rank, [colours[s] for s in sources])
            if fits:
                y = rank + (0.5 if len(sources) == 1 else 0.38)
                ax.text(j + 0.5, y, value_text(value), ha="center", va="center", fontsize=MIN_FONT_PT,
                        color=ink_on(face))
    ax.add_collection(PolyCollection(plain[0], facecolors=plain[1], linewidths=0, gid="cells"))
    ax.add_collection(PolyCollection(strips[0], facecolors=strips[1], linewidths=0, gid="sum-strips"))
    ax.add_collection(PolyCollection(greyed, facecolors=EMPTY, edgecolors="#BBBBBB", hatch="//", linewidths=0.5,
                                     gid="grey"))


def _row_note(ax, rank: int, n_cells: int, words: str) -> None:
    ax.annotate(words, (n_cells, rank + 0.5), xytext=(6, 0), textcoords="offset points", ha="left", va="center",
                fontsize=MIN_FONT_PT, color=MUTED)


def _rect(j: float, rank: int, inset: float, width: float = 0.92, top: float = 0.06, bottom: float = 0.94):
    """Corners of a cell (or of part of it): x from j + 0.04 + inset over ``width``, y from top to bottom."""
    x0 = j + 0.04 + inset
    return [(x0, rank + top), (x0 + width, rank + top), (x0 + width, rank + bottom), (x0, rank + bottom)]


def _strip(strips, j: int, rank: int, colours: list[str]) -> None:
    """The colours of the ranks a summed cell holds, side by side along its bottom edge."""
    step = 0.92 / len(colours)
    for i, colour in enumerate(colours):
        strips[0].append(_rect(j, rank, i * step, step, 0.72, 0.94))
        strips[1].append(colour)


def _rank_label(ax, rank: int, colour: str) -> None:
    ax.annotate(f"rank {rank}", (0, rank + 0.5), xytext=(-6, 0), textcoords="offset points", ha="right",
                va="center", fontsize=MIN_FONT_PT, color=ink_on(colour), annotation_clip=False,
                bbox=dict(boxstyle="round,pad=0.2", facecolor=colour, edgecolor="none"))


def _legend(fig: Figure, width_in: float, height_in: float) -> None:
    """The key to summed cells, under the panels."""
    handles = [Patch(facecolor=SUM_COLOR, label="dark: a sum; the strip under the value shows which ranks it holds")]
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(_PAD_IN / width_in, _PAD_IN / height_in),
               fontsize=MIN_FONT_PT, borderaxespad=0, handlelength=1.4, labelcolor=INK)
