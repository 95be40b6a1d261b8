"""A GPU cluster's network as a picture: nodes of GPUs, leaf switches, spines, and who plugs in where (ch 02).

``plot_fabric(n_nodes, gpus_per_node, spines, rail_optimised)`` draws a two-level leaf-spine fabric. Each GPU
has its own NIC; its cable goes to the leaf :func:`commlab.fabric.rail.leaf_of` names: with rail-optimised
wiring leaf i takes NIC i of every node (one colour per rail), otherwise each node has its own top-of-rack
leaf. Every leaf has one uplink to every spine. The caption is the caller's: the figure computes nothing.
"""
from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle

from commlab.errors import CommlabError
from commlab.fabric.rail import leaf_of
from commlab.viz.render import new_figure
from commlab.viz.style import INK, MUTED, ink_on, rank_colors, use_book_style

_GPU_W, _GAP = 0.8, 0.25          # one GPU square and the space between two, data units
_NODE_PAD = 0.3
_Y_GPU, _Y_LEAF, _Y_SPINE = 0.0, 2.6, 4.6
_SWITCH_H = 0.55
_FONT = 10


def _check(n_nodes: int, gpus_per_node: int, spines: int) -> None:
    for name, value, high in (("n_nodes", n_nodes, 8), ("gpus_per_node", gpus_per_node, 8), ("spines", spines, 8)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
            raise CommlabError(f"plot_fabric: {name} must be a whole number from 1 to {high} (a picture stays "
                               f"legible up to {high}), got {value!r}")


def _gpu_x(n_nodes: int, gpus_per_node: int) -> dict[tuple[int, int], float]:
    """Centre x of every (node, local) GPU; nodes side by side with a gap."""
    node_w = gpus_per_node * (_GPU_W + _GAP) - _GAP + 2 * _NODE_PAD
    return {(n, g): n * (node_w + 0.6) + _NODE_PAD + g * (_GPU_W + _GAP) + _GPU_W / 2
            for n in range(n_nodes) for g in range(gpus_per_node)}


def _row_x(count: int, left: float, right: float) -> list[float]:
    step = (right - left) / count
    return [left + step * (i + 0.5) for i in range(count)]


def _switch(ax, x: float, y: float, width: float, label: str, colour: str) -> None:
    ax.add_patch(FancyBboxPatch((x - width / 2, y - _SWITCH_H / 2), width, _SWITCH_H,
                                boxstyle="round,pad=0.04", facecolor=colour, edgecolor=INK, linewidth=0.8, zorder=3))
    ax.text(x, y, label, ha="center", va="center", fontsize=_FONT, color=ink_on(colour), zorder=4)


def _draw_nodes(ax, gpu_x: dict, n_nodes: int, gpus_per_node: int, colours) -> None:
    for n in range(n_nodes):
        left = gpu_x[(n, 0)] - _GPU_W / 2 - _NODE_PAD
        width = gpu_x[(n, gpus_per_node - 1)] - gpu_x[(n, 0)] + _GPU_W + 2 * _NODE_PAD
        ax.add_patch(FancyBboxPatch((left, _Y_GPU - 1.2), width, 2.0, boxstyle="round,pad=0.05",
                                    facecolor="#F4F4F4", edgecolor=MUTED, zorder=1))
        ax.plot([gpu_x[(n, 0)], gpu_x[(n, gpus_per_node - 1)]], [_Y_GPU - 0.62] * 2, color=INK, lw=3, zorder=2)
        ax.text(left + width / 2, _Y_GPU - 0.78, f"node {n}: NVLink", ha="center", va="top", fontsize=_FONT,
                color=INK, zorder=4)
        for g in range(gpus_per_node):
            x = gpu_x[(n, g)]
            ax.plot([x, x], [_Y_GPU - 0.62, _Y_GPU - 0.4], color=INK, lw=1.5, zorder=2)
            ax.add_patch(Rectangle((x - _GPU_W / 2, _Y_GPU - 0.4), _GPU_W, _GPU_W, facecolor=colours[g],
                                   edgecolor=INK, linewidth=0.6, zorder=3))
            ax.text(x, _Y_GPU, f"G{g}", ha="center", va="center", fontsize=_FONT, color=ink_on(colours[g]), zorder=4)


def plot_fabric(n_nodes: int = 4, gpus_per_node: int = 4, spines: int = 2, rail_optimised: bool = True,
                caption: str = "") -> Figure:
    """Nodes, their GPUs' NIC cables to the leaves, and the leaf-spine links (see the module docstring)."""
    _check(n_nodes, gpus_per_node, spines)
    colours = rank_colors(gpus_per_node)
    gpu_x = _gpu_x(n_nodes, gpus_per_node)
    left, right = min(gpu_x.values()) - 0.8, max(gpu_x.values()) + 0.8
    leaf_names = sorted({leaf_of(gpu, rail_optimised) for gpu in gpu_x})
    leaf_x = dict(zip(leaf_names, _row_x(len(leaf_names), left, right)))
    spine_x = _row_x(spines, left + (right - left) * 0.15, right - (right - left) * 0.15)
    leaf_w = min(1.9, 0.8 * (right - left) / len(leaf_names))
    with use_book_style():
        fig = new_figure(max(6.0, 0.62 * (right - left) + 1.0), 4.6)
        ax = fig.add_axes((0.01, 0.02, 0.98, 0.84 if caption else 0.94))
        for gpu, x in gpu_x.items():
            leaf = leaf_of(gpu, rail_optimised)
            colour = colours[gpu[1]] if rail_optimised else MUTED
            ax.plot([x, leaf_x[leaf]], [_Y_GPU + 0.4, _Y_LEAF - _SWITCH_H / 2], color=colour, lw=1.3, zorder=2)
        for lx in leaf_x.values():
            for sx in spine_x:
                ax.plot([lx, sx], [_Y_LEAF + _SWITCH_H / 2, _Y_SPINE - _SWITCH_H / 2], color=MUTED, lw=0.9, zorder=1)
        for leaf, x in leaf_x.items():
            kind, index = leaf
            label, colour = (f"rail {index} leaf", colours[index]) if kind == "rail" else (f"leaf (rack {index})",
                                                                                          "#DDDDDD")
            _switch(ax, x, _Y_LEAF, leaf_w, label, colour)
        for j, x in enumerate(spine_x):
            _switch(ax, x, _Y_SPINE, min(1.9, leaf_w * 1.2), f"spine {j}", "#BBBBBB")
        _draw_nodes(ax, gpu_x, n_nodes, gpus_per_node, colours)
        ax.set_xlim(left - 0.3, right + 0.3)
        ax.set_ylim(_Y_GPU - 1.35, _Y_SPINE + 0.6)
        ax.axis("off")
        wiring = ("rail-optimised: NIC i of every node to leaf i" if rail_optimised
                  else "one leaf per node (top of rack)")
        fig.suptitle(f"{n_nodes} nodes x {gpus_per_node} GPUs, {len(leaf_names)} leaves, {spines} spines; {wiring}",
                     fontsize=11, y=0.99)
        if caption:
            fig.text(0.5, 0.9, caption, ha="center", va="center", fontsize=_FONT, color=INK)
    return fig
