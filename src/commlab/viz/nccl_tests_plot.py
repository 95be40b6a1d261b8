"""``commlab nccl-tests LOG... --plot FILE``: nccl-tests logs drawn over each other, with the link's roof.

Two panels, both against the message size (log-log): busbw with the roof (the link's one-way bandwidth, what
busbw is held against), and the time with each log's fitted protocol-aware model dashed and its regime
boundaries marked. Everything drawn is computed by the caller (:mod:`commlab.nccl`, :mod:`commlab.cost`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from commlab.errors import CommlabError
from commlab.viz.render import new_figure, size_axis
from commlab.viz.style import MIN_FONT_PT, MUTED, RANK_COLORS, use_book_style

FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class LogCurve:
    """One log to draw: its label, sizes (bytes, > 0), out-of-place busbw (GB/s) and time (us), and optionally
    the fitted model's time at those sizes and its regime boundaries (bytes)."""

    label: str
    nbytes: np.ndarray
    busbw_GBps: np.ndarray
    time_us: np.ndarray
    model_time_us: np.ndarray | None = None
    boundaries_nbytes: tuple[float, ...] = ()


def _size_axis(ax) -> None:
    size_axis(ax)
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel("message size (nccl-tests `size`)")


def busbw_limits(curves, roof_GBps: float | None) -> tuple[float, float]:
    """y-limits (GB/s) of the log-scaled busbw panel that enclose every drawn point and the roof, with room
    above the roof for its label: from a third below the lowest value to 1.8 times the highest.

    >>> busbw_limits([LogCurve("a", np.array([8.0, 64.0]), np.array([0.05, 480.0]), np.array([1.0, 2.0]))], 450.0)
    (0.016666666666666666, 864.0)
    """
    values = [v for c in curves for v in np.asarray(c.busbw_GBps, dtype=float) if v > 0 and np.isfinite(v)]
    if roof_GBps is not None and roof_GBps > 0:
        values.append(float(roof_GBps))
    if not values:
        return 0.1, 10.0
    return float(min(values)) / 3.0, float(max(values)) * 1.8


def _busbw_panel(ax, curves, roof) -> None:
    for i, c in enumerate(curves):
        ax.plot(c.nbytes, np.where(c.busbw_GBps > 0, c.busbw_GBps, np.nan), marker="o", markersize=3,
                color=RANK_COLORS[i % len(RANK_COLORS)], label=c.label)
    # the scale first: limits read (or set) while the axis is still linear squash a log plot against its top
    ax.set_yscale("log")
    ax.set_ylim(*busbw_limits(curves, roof.unidir_GBps if roof is not None else None))
    if roof is not None:
        ax.axhline(roof.unidir_GBps, color=MUTED, linestyle=":", linewidth=2)
        ax.annotate(f"roof: {roof.name}, {roof.unidir_GBps:g} GB/s one way", xy=(0.01, roof.unidir_GBps),
                    xycoords=("axes fraction", "data"), xytext=(0, 4), textcoords="offset points", color=MUTED,
                    fontsize=MIN_FONT_PT, va="bottom")
    _size_axis(ax)
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title("bus bandwidth", loc="left")
    ax.legend(loc="lower right")


def _time_panel(ax, curves) -> None:
    for i, c in enumerate(curves):
        colour = RANK_COLORS[i % len(RANK_COLORS)]
        ax.plot(c.nbytes, c.time_us, marker="o", markersize=3, linestyle="none", color=colour, label=c.label)
        if c.model_time_us is not None:
            ax.plot(c.nbytes, c.model_time_us, linestyle="--", linewidth=1.3, color=colour,
                    label=f"{c.label}: fitted model")
        for b in c.boundaries_nbytes:
            ax.axvline(b, color=colour, linestyle=":", linewidth=1, alpha=0.6)
    _size_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("time (us)")
    ax.set_title("time (dotted: regime boundaries)", loc="left")
    ax.legend(loc="upper left")


def plot_nccl_tests(curves: list[LogCurve], roof=None, title: str = "") -> Figure:
    """busbw and time against size for each log, overlaid; ``roof`` a :class:`commlab.hardware.Link`."""
    if not curves:
        raise CommlabError("plot_nccl_tests needs at least one log to draw")
    for c in curves:
        if len(c.nbytes) == 0 or np.any(np.asarray(c.nbytes) <= 0):
            raise CommlabError(f"log {c.label!r}: needs rows with sizes > 0 to draw on a log scale")
    with use_book_style():
        fig = new_figure(12.0, 4.8, layout="constrained")
        left, right = fig.subplots(1, 2)
        _busbw_panel(left, curves, roof)
        _time_panel(right, curves)
        if title:
            fig.suptitle(title, x=0.01, ha="left")
    return fig


def save_figure(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` to ``path``; the extension chooses the format (png, svg, pdf)."""
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise CommlabError(f"--plot FILE must end in one of {', '.join('.' + f for f in FORMATS)}, got {str(path)!r}")
    try:
        fig.savefig(path, format=fmt, dpi=110)
    except OSError as exc:
        raise CommlabError(f"cannot write the plot to {str(path)!r}: {exc.strerror or exc}") from None
    return path
