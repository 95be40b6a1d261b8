"""Chapter 11's explorer: a cluster preset, a number of nodes, a collective, an algorithm and a size; the time of
every algorithm, and the chosen one's bottleneck drawn on a picture of the cluster.

``cluster_figure(preset, nodes, op, algo, nbytes)`` asks :func:`commlab.cluster.cluster_cost` for every
algorithm at that size and draws two panels: the cluster (:func:`commlab.viz.cluster.draw_cluster`) with the
chosen algorithm's bottleneck marked, and one bar per algorithm (time, busbw, coloured by its bottleneck's
level; NCCL's default pick tagged; those that cannot run there say so). ``cluster_explorer()`` puts sliders on it.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from commlab.cluster import algorithms_for, cluster_cost, preset_names
from commlab.errors import CommlabError
from commlab.units import format_time
from commlab.viz.cluster import LEVEL_COLORS, draw_cluster
from commlab.viz.cost_view import size_label
from commlab.viz.render import new_figure
from commlab.viz.style import INK, MUTED, use_book_style

NODES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
SIZES_NBYTES = tuple(2**k for k in range(3, 35, 1))
EXPLORER_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")


def _bars(ax, result, algo: str, index: int) -> None:
    names = list(result.algos)
    y = np.arange(len(names))[::-1]
    times = np.array([result[a].time_s[index] if result[a].available else np.nan for a in names])
    finite = times[np.isfinite(times)]
    low, high = (finite.min() / 3, finite.max() * 600) if finite.size else (1e-6, 1.0)
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    for yi, name, t in zip(y, names, times):
        a = result[name]
        if not a.available:
            ax.text(low * 1.3, yi, "cannot run here", va="center", fontsize=10, color=MUTED)
            continue
        level = a.bottleneck_levels()[index]
        ax.barh(yi, t, color=LEVEL_COLORS.get(level, MUTED), edgecolor=INK if name == algo else "none",
                linewidth=2.0 if name == algo else 0.0)
        tag = " (NCCL)" if result.nccl_pick and result.nccl_pick[index] == name else ""
        bw = float(a.busbw_GBps[index])
        ax.text(t * 1.15, yi, f"{format_time(float(t))}, {bw:.2f} GB/s{tag}" if bw < 10 else
                f"{format_time(float(t))}, {bw:.0f} GB/s{tag}",
                va="center", fontsize=10, color=INK)
    ax.set_yticks(y, [f"{n} *" if n == algo else n for n in names], fontsize=10)
    ax.set_xlabel("time (log scale)")
    ax.grid(axis="y", visible=False)
    used = {result[a].bottleneck_levels()[index] for a in names if result[a].available}
    handles = [ax.bar(0, 0, color=LEVEL_COLORS[k], label=k) for k in LEVEL_COLORS if k in used]
    ax.legend(handles=handles, title="bottleneck:", loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=10,
              title_fontsize=10, ncol=len(handles) + 1, alignment="left", borderaxespad=0.2)


def cluster_figure(preset: str = "dgx-h100-ndr", nodes: int = 64, op: str = "all_reduce", algo: str = "ring",
                   nbytes: float = 2**30) -> Figure:
    """The cluster with ``algo``'s bottleneck on it, and every algorithm's time (see the module docstring)."""
    if algo not in algorithms_for(op):
        raise CommlabError(f"{algo!r} does not run {op}; for {op}: {', '.join(algorithms_for(op))}")
    result = cluster_cost(op, [nbytes], preset, nodes)
    chosen = result[algo]
    if chosen.available:
        level = chosen.ran_bottleneck[0].split(":", 1)[0]
        note = (f"{algo}, {size_label(nbytes)}: {format_time(float(chosen.ran_time_s[0]))}; bottleneck "
                f"{chosen.ran_bottleneck[0]}")
    else:
        level, note = None, f"{algo} cannot run here: {chosen.why}"
    with use_book_style():
        fig = new_figure(10.0, 6.2)
        left = fig.add_axes((0.0, 0.06, 0.5, 0.80))
        right = fig.add_axes((0.64, 0.1, 0.34, 0.68))
        draw_cluster(left, result.shape, level, "")
        _bars(right, result, algo, 0)
        fig.text(0.5, 0.955, f"{op} of {size_label(nbytes)} on {result.nodes} nodes of {result.cluster.name} "
                 f"({result.n_ranks} GPUs)", ha="center", va="center", fontsize=12, color=INK)
        fig.text(0.5, 0.905, _wrap(note, 110), ha="center", va="center", fontsize=10, color=INK)
    return fig


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)[:2])


def cluster_explorer(preset: str = "dgx-h100-ndr", nodes: int = 64, op: str = "all_reduce", algo: str = "ring",
                     nbytes: int = 2**30):
    """Dropdowns and sliders over :func:`cluster_figure`: preset, nodes 1 to 2,048, collective, algorithm, size.
    A shape the preset cannot take (more nodes than its fabric connects) shows the model's message instead."""
    import ipywidgets as widgets

    from commlab.viz.explorer import Explorer, choice_slider

    controls = {
        "preset": widgets.Dropdown(options=list(preset_names()), value=preset, description="cluster"),
        "nodes": widgets.SelectionSlider(options=list(NODES), value=nodes, description="nodes",
                                         continuous_update=False),
        "op": widgets.Dropdown(options=list(EXPLORER_OPS), value=op, description="collective"),
        "algo": widgets.Dropdown(options=list(algorithms_for(op)), value=algo, description="algorithm"),
        "nbytes": choice_slider("size", SIZES_NBYTES, nbytes, size_label),
    }
    def follow(change) -> None:                             # the algorithm list follows the collective
        algos = list(algorithms_for(change["new"]))
        current = controls["algo"].value
        controls["algo"].options = algos
        controls["algo"].value = current if current in algos else algos[0]

    controls["op"].observe(follow, names="value")          # before the explorer's own observer: it runs first
    return Explorer(controls, cluster_figure)
