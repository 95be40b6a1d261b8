"""Where each rank's buffer sits in a schedule animation: ranks on a circle, or as trees.

A layout has one or more *panels* (axes). Each panel shows some of the buffer's chunks for every rank: the
circle has one panel with every chunk; a tree layout has one panel per tree, showing the chunks that tree
carries (the double binary tree's two halves). The tree's shape is read from the schedule itself: in the
reduce phase each rank sends its partial sum to its parent, so the reduce transfers of a chunk are its edges.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from commlab.errors import CommlabError


@dataclass(frozen=True)
class Layout:
    """Positions of every (panel, rank) buffer, in data coordinates of the panel's axes."""

    panel_chunks: tuple[tuple[int, ...], ...]
    """The chunks each panel shows, in column order."""
    panel_titles: tuple[str, ...]
    centres: np.ndarray
    """[n_panels, n_ranks, 2]: the centre of each buffer box."""
    box_w: float
    box_h: float
    limits: tuple[float, float, float, float]
    """x_min, x_max, y_min, y_max of every panel."""
    arc_rad: float
    """Curvature of the arrows (matplotlib's arc3 ``rad``), so that a -> b and b -> a do not overlap."""
    label_side: str
    """Where the rank label goes relative to its box: "outside" (away from the circle's centre) or "below"."""
    edges: tuple[tuple[tuple[int, int], ...], ...] = ()
    """Per panel, (rank, rank) pairs drawn as faint lines under everything: a tree's edges."""

    def __post_init__(self) -> None:
        if self.centres.shape[0] != len(self.panel_chunks):
            raise CommlabError(f"layout has {self.centres.shape[0]} panels of centres for "
                               f"{len(self.panel_chunks)} panels of chunks")

    @property
    def n_panels(self) -> int:
        return len(self.panel_chunks)

    def panel_of(self, chunk: int) -> int:
        """The panel that shows ``chunk``."""
        for panel, chunks in enumerate(self.panel_chunks):
            if chunk in chunks:
                return panel
        raise CommlabError(f"chunk {chunk} is not shown in any panel; panels show {self.panel_chunks}")


def _box_size(n_cols: int, n_rows: int, room: float) -> tuple[float, float]:
    """A box of n_cols x n_rows square-ish cells that fits in ``room``, never thinner than a third of it."""
    cell = room / max(n_cols, n_rows)
    return max(cell * n_cols, room / 3), max(cell * n_rows, room / 3)


def circle_layout(n_ranks: int, n_chunks: int) -> Layout:
    """Ranks clockwise on a unit circle, rank 0 at the top; one panel with every chunk."""
    angles = math.pi / 2 - 2 * math.pi * np.arange(n_ranks) / n_ranks
    centres = np.stack([np.cos(angles), np.sin(angles)], axis=1)[None]  # [1, n_ranks, 2]
    chord = 2 * math.sin(math.pi / n_ranks)
    box_w, box_h = _box_size(n_chunks, n_ranks, min(0.52 * chord, 0.55))
    reach = 1 + box_h / 2 + 0.3
    return Layout(panel_chunks=(tuple(range(n_chunks)),), panel_titles=("",), centres=centres,
                  box_w=box_w, box_h=box_h, limits=(-reach, reach, -reach, reach), arc_rad=-0.3,
                  label_side="outside")


def _tree_parents(schedule, chunk: int) -> tuple[int, ...]:
    """Each rank's parent for ``chunk`` (-1 for the root), from the reduce transfers of that chunk."""
    parents = [-1] * schedule.n_ranks
    for transfer in schedule.transfers():
        if transfer.chunk == chunk and transfer.reduce:
            parents[transfer.src] = transfer.dst
    return tuple(parents)


def _depths(parents: tuple[int, ...]) -> list[int]:
    depths = []
    for rank in range(len(parents)):
        node, d = rank, 0
        while parents[node] != -1 and d <= len(parents):
            node, d = parents[node], d + 1
        depths.append(d)
    return depths


def tree_layout(schedule) -> Layout:
    """One panel per tree of ``schedule`` (chunks with the same edges share a tree); x = rank, y = -depth."""
    trees: dict[tuple[int, ...], list[int]] = {}
    for chunk in range(schedule.n_chunks):
        trees.setdefault(_tree_parents(schedule, chunk), []).append(chunk)
    level_gap = 1.2
    centres, titles, edges = [], [], []
    for index, (parents, chunks) in enumerate(trees.items()):
        edges.append(tuple((rank, parent) for rank, parent in enumerate(parents) if parent != -1))
        depths = _depths(parents)
        centres.append([(rank, -level_gap * depths[rank]) for rank in range(schedule.n_ranks)])
        root = parents.index(-1) if -1 in parents else 0
        chunk_words = ", ".join(map(str, chunks))
        name = f"tree {index + 1}" if len(trees) > 1 else "tree"
        titles.append(f"{name}: root rank {root}, carries chunk{'s' if len(chunks) > 1 else ''} {chunk_words}")
    n_cols = max(len(chunks) for chunks in trees.values())
    box_w, box_h = _box_size(n_cols, schedule.n_ranks, 0.7)
    box_w = min(box_w, 0.6)
    max_depth = max(-y for panel in centres for _, y in panel)
    half_span = max(schedule.n_ranks + 0.4, 6.0) / 2          # small trees are not blown up to the page width
    middle = (schedule.n_ranks - 1) / 2
    limits = (middle - half_span, middle + half_span, -max_depth - box_h / 2 - 0.45, box_h / 2 + 0.45)
    return Layout(panel_chunks=tuple(tuple(c) for c in trees.values()), panel_titles=tuple(titles),
                  centres=np.array(centres, dtype=float), box_w=box_w, box_h=box_h, limits=limits,
                  arc_rad=0.18, label_side="below", edges=tuple(edges))
