"""Models drawn over a measured curve (chapters 05 and 08), and a fitted model's residuals.

Two figures, both against the message size (nccl-tests' ``size`` column), both drawing only what the caller
computed (:mod:`commlab.cost` for the models, :mod:`commlab.nccl` or :mod:`commlab.bench` for the curve):

* :func:`plot_models_over_measured`: the measured busbw and each model's busbw (``busbw = S / t * F(N)``,
  nccl-tests' ``doc/PERFORMANCE.md``), and each model's time over the measured time (1 = exact);
* :func:`plot_protocol_fit`: a :class:`commlab.cost.ProtocolFit` over the rows it was fitted on, each regime in
  its own colour with its alpha and bandwidth in the legend, and the residual ``t_model / t - 1`` of every row.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from commlab.errors import CommlabError
from commlab.units import format_bandwidth, format_time
from commlab.viz.render import new_figure, size_axis
from commlab.viz.style import INK, MIN_FONT_PT, MUTED, RANK_COLORS, use_book_style

#: Colours of the fitted regimes, in size order (LL, LL128, Simple): Okabe-Ito, distinct from the measured ink.
REGIME_COLORS = ("#E69F00", "#009E73", "#0072B2")
#: Line styles of the models in :func:`plot_models_over_measured`, in the order given.
MODEL_STYLES = ("--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)))


def _curve(nbytes, t_s, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and times as float arrays of one shape, sizes > 0 and times > 0 and finite."""
    s, t = np.asarray(nbytes, dtype=float).ravel(), np.asarray(t_s, dtype=float).ravel()
    if s.size == 0 or s.shape != t.shape:
        raise CommlabError(f"{what}: needs one time per size and at least one row, got {s.size} sizes and "
                           f"{t.size} times")
    if np.any(s <= 0) or np.any(~np.isfinite(t)) or np.any(t <= 0):
        raise CommlabError(f"{what}: sizes must be > 0 and times finite and > 0 on a log-log plot, got sizes "
                           f"{s.min():g}..{s.max():g} and times {t.min():g}..{t.max():g} s")
    return s, t


def _size_axis(ax) -> None:
    size_axis(ax, 16)
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel("message size (nccl-tests `size`)")


def _busbw(op: str, nbytes, t_s, n_ranks: int) -> np.ndarray:
    from commlab.cost import busbw_GBps

    return np.asarray(busbw_GBps(op, nbytes, t_s, n_ranks), dtype=float)


def plot_models_over_measured(nbytes, measured_t_s, models: Mapping[str, object], *, op: str, n_ranks: int,
                              roof=None, measured_label: str = "measured", title: str = "") -> Figure:
    """Left: busbw of the measured rows (points) and of each model (lines); right: model time / measured time.

    ``models`` maps a label to the model's times in seconds **at the measured sizes** (so the ratio is taken row
    by row). ``roof``: a :class:`commlab.hardware.Link`, drawn at its one-way bandwidth.
    """
    s, t = _curve(nbytes, measured_t_s, measured_label)
    if not models:
        raise CommlabError("plot_models_over_measured needs at least one model (label -> times at the sizes)")
    lines = {label: _curve(s, model_t, f"model {label!r}")[1] for label, model_t in models.items()}
    with use_book_style():
        fig = new_figure(10.0, 5.2, layout="constrained")
        left, right = fig.subplots(1, 2)
        measured = _busbw(op, s, t, n_ranks)
        left.plot(s, np.where(measured > 0, measured, np.nan), marker="o", markersize=4, linestyle="none",
                  color=INK, label=measured_label)
        for k, (label, model_t) in enumerate(lines.items()):
            colour, style = RANK_COLORS[(k + 4) % len(RANK_COLORS)], MODEL_STYLES[k % len(MODEL_STYLES)]
            left.plot(s, _busbw(op, s, model_t, n_ranks), linestyle=style, color=colour, label=label)
            right.plot(s, model_t / t, linestyle=style, color=colour, marker=".", label=label)
        if roof is not None:
            left.axhline(roof.unidir_GBps, color=MUTED, linestyle=":", linewidth=2)
            left.annotate(f"{roof.title}: {roof.unidir_GBps:g} GB/s one way", xy=(0.01, roof.unidir_GBps),
                          xycoords=("axes fraction", "data"), xytext=(0, 4), textcoords="offset points",
                          color=MUTED, fontsize=MIN_FONT_PT, va="bottom")
        right.axhline(1.0, color=MUTED, linewidth=1.2)
        for ax in (left, right):
            _size_axis(ax)
            ax.set_yscale("log")
        plain = FuncFormatter(lambda y, _pos: f"{y:g}")
        right.yaxis.set_major_formatter(plain)
        right.yaxis.set_minor_formatter(plain)
        left.set_ylabel("busbw (GB/s)")
        left.set_title("bus bandwidth", loc="left")
        left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=1)
        right.set_ylabel("model time / measured time")
        right.set_title("below 1: the model is too fast", loc="left")
        right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=1)
        if title:
            fig.suptitle(title, x=0.01, ha="left")
    return fig


def _regime_label(regime) -> str:
    bw = "no growth" if not np.isfinite(regime.bw_GBps) else f"B = {format_bandwidth(regime.bw_GBps * 1e9)}"
    return f"{regime.label}: alpha = {format_time(regime.alpha_s)}, {bw} ({regime.n_rows} rows)"


def plot_protocol_fit(nbytes, t_s, fit, *, title: str = "") -> Figure:
    """Left: the measured time (points, coloured by the regime the fit puts them in) and each regime's line
    ``alpha + S / B`` over its own sizes, boundaries dotted; right: the residual ``t_model / t - 1`` per row, in %.

    ``fit`` is a :class:`commlab.cost.ProtocolFit` (:func:`commlab.cost.fit_protocol_model`); B is the algbw
    of the size column, as the fit reports it.
    """
    s, t = _curve(nbytes, t_s, "measured curve")
    if not hasattr(fit, "regimes") or not hasattr(fit, "regime_index"):
        raise CommlabError(f"plot_protocol_fit needs a ProtocolFit (commlab.cost.fit_protocol_model), got "
                           f"{type(fit).__name__}")
    which = np.asarray(fit.regime_index(s))
    residual = (np.asarray(fit.time_s(s)) / t - 1.0) * 100.0
    with use_book_style():
        fig = new_figure(10.0, 5.2, layout="constrained")
        left, right = fig.subplots(1, 2)
        edges = [s.min()] + list(fit.boundaries_nbytes) + [s.max()]
        for k, regime in enumerate(fit.regimes):
            colour = REGIME_COLORS[k % len(REGIME_COLORS)]
            mine = which == k
            left.plot(s[mine], t[mine] * 1e6, marker="o", markersize=4, linestyle="none", color=colour)
            span = np.geomspace(max(edges[k], s.min()), min(edges[k + 1], s.max()), 50)
            left.plot(span, regime.time_s(span) * 1e6, color=colour, label=_regime_label(regime))
            right.plot(s[mine], residual[mine], marker="o", markersize=4, linestyle="-", color=colour,
                       label=regime.label)
        for boundary in fit.boundaries_nbytes:
            for ax in (left, right):
                ax.axvline(boundary, color=MUTED, linestyle=":", linewidth=1.2)
        right.axhline(0.0, color=INK, linewidth=1.0)
        for ax in (left, right):
            _size_axis(ax)
        left.set_yscale("log")
        left.set_ylabel("time of one call (us)")
        left.set_title("measured (points) and the fitted regimes (lines)", loc="left")
        left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), fontsize=MIN_FONT_PT)
        right.set_ylabel("model / measured - 1 (%)")
        errors = np.abs(residual)
        right.set_title(f"residuals: median {np.median(errors):.1f}%, 90th percentile "
                        f"{np.percentile(errors, 90):.1f}%", loc="left")
        right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=3)
        if title:
            fig.suptitle(title, x=0.01, ha="left")
    return fig
