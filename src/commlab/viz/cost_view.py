"""Ring vs tree vs naive (vs double tree) all-reduce time, and where they cross (chapter 06).

Every number is commlab.cost's: ``all_reduce_time_s`` for the curves (the alpha-beta models with their sources
in that module) and ``crossover_nbytes`` for the sizes where two algorithms take equal time. The left panel
sweeps the message size at the chosen N, the right one sweeps N at the chosen size.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from commlab import cost
from commlab.errors import CommlabError, check_n_ranks
from commlab.units import MiB, format_bandwidth, format_nbytes, format_time
from commlab.viz.render import new_figure
from commlab.viz.style import ALGO_COLORS, MIN_FONT_PT, MUTED, use_book_style

ALGOS = ("ring", "tree", "double-tree", "naive")
#: Pairs whose crossover size is marked.
CROSSINGS = (("ring", "tree"), ("ring", "double-tree"))
SIZES_NBYTES = 2.0 ** np.arange(4, 36)       # 16 B .. 32 GiB, nccl-tests' power-of-two sweep
#: The book's widest figure, and the panel titles' size in points.
WIDTH_IN, TITLE_PT = 10.0, 11


def _check(n_ranks: int, alpha_s: float, bw_Bps: float, nbytes: float) -> None:
    check_n_ranks(n_ranks, 2, 1 << 16)
    for name, value in (("alpha_s", alpha_s), ("bw_Bps", bw_Bps), ("nbytes", nbytes)):
        if not np.isfinite(value) or value <= 0:
            raise CommlabError(f"{name} must be a positive number, got {value!r}")


def _crossings(ax, n_ranks, alpha_s, bw_Bps, algos) -> None:
    """A dashed line and a cross at each size where two algorithms take equal time (cost.crossover_nbytes)."""
    for a, b in CROSSINGS:
        if a in algos and b in algos:
            x = float(cost.crossover_nbytes(a, b, n_ranks, alpha_s, bw_Bps))
            if np.isfinite(x):
                ax.axvline(x, color=ALGO_COLORS[b], linestyle="--", linewidth=1,
                           label=f"{a} = {b} at {format_nbytes(x)}")
                t_s = float(cost.all_reduce_time_s(a, x, n_ranks, alpha_s, bw_Bps))
                ax.plot([x], [t_s], "X", color=ALGO_COLORS[b], markersize=8, markeredgecolor="white")


def _size_panel(ax, n_ranks, alpha_s, bw_Bps, nbytes, algos) -> None:
    for algo in algos:
        t_s = cost.all_reduce_time_s(algo, SIZES_NBYTES, n_ranks, alpha_s, bw_Bps)
        here_s = float(cost.all_reduce_time_s(algo, nbytes, n_ranks, alpha_s, bw_Bps))
        ax.plot(SIZES_NBYTES, t_s, color=ALGO_COLORS[algo], label=f"{algo}: {format_time(here_s)}")
        ax.plot([nbytes], [here_s], "o", color=ALGO_COLORS[algo], markersize=6)
    ax.axvline(nbytes, color=MUTED, linestyle=":", linewidth=1.2)
    _crossings(ax, n_ranks, alpha_s, bw_Bps, algos)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: format_nbytes(x, binary=True)))
    ax.set_xticks(2.0 ** np.arange(4, 36, 4))
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel("message size")
    ax.set_ylabel("all-reduce time")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda t, _p: format_time(t)))
    ax.set_title(f"time against size, N = {n_ranks}", fontsize=TITLE_PT, loc="left")


def _ranks_panel(ax, n_ranks, alpha_s, bw_Bps, nbytes, algos) -> None:
    ranks = np.unique(np.geomspace(2, max(1024, 2 * n_ranks), 80).astype(int))
    for algo in algos:
        ax.plot(ranks, cost.all_reduce_time_s(algo, nbytes, ranks, alpha_s, bw_Bps), color=ALGO_COLORS[algo])
        ax.plot([n_ranks], [float(cost.all_reduce_time_s(algo, nbytes, n_ranks, alpha_s, bw_Bps))], "o",
                color=ALGO_COLORS[algo], markersize=6)
    ax.axvline(n_ranks, color=MUTED, linestyle=":", linewidth=1.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: f"{x:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda t, _p: format_time(t)))
    ax.set_xlabel("ranks N")
    ax.set_title(f"time against N, {format_nbytes(nbytes, binary=True)}", fontsize=TITLE_PT, loc="left")


def cost_figure(n_ranks: int = 8, alpha_s: float = 5e-6, bw_Bps: float = 50e9, nbytes: float = 64 * MiB,
                algos: tuple[str, ...] = ALGOS) -> Figure:
    """All-reduce time of each algorithm in ``algos`` against size (at ``n_ranks``) and against N (at
    ``nbytes``), with the ring/tree crossover sizes marked. The key sits under both panels, so no text lies on
    a curve: each algorithm's time at the chosen point (the dots), then the crossover sizes."""
    _check(n_ranks, alpha_s, bw_Bps, nbytes)
    with use_book_style():
        fig = new_figure(WIDTH_IN, 5.6, layout="constrained")
        left, right = fig.subplots(1, 2)
        _size_panel(left, n_ranks, alpha_s, bw_Bps, nbytes, algos)
        _ranks_panel(right, n_ranks, alpha_s, bw_Bps, nbytes, algos)
        fig.suptitle(f"all-reduce on {n_ranks} ranks, alpha = {format_time(alpha_s)}, "
                     f"B = {format_bandwidth(bw_Bps)} per link (alpha-beta models, commlab.cost)", x=0.01, ha="left",
                     fontsize=TITLE_PT + 1)
        handles, labels = left.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=MIN_FONT_PT,
                   title=f"dots: time at {format_nbytes(nbytes, binary=True)} on {n_ranks} ranks; "
                         f"crosses: where two algorithms take equal time", title_fontsize=MIN_FONT_PT)
    return fig


def cost_explorer(n_ranks: int = 8, alpha_s: float = 5e-6, bw_Bps: float = 50e9, nbytes: int = 64 * MiB):
    """Sliders for N, alpha, bandwidth and size over :func:`cost_figure` (chapter 06's crossover explorer)."""
    import ipywidgets as widgets

    from commlab.viz.explorer import Explorer

    def pick(description, options, value):
        nearest = min(options, key=lambda item: abs(np.log(item[1] / value)))
        return widgets.SelectionSlider(options=options, value=nearest[1], description=description,
                                       continuous_update=False, style={"description_width": "initial"})

    ranks = [(str(n), n) for n in (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024)]
    alphas = [(format_time(t), float(t)) for t in np.geomspace(0.5e-6, 100e-6, 24)]
    bandwidths = [(format_bandwidth(b), float(b)) for b in np.geomspace(1e9, 1e12, 31)]
    sizes = [(format_nbytes(s, binary=True), int(s)) for s in 2 ** np.arange(10, 35)]
    controls = {"n_ranks": pick("ranks N", ranks, n_ranks), "alpha_s": pick("alpha", alphas, alpha_s),
                "bw_Bps": pick("bandwidth", bandwidths, bw_Bps), "nbytes": pick("size", sizes, nbytes)}
    return Explorer(controls, cost_figure)

