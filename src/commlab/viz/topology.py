"""Heatmap of an ``nvidia-smi topo -m`` relation matrix, its legend ordered fast to slow (chapter 01).

The relation names are nvidia-smi's own (its legend, printed under the matrix):

* ``X``: the device itself;
* ``NV#``: a bonded set of # NVLinks (more links, more bandwidth);
* ``PIX``: at most one PCIe bridge; ``PXB``: several PCIe bridges, no host bridge;
* ``PHB``: through a PCIe host bridge (the CPU); ``NODE``: across host bridges inside one NUMA node;
* ``SYS``: across NUMA nodes, over the SMP interconnect (QPI/UPI or Infinity Fabric); ``SOC``: its older name.

That is the order NCCL prefers paths in, fastest first. :func:`relation_color` gives each relation one fixed
colour for the whole book, on matplotlib's *cividis* scale (Nunez, Anderton and Renslow, PLOS ONE 13(7), 2018:
uniform in lightness and readable with colour-vision deficiency): dark is fast, light is slow, so the same
relation has the same colour in every figure and any NVLink is darker than any PCIe path.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import cast

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from commlab.errors import CommlabError
from commlab.viz.render import new_figure
from commlab.viz.style import MIN_FONT_PT, ink_on, use_book_style

#: PCIe and system relations after the NVLink ones, fastest first, with nvidia-smi's meaning.
PATH_RELATIONS = (
    ("PIX", "at most one PCIe bridge"),
    ("PXB", "several PCIe bridges"),
    ("PHB", "through a PCIe host bridge (CPU)"),
    ("NODE", "across host bridges, one NUMA node"),
    ("SYS", "across NUMA nodes (SMP link)"),
    ("SOC", "across CPU sockets (older name of SYS)"),
)
_NV_RE = re.compile(r"^NV(\d+)$")
_ACCEPTED = "X, NV# (e.g. NV18), PIX, PXB, PHB, NODE, SYS, SOC"
#: Where each PCIe/system relation sits on cividis (0 dark, 1 light); NV# take [0, _NV_LIGHTEST] (below).
_PATH_POSITION = {"PIX": 0.46, "PXB": 0.56, "PHB": 0.66, "NODE": 0.76, "SYS": 0.88, "SOC": 0.97}
_NV_LIGHTEST = 0.36   # NV1's position; NV18 (the most links of one GPU pair on any machine so far) sits at 0
_NV_MOST = 18
#: The device itself: plain light grey, outside the scale.
X_COLOR = (0.85, 0.85, 0.85, 1.0)
_CELL_IN = 0.62       # one matrix cell, inches: room for "NODE" at 10 pt
_PAD_IN = 0.15        # white border around the figure, inches
_GAP_IN = 0.15        # between the matrix (and its labels) and the legend, inches
_FONT_PT = MIN_FONT_PT  # cell names, labels and legend: the house minimum


def _check_matrix(matrix: Sequence[Sequence[str]], labels: Sequence[str]) -> list[list[str]]:
    rows = [[str(cell).strip().upper() for cell in row] for row in matrix]
    n = len(labels)
    if n == 0 or len(rows) != n or any(len(row) != n for row in rows):
        shape = f"{len(rows)} rows of lengths {[len(row) for row in rows]}"
        raise CommlabError(f"topology matrix must be square with one row and column per label ({n}), got {shape}")
    known = {name for name, _ in PATH_RELATIONS} | {"X"}
    for row in rows:
        for cell in row:
            if cell not in known and not _NV_RE.match(cell):
                raise CommlabError(f"unknown topology relation {cell!r}; expected one of: {_ACCEPTED}")
    return rows


def relation_order(cells: set[str]) -> list[tuple[str, str]]:
    """The relations present, fastest first, each with its meaning: X, NV# by link count (most first), PIX..SYS.

    >>> [name for name, _ in relation_order({"SYS", "NV4", "X", "NV18", "PIX"})]
    ['X', 'NV18', 'NV4', 'PIX', 'SYS']
    """
    links = {c: int(m.group(1)) for c in cells if (m := _NV_RE.match(c))}
    order = [("X", "the device itself")] if "X" in cells else []
    order += [(c, _nvlink_meaning(links[c])) for c in sorted(links, key=lambda c: -links[c])]
    order += [(name, meaning) for name, meaning in PATH_RELATIONS if name in cells]
    return order


def _nvlink_meaning(links: int) -> str:
    return f"{links} bonded NVLink{'s' if links != 1 else ''}"


def relation_color(relation: str) -> tuple[float, float, float, float]:
    """The book's one colour (RGBA) for ``relation``, the same in every figure.

    Position on cividis, 0 = darkest = fastest: NV# at ``0.36 (1 - log2(#) / log2(18))`` (NV18 and more at 0,
    NV1 at 0.36; log spacing keeps NV1/NV2 and NV4/NV6 apart), then PIX 0.46, PXB 0.56, PHB 0.66, NODE 0.76,
    SYS 0.88, SOC 0.97. ``X`` is light grey. Raises CommlabError for a name nvidia-smi does not print.

    >>> relation_color("PHB") == relation_color("phb") != relation_color("NV18")
    True
    """
    import matplotlib

    name = str(relation).strip().upper()
    if name == "X":
        return X_COLOR
    match = _NV_RE.match(name)
    if match and int(match.group(1)) >= 1:
        links = min(int(match.group(1)), _NV_MOST)
        position = _NV_LIGHTEST * (1 - math.log2(links) / math.log2(_NV_MOST))
    elif name in _PATH_POSITION:
        position = _PATH_POSITION[name]
    else:
        raise CommlabError(f"unknown topology relation {relation!r}; expected one of: {_ACCEPTED}")
    r, g, b, a = matplotlib.colormaps["cividis"](position)
    return float(r), float(g), float(b), float(a)


def _unpack(matrix, labels, title: str):
    """(matrix, labels, title) from a Topology or a bare matrix (labels GPU0.. when none are given)."""
    if hasattr(matrix, "matrix") and hasattr(matrix, "gpus"):
        title = title or matrix.source
        labels = labels or [getattr(gpu, "label", f"GPU{i}") for i, gpu in enumerate(matrix.gpus)]
        matrix = matrix.matrix
    if labels is None:
        labels = [f"GPU{i}" for i in range(len(matrix))]
    return matrix, labels, title


def plot_topology(matrix, labels: Sequence[str] | None = None, title: str = "") -> Figure:
    """Draw ``matrix[i][j]`` (the relation between devices ``labels[i]`` and ``labels[j]``) as a heatmap.

    ``matrix`` may also be a :class:`commlab.topology.Topology` (its GPU matrix and labels). Each cell shows its
    relation name in its :func:`relation_color`; the legend under the matrix lists the relations present,
    fastest first. The figure is sized to hold every label and the legend, so nothing is cut whether it is
    saved whole (``bbox_inches=None``) or tight. Raises CommlabError for a matrix that is not square over
    ``labels`` or holds an unknown relation.
    """
    matrix, labels, title = _unpack(matrix, labels, title)
    rows = _check_matrix(matrix, labels)
    order = relation_order({cell for row in rows for cell in row})
    index = {name: i for i, (name, _) in enumerate(order)}
    codes = [[index[cell] for cell in row] for row in rows]
    colours = [relation_color(name) for name, _ in order]
    n = len(labels)
    with use_book_style():
        fig = new_figure(1.0, 1.0)  # sized by _fit once the labels and legend can be measured
        ax = fig.add_axes((0.1, 0.1, 0.8, 0.8))
        ax.imshow(codes, cmap=ListedColormap(colours), vmin=-0.5, vmax=len(order) - 0.5, aspect="equal")
        _annotate(ax, rows, codes, colours)
        ax.set_xticks(range(n), labels, rotation=90 if n > 8 else 0)
        ax.set_yticks(range(n), labels)
        ax.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False, labelsize=_FONT_PT)
        ax.grid(False)
        ax.set_title(title or "nvidia-smi topo -m")
        handles = [Patch(facecolor=c, edgecolor="#999999", label=f"{name}: {meaning}")
                   for (name, meaning), c in zip(order, colours)]
        legend = fig.legend(handles=handles, loc="upper center", ncols=1 if len(order) <= 3 else 2,
                            title="fastest first", fontsize=_FONT_PT, title_fontsize=_FONT_PT, borderaxespad=0)
        _fit(fig, ax, legend, n * _CELL_IN)
    return fig


def _fit(fig: Figure, ax, legend, matrix_in: float) -> None:
    """Size the figure to the matrix, its labels and title (measured), and the legend below, all in inches."""
    renderer = cast(FigureCanvasAgg, fig.canvas).get_renderer()     # new_figure's Agg canvas
    fig.set_size_inches(matrix_in + 4.0, matrix_in + 4.0)
    ax.set_position((2.0 / fig.get_figwidth(), 2.0 / fig.get_figheight(),
                     matrix_in / fig.get_figwidth(), matrix_in / fig.get_figheight()))
    box, tight = ax.get_window_extent(renderer), ax.get_tightbbox(renderer)
    left, right = (box.x0 - tight.x0) / fig.dpi, (tight.x1 - box.x1) / fig.dpi
    top, bottom = (tight.y1 - box.y1) / fig.dpi, (box.y0 - tight.y0) / fig.dpi
    key = legend.get_window_extent(renderer)
    key_w, key_h = key.width / fig.dpi, key.height / fig.dpi
    block_w = left + matrix_in + right
    width = max(block_w, key_w) + 2 * _PAD_IN
    height = _PAD_IN + top + matrix_in + bottom + _GAP_IN + key_h + _PAD_IN
    x0 = (width - block_w) / 2 + left
    y0 = _PAD_IN + key_h + _GAP_IN + bottom
    fig.set_size_inches(width, height)
    ax.set_position((x0 / width, y0 / height, matrix_in / width, matrix_in / height))
    legend.set_bbox_to_anchor((0.5, (_PAD_IN + key_h) / height), transform=fig.transFigure)


def _annotate(ax, rows: list[list[str]], codes: list[list[int]], colours: list) -> None:
    """Write each cell's relation in black or white, whichever reads better on its colour."""
    n = len(rows)
    for i in range(n):
        for j in range(n):
            ax.text(j, i, rows[i][j], ha="center", va="center", fontsize=_FONT_PT,
                    color=ink_on(colours[codes[i][j]]))
