"""What NCCL picks at every size, one band per machine (the ring vs tree lab).

Each band is a :class:`commlab.tuner.predict.Prediction` (NCCL's tuner replayed on a described machine, chapter 08):
the sizes coloured by the (algorithm, protocol) pair NCCL picks there, Ring in blues, Tree in oranges, NVLS in
greens, each protocol a shade (LL light, LL128 middle, Simple dark), the pair written inside where it fits.
``marks`` put a diamond on a band at a size the caller computed (the plain two-algorithm crossover, say).
Nothing here predicts anything: the bands are what :func:`commlab.tuner.predict.predict` returned.
"""
from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from commlab.errors import CommlabError
from commlab.viz.render import new_figure, size_axis
from commlab.viz.style import INK, MUTED, ink_on, use_book_style

if TYPE_CHECKING:  # the type only: viz draws what it is given and imports no model
    from matplotlib.artist import Artist

    from commlab.tuner.predict import Prediction

#: Colour of each (algorithm/protocol) pair: ColorBrewer Blues, Oranges and Greens (Brewer, 2002), light to dark.
PAIR_COLORS = MappingProxyType({
    "Ring/LL": "#9ECAE1", "Ring/LL128": "#4292C6", "Ring/Simple": "#08519C",
    "Tree/LL": "#FDAE6B", "Tree/LL128": "#F16913", "Tree/Simple": "#A63603",
    "NVLS/Simple": "#41AB5D", "NVLSTree/Simple": "#006D2C",
})
OTHER = "#BBBBBB"
#: A pair's name is written inside its span when the span covers at least this many octaves of size.
LABEL_OCTAVES = 5.0


def _spans(prediction) -> list[tuple[float, float, str]]:
    """(first size, last size, pair) of each run of sizes with one pick, in size order."""
    sizes = np.atleast_1d(prediction.nbytes).astype(float)
    order = np.argsort(sizes)
    sizes, pairs = sizes[order], [prediction.pairs()[i] for i in order]
    spans, start = [], 0
    for i in range(1, len(sizes) + 1):
        if i == len(sizes) or pairs[i] != pairs[start]:
            spans.append((sizes[start], sizes[i - 1], pairs[start]))
            start = i
    return spans


def _half_step(prediction) -> float:
    """Half the ratio between neighbouring sizes (as a factor): how far a size's cell reaches either side."""
    sizes = np.sort(np.atleast_1d(prediction.nbytes).astype(float))
    return float(np.sqrt(sizes[1] / sizes[0])) if sizes.size > 1 and sizes[0] > 0 else 1.4142


def _band(ax, y: float, prediction) -> set[str]:
    """Draw one band at height ``y``; the pairs it uses."""
    half = _half_step(prediction)
    used = set()
    for first, last, pair in _spans(prediction):
        left, right = first / half, last * half
        colour = PAIR_COLORS.get(pair, OTHER)
        ax.barh(y, right - left, left=left, height=0.7, color=colour, edgecolor="white", linewidth=0.8)
        if np.log2(right / left) >= LABEL_OCTAVES:
            ax.text(np.sqrt(left * right), y, pair, ha="center", va="center", fontsize=10, color=ink_on(colour))
        used.add(pair)
    return used


def plot_nccl_picks(bands: Sequence[tuple[str, Prediction]], *, marks: Sequence[tuple[int, float, str]] = (),
                    title: str = "") -> Figure:
    """One band per (label, Prediction), top to bottom; ``marks`` are (band index, nbytes, label) diamonds."""
    if not bands:
        raise CommlabError("plot_nccl_picks needs at least one (label, Prediction) band")
    for index, _nbytes, _label in marks:
        if not 0 <= index < len(bands):
            raise CommlabError(f"a mark's band index must be 0..{len(bands) - 1}, got {index}")
    with use_book_style():
        fig = new_figure(9.6, 0.75 * len(bands) + 2.8, layout="constrained")
        ax = fig.add_subplot()
        used: set[str] = set()
        for i, (_label, prediction) in enumerate(bands):
            used |= _band(ax, -i, prediction)
        for k, (index, nbytes, label) in enumerate(marks):
            ax.plot([nbytes], [-index + 0.42], marker="v", color=INK, markersize=8, linestyle="none",
                    label=label if label not in [m[2] for m in marks[:k]] else None)
        ax.set_yticks([-i for i in range(len(bands))], [label for label, _ in bands])
        ax.set_ylim(-len(bands) + 0.4, 0.75)
        size_axis(ax, 16)
        sizes = np.concatenate([np.atleast_1d(p.nbytes).astype(float) for _, p in bands])
        if np.any(sizes <= 0):
            raise CommlabError(f"sizes must be > 0 on a log axis, got {sizes.min():g}")
        ax.set_xlim(sizes.min() / _half_step(bands[0][1]), sizes.max() * _half_step(bands[0][1]))
        ax.set_xlabel("all-reduce size")
        ax.grid(axis="y", visible=False)
        handles: list[Artist] = [Patch(color=PAIR_COLORS.get(p, OTHER), label=p) for p in PAIR_COLORS if p in used]
        handles += [Patch(color=OTHER, label=p) for p in sorted(used - set(PAIR_COLORS))]
        handles += ax.get_legend_handles_labels()[0]
        fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=10)
        ax.set_title(title or "the (algorithm, protocol) NCCL picks at each size", loc="left", color=INK)
        ax.tick_params(axis="y", colors=MUTED)
    return fig


def plot_pair_times(prediction, *, title: str = "", max_ratio: float = 20.0) -> Figure:
    """Every (algorithm, protocol) pair's predicted time (``prediction.table``) over the fastest pair's at each
    size, in the pairs' colours, and NCCL's pick over them: where two lines cross 1, the fastest pair changes;
    where NCCL's pick leaves 1, NCCL's own estimate ranked the pairs otherwise than the machine runs them."""
    sizes = np.atleast_1d(prediction.nbytes).astype(float)
    if sizes.size < 2 or np.any(sizes <= 0):
        raise CommlabError(f"plot_pair_times needs at least 2 sizes > 0, got {sizes.size}")
    order = np.argsort(sizes)
    best_us = np.min(np.stack([np.asarray(t, dtype=float) for t in prediction.table.values()]), axis=0)
    with use_book_style():
        fig = new_figure(9.0, 5.2, layout="constrained")
        ax = fig.add_subplot()
        for (algo, proto), time_us in prediction.table.items():
            pair = f"{algo}/{proto}"
            ax.plot(sizes[order], (np.asarray(time_us, dtype=float) / best_us)[order],
                    color=PAIR_COLORS.get(pair, OTHER), linewidth=1.6, label=pair)
        ax.plot(sizes[order], (np.atleast_1d(prediction.time_s) * 1e6 / best_us)[order], color=INK, linewidth=4,
                alpha=0.3, label="NCCL's pick")
        size_axis(ax, 16)
        ax.set_yscale("log")
        ax.set_ylim(0.95, max_ratio)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:g}x"))
        ax.set_xlabel("all-reduce size")
        ax.set_ylabel("predicted time / the fastest pair's")
        fig.legend(loc="outside right upper", fontsize=10)
        ax.set_title(title or "every (algorithm, protocol) pair against the fastest, and NCCL's pick", loc="left",
                     color=INK)
    return fig
