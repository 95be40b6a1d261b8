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
#: The explorer's sliders: N, the ranges of its 1-2-5 alpha and bandwidth grids, its power-of-two sizes.
RANKS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024)
ALPHA_RANGE_S, BW_RANGE_BPS = (1e-7, 1e-4), (1e9, 1e12)
EXPLORER_SIZES_NBYTES = tuple(2**k for k in range(10, 35))     # 1 KiB .. 16 GiB
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


def size_label(nbytes: float) -> str:
    """"64 MiB" for a power of two, "1 MB" for any other size (so a requested 1e6 shows as given).

    >>> size_label(2**26), size_label(1e6)
    ('64 MiB', '1 MB')
    """
    whole = float(nbytes).is_integer() and nbytes > 0
    return format_nbytes(nbytes, binary=whole and (int(nbytes) & (int(nbytes) - 1)) == 0)


def cost_explorer(n_ranks: int = 8, alpha_s: float = 5e-6, bw_Bps: float = 50e9, nbytes: float = 64 * MiB):
    """Sliders for N, alpha, bandwidth and size over :func:`cost_figure` (chapter 06's crossover explorer).

    The sliders run over round values: alpha 0.1 us to 100 us and bandwidth 1 GB/s to 1 TB/s in 1-2-5 steps,
    sizes in powers of two from 1 KiB to 16 GiB, N over :data:`RANKS`. A requested value that is not one of
    them is added, so the explorer opens at exactly the values given (1 us shows as "1 us", not "998 ns").
    """
    from commlab.viz.explorer import Explorer, choice_slider, one_two_five

    _check(n_ranks, alpha_s, bw_Bps, nbytes)
    nbytes = int(nbytes) if float(nbytes).is_integer() else float(nbytes)
    controls = {
        "n_ranks": choice_slider("ranks N", RANKS, n_ranks),
        "alpha_s": choice_slider("alpha", one_two_five(*ALPHA_RANGE_S), float(alpha_s), format_time),
        "bw_Bps": choice_slider("bandwidth", one_two_five(*BW_RANGE_BPS), float(bw_Bps), format_bandwidth),
        "nbytes": choice_slider("size", EXPLORER_SIZES_NBYTES, nbytes, size_label),
    }
    return Explorer(controls, cost_figure)
