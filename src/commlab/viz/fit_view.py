"""A measured curve, the models fitted or predicted for it, and their residuals (the bandwidth sweep lab).

Two panels over the message size: above, the measured time of each row and every model's curve, with the
regimes of a protocol-aware fit (:func:`commlab.cost.fit_protocol_model`) shaded and named, and any switch
the caller marks (NCCL's predicted one, say); below, each model's residual ``model / measured - 1`` in percent
at the measured sizes, with the +-5% band the protocol-aware fit aims for (its median goal). The models
are functions ``time_s(nbytes)`` the caller takes from :mod:`commlab.cost`; nothing here fits anything.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from commlab.errors import CommlabError
from commlab.viz.render import new_figure, size_axis
from commlab.viz.style import INK, MUTED, RANK_COLORS, use_book_style

#: The residual band drawn below (a fraction): the protocol-aware fit's median goal.
BAND = 0.05
_REGIME_SHADES = ("#F2F2F2", "#FFFFFF")


def _checked(nbytes, t_s, models) -> tuple[np.ndarray, np.ndarray]:
    s, t = np.asarray(nbytes, dtype=float).ravel(), np.asarray(t_s, dtype=float).ravel()
    if s.shape != t.shape or s.size < 2:
        raise CommlabError(f"plot_fit_residuals needs one time per size and at least 2 rows, got {s.size} sizes and "
                           f"{t.size} times")
    if np.any(s <= 0) or np.any(t <= 0) or not np.all(np.isfinite(t)):
        raise CommlabError(f"sizes and times must be > 0 and finite on a log-log plot, got sizes "
                           f"{s.min():g}..{s.max():g} and times {t.min():g}..{t.max():g} s")
    if not models:
        raise CommlabError("plot_fit_residuals needs at least one model (label -> time_s(nbytes))")
    order = np.argsort(s)
    return s[order], t[order]


def _regimes(ax, fit, low: float, high: float) -> None:
    """Shade each regime of ``fit`` over [low, high] and write its label at the top."""
    starts = [max(low, r.first_nbytes) for r in fit.regimes] + [high]
    for k, r in enumerate(fit.regimes):
        a, b = starts[k], starts[k + 1]
        if b <= a:
            continue
        ax.axvspan(a, b, color=_REGIME_SHADES[k % 2], zorder=0)
        if k:
            ax.axvline(a, color=MUTED, linestyle=":", linewidth=1.2)
        ax.text(np.sqrt(a * b), 0.97, r.label, transform=ax.get_xaxis_transform(), ha="center", va="top",
                color=MUTED, fontsize=10)


def _marks(axes, marks) -> None:
    for nbytes, label in marks:
        for ax in axes:
            ax.axvline(nbytes, color=INK, linestyle="--", linewidth=1.0)
        axes[0].annotate(label, xy=(nbytes, 0.04), xycoords=("data", "axes fraction"), xytext=(-3, 0),
                         textcoords="offset points", rotation=90, fontsize=10, color=INK, va="bottom", ha="right")


def plot_fit_residuals(nbytes, t_s, models: Mapping[str, Callable], *, fit=None,
                       marks: Sequence[tuple[float, str]] = (), title: str = "") -> Figure:
    """The measured times (s) of a curve, each model's time, and each model's residual in percent.

    ``models`` maps a label to ``time_s(nbytes)`` (vectorised, as :mod:`commlab.cost`'s are); ``fit``, a
    :class:`commlab.cost.ProtocolFit`, shades and names its regimes; ``marks`` are (nbytes, label) lines.
    """
    s, t = _checked(nbytes, t_s, models)
    grid = np.geomspace(s[0], s[-1], 400)
    with use_book_style():
        fig = new_figure(9.0, 7.0, layout="constrained")
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
        if fit is not None:
            _regimes(top, fit, s[0] / 1.3, s[-1] * 1.3)
        top.plot(s, t, "o", color=INK, markersize=4, label="measured", zorder=3)
        for i, (label, time_s) in enumerate(models.items()):
            colour = RANK_COLORS[(i + 4) % len(RANK_COLORS)]
            top.plot(grid, np.asarray(time_s(grid), dtype=float), color=colour, linewidth=1.6, label=label)
            bottom.plot(s, (np.asarray(time_s(s), dtype=float) / t - 1) * 100, "o-", color=colour, markersize=4,
                        linewidth=0.8, label=label)
        bottom.axhspan(-BAND * 100, BAND * 100, color="#E8F4E8", zorder=0, label=f"+-{BAND:.0%}")
        bottom.axhline(0, color=MUTED, linewidth=1)
        _marks((top, bottom), marks)
        top.set_yscale("log")
        top.set_ylabel("time of one call (s)")
        bottom.set_ylabel("model / measured - 1 (%)")
        bottom.set_xlabel("message size (nccl-tests `size`)")
        handles, labels = top.get_legend_handles_labels()
        band = [h for h, label in zip(*bottom.get_legend_handles_labels()) if label.startswith("+-")]
        fig.legend(handles + band, labels + [f"+-{BAND:.0%} (residuals)"], loc="outside lower center", ncols=2,
                   fontsize=10)
        for ax in (top, bottom):
            size_axis(ax)
        bottom.tick_params(axis="x", labelrotation=45)
        top.set_title(title or "measured times, the models, and their residuals", loc="left")
    return fig
