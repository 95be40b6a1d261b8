"""Bandwidth against message size, log-log: measured runs, the link's roof, an alpha-beta model (chapter 08).

nccl-tests reports algbw = S/t and busbw = algbw * F(N) (nccl-tests' doc/PERFORMANCE.md); busbw is what to hold
against the link's one-way bandwidth, drawn as a horizontal roof. A run is (label, rows), each row a
:class:`commlab.nccl.Row` (its out-of-place measurement is used) or a (size_bytes, GB/s) pair. The model
curve is computed by the caller (commlab.cost); only for algbw, with a fitted AlphaBeta and no curve given,
it is asked of commlab.cost here (algbw = S / (alpha + beta S)).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from commlab.errors import CommlabError, check_choice
from commlab.units import format_time
from commlab.viz.render import new_figure, size_axis
from commlab.viz.style import INK, MIN_FONT_PT, MUTED, RANK_COLORS, use_book_style

METRICS = ("busbw", "algbw")


def run_points(rows, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(size_bytes, GB/s) arrays of one run's rows, sorted by size."""
    pairs = []
    for row in rows:
        if hasattr(row, "oop"):
            pairs.append((row.size_bytes, getattr(row.oop, f"{metric}_GBps")))
        else:
            size, bw = row
            pairs.append((size, bw))
    sizes, bws = (np.array(v, dtype=float) for v in zip(*sorted(pairs))) if pairs else (np.array([]),) * 2
    return sizes, bws


def _checked_runs(runs, metric: str) -> list[tuple[str, np.ndarray, np.ndarray]]:
    check_choice("metric", metric, METRICS)
    if not runs:
        raise CommlabError("plot_bandwidth needs at least one run (label, rows); got an empty list")
    out = []
    for label, rows in runs:
        sizes, bws = run_points(rows, metric)
        if len(sizes) == 0:
            raise CommlabError(f"run {label!r} has no rows to draw")
        if np.any(sizes <= 0) or np.any(bws < 0) or not np.all(np.isfinite(bws)):
            raise CommlabError(f"run {label!r}: sizes must be > 0 and bandwidths finite and >= 0 on a log-log "
                               f"plot, got sizes {sizes.min():g}..{sizes.max():g}, GB/s {bws.min():g}..{bws.max():g}")
        out.append((str(label), sizes, bws))
    return out


def _model_curve(model, model_curve, metric: str, runs) -> tuple[np.ndarray, np.ndarray] | None:
    if model_curve is not None:
        sizes, bws = (np.asarray(v, dtype=float) for v in model_curve)
        if sizes.shape != bws.shape or sizes.size == 0:
            raise CommlabError(f"model_curve must be two arrays of one shape, got {sizes.shape} and {bws.shape}")
        return sizes, bws
    if model is None:
        return None
    if metric != "algbw":
        raise CommlabError("for busbw pass model_curve=(nbytes, busbw_GBps), e.g. from "
                           "commlab.cost.busbw_GBps(op, nbytes, model.time_s(nbytes), n_ranks)")
    from commlab.cost import algbw_GBps

    low = min(float(s.min()) for _, s, _ in runs)
    high = max(float(s.max()) for _, s, _ in runs)
    sizes = np.geomspace(low, high, 200)
    return sizes, algbw_GBps(sizes, model.time_s(sizes))


def _model_label(model) -> str:
    if model is None:
        return "alpha-beta model"
    bw = "inf" if not np.isfinite(model.bw_GBps) else f"{model.bw_GBps:.3g} GB/s"
    return f"alpha-beta fit: alpha = {format_time(model.alpha_s)}, 1/beta = {bw}"


def plot_bandwidth(runs: Sequence, *, roof=None, model=None, model_curve=None, metric: str = "busbw",
                   title: str = "") -> Figure:
    """algbw or busbw (``metric``) against message size for each run, log-log, overlaid.

    ``roof``: a :class:`commlab.hardware.Link` drawn at its one-way bandwidth. ``model``: a fitted
    :class:`commlab.cost.AlphaBeta` (its alpha and beta go in the legend); ``model_curve``: (nbytes, GB/s)
    arrays of the model in the same metric. The legend goes where it covers the fewest points, lines and
    notes (matplotlib's ``loc="best"``), so a flat run along the bottom keeps it off its points.
    """
    checked = _checked_runs(runs, metric)
    curve = _model_curve(model, model_curve, metric, checked)
    with use_book_style():
        fig = new_figure(8.0, 5.0, layout="constrained")
        ax = fig.add_subplot()
        for i, (label, sizes, bws) in enumerate(checked):
            zeros = int(np.sum(bws <= 0))
            note = f" ({zeros} sizes at 0 GB/s not drawn)" if zeros else ""
            ax.plot(sizes, np.where(bws > 0, bws, np.nan), marker="o", markersize=3.5,
                    color=RANK_COLORS[i % len(RANK_COLORS)], label=label + note)
        if curve is not None:
            ax.plot(curve[0], np.where(curve[1] > 0, curve[1], np.nan), color=INK, linestyle="--", linewidth=1.4,
                    label=_model_label(model))
        if roof is not None:
            ax.axhline(roof.unidir_GBps, color=MUTED, linestyle=":", linewidth=2)
            ax.annotate(f"roof: {roof.title} ({roof.name}), {roof.unidir_GBps:g} GB/s one way",
                        xy=(0.01, roof.unidir_GBps),
                        xycoords=("axes fraction", "data"), xytext=(0, 4), textcoords="offset points",
                        color=MUTED, fontsize=MIN_FONT_PT, va="bottom")
        _axes(ax, metric, roof)
        ax.set_title(title or f"{metric} against message size", loc="left")
    return fig


def _axes(ax, metric: str, roof) -> None:
    size_axis(ax)
    ax.set_yscale("log")
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel("message size (nccl-tests `size`)")
    ax.set_ylabel(f"{metric} (GB/s)")
    if roof is not None:
        low, high = ax.get_ylim()
        ax.set_ylim(low, max(high, roof.unidir_GBps * 1.8))
    ax.legend(loc="best")
