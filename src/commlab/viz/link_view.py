"""Two links side by side: their one-way bandwidths, the ratio, and the time to move a tensor (chapter 01).

The bandwidths are the catalogue's (commlab.hardware, one direction, with sources); the time to move the tensor
is commlab.cost's point-to-point alpha-beta model, ``collective_time_s("sendrecv", nbytes, 2, link)`` =
latency + S / B_unidir.
"""
from __future__ import annotations

from matplotlib.figure import Figure

from commlab import cost, hardware
from commlab.errors import CommlabError
from commlab.units import GiB, format_nbytes, format_time
from commlab.viz.render import new_figure
from commlab.viz.style import ALGO_COLORS, INK, MIN_FONT_PT, MUTED, use_book_style

_COLOURS = (ALGO_COLORS["ring"], ALGO_COLORS["tree"])


def link_ratio(link_a, link_b) -> float:
    """How many times faster ``link_a`` is than ``link_b``, one direction each: B_a / B_b (chapter 01)."""
    a, b = hardware.link(link_a), hardware.link(link_b)
    return hardware.bandwidth_ratio(a, b)


def link_ratio_figure(link_a: str = "nvlink4", link_b: str = "pcie5", nbytes: float = 14e9) -> Figure:
    """Bars of the two links' one-way GB/s and of the time each takes to move ``nbytes``."""
    a, b = hardware.link(link_a), hardware.link(link_b)
    if not nbytes > 0:
        raise CommlabError(f"nbytes must be a positive size, got {nbytes!r}")
    times_s = [float(cost.collective_time_s("sendrecv", nbytes, 2, item)) for item in (a, b)]
    with use_book_style():
        fig = new_figure(10.0, 3.9, layout="constrained")
        left, right = fig.subplots(1, 2)
        names = [f"{item.title}\n({item.name})" for item in (a, b)]
        bars = left.barh(names, [a.unidir_GBps, b.unidir_GBps], color=_COLOURS)
        left.bar_label(bars, labels=[f"{item.unidir_GBps:g} GB/s" for item in (a, b)], padding=3, color=INK)
        left.set_xlabel("one-way bandwidth (GB/s)")
        left.invert_yaxis()
        left.set_xlim(0, max(a.unidir_GBps, b.unidir_GBps) * 1.3)
        bars = right.barh(names, times_s, color=_COLOURS)
        right.bar_label(bars, labels=[format_time(t) for t in times_s], padding=3, color=INK)
        right.set_xlabel(f"time to move {format_nbytes(nbytes)} (latency + S/B)")
        right.set_yticks([])
        right.invert_yaxis()
        right.set_xlim(0, max(times_s) * 1.3)
        right.xaxis.set_major_formatter(lambda t, _p: format_time(t) if t else "0")
        fig.suptitle(f"{a.name} is {link_ratio(a, b):.3g}x {b.name} (one direction each)", x=0.01, ha="left")
        # a figure-level x label, so constrained layout keeps a row for it under both panels' x labels
        fig.supxlabel("figures: commlab.hardware (sources in each link's .source)", x=0.99, ha="right",
                      fontsize=MIN_FONT_PT, color=MUTED)
    return fig


def link_ratio_explorer(link_a: str = "nvlink4", link_b: str = "pcie5", nbytes: float = 14e9):
    """Two dropdowns of commlab.hardware's links and a size slider over :func:`link_ratio_figure`."""
    import ipywidgets as widgets

    from commlab.viz.explorer import Explorer

    options = [(f"{item.title} ({item.name})", item.name) for item in hardware.links()]
    sizes = sorted({(format_nbytes(s), float(s)) for s in (1e6, 1e7, 1e8, 1e9, 2e9, 14e9, 28e9, 140e9)}
                   | {(format_nbytes(s, binary=True), float(s)) for s in (GiB, 16 * GiB)}, key=lambda o: o[1])
    nearest = min(sizes, key=lambda item: abs(item[1] - nbytes))[1]
    controls = {
        "link_a": widgets.Dropdown(options=options, value=hardware.link(link_a).name, description="link A"),
        "link_b": widgets.Dropdown(options=options, value=hardware.link(link_b).name, description="link B"),
        "nbytes": widgets.SelectionSlider(options=sizes, value=nearest, description="tensor",
                                          continuous_update=False),
    }
    return Explorer(controls, link_ratio_figure)
