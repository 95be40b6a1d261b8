"""Heatmap of an ``nvidia-smi topo -m`` relation matrix, its legend ordered fast to slow (chapter 01).

The relation names are nvidia-smi's own (its legend, printed under the matrix):

* ``X``: the device itself;
* ``NV#``: a bonded set of # NVLinks (more links, more bandwidth);
* ``PIX``: at most one PCIe bridge; ``PXB``: several PCIe bridges, no host bridge;
* ``PHB``: through a PCIe host bridge (the CPU); ``NODE``: across host bridges inside one NUMA node;
* ``SYS``: across NUMA nodes, over the SMP interconnect (QPI/UPI or Infinity Fabric).

That is the order NCCL prefers paths in, fastest first; the heatmap colours follow it on a sequential scale.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from commlab.errors import CommlabError
from commlab.viz.render import new_figure
from commlab.viz.style import ink_on, use_book_style

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
    nvlinks = sorted((c for c in cells if _NV_RE.match(c)), key=lambda c: -int(_NV_RE.match(c).group(1)))
    order = [("X", "the device itself")] if "X" in cells else []
    order += [(c, f"{_NV_RE.match(c).group(1)} bonded NVLinks") for c in nvlinks]
    order += [(name, meaning) for name, meaning in PATH_RELATIONS if name in cells]
    return order


def _colours(order: list[tuple[str, str]]) -> list:
    """Sequential colours from dark (fast) to light (slow); X is plain grey."""
    import matplotlib

    ramp = matplotlib.colormaps["cividis"]
    ranked = [name for name, _ in order if name != "X"]
    step = 0.85 / max(len(ranked) - 1, 1)
    colours = {name: ramp(0.05 + step * i) for i, name in enumerate(ranked)}
    colours["X"] = (0.85, 0.85, 0.85, 1.0)
    return [colours[name] for name, _ in order]


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
    relation name; the legend lists the relations present, fastest first. Raises CommlabError for a matrix
    that is not square over ``labels`` or holds an unknown relation.
    """
    matrix, labels, title = _unpack(matrix, labels, title)
    rows = _check_matrix(matrix, labels)
    order = relation_order({cell for row in rows for cell in row})
    index = {name: i for i, (name, _) in enumerate(order)}
    codes = [[index[cell] for cell in row] for row in rows]
    colours = _colours(order)
    n = len(labels)
    size_in = min(3.0 + 0.45 * n, 10.0)
    with use_book_style():
        fig = new_figure(size_in + 3.4, size_in, layout="constrained")
        ax = fig.add_subplot()
        ax.imshow(codes, cmap=ListedColormap(colours), vmin=-0.5, vmax=len(order) - 0.5, aspect="equal")
        _annotate(ax, rows, codes, colours)
        ax.set_xticks(range(n), labels, rotation=90 if n > 8 else 0)
        ax.set_yticks(range(n), labels)
        ax.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False)
        ax.grid(False)
        handles = [Patch(facecolor=c, edgecolor="#999999", label=f"{name}: {meaning}")
                   for (name, meaning), c in zip(order, colours)]
        fig.legend(handles=handles, loc="outside right center", title="fastest first", fontsize=9)
        ax.set_title(title or "nvidia-smi topo -m")
    return fig


def _annotate(ax, rows: list[list[str]], codes: list[list[int]], colours: list) -> None:
    """Write each cell's relation in black or white, whichever reads better on its colour."""
    n = len(rows)
    font = 9 if n <= 8 else 7
    for i in range(n):
        for j in range(n):
            ax.text(j, i, rows[i][j], ha="center", va="center", fontsize=font, color=ink_on(colours[codes[i][j]]))
