"""Gantt chart of compute and communication streams, exposed communication highlighted (chapter 07).

The overlap simulator (:mod:`commlab.overlap`) or a profiler trace gives the intervals; this module draws
them. "Exposed" communication is the part no compute hides: the caller passes those intervals (the simulator
computes them), and they are drawn as a hatched red band over the time axis and listed in the legend.
"""
from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from commlab.errors import CommlabError
from commlab.units import format_time
from commlab.viz.render import new_figure
from commlab.viz.style import ALARM, INK, MIN_FONT_PT, RANK_COLORS, ink_on, use_book_style

#: One stream: its name and its intervals (label, start_s, end_s).
Stream = tuple[str, Sequence[tuple[str, float, float]]]
#: Estimated advance of one character of a span label at MIN_FONT_PT, in points (about 0.6 em).
LABEL_CHAR_PT = 0.6 * MIN_FONT_PT
#: Points the time axis gives to the whole span on a 9 in figure (it loses the stream names and 5 % margins).
AXIS_PT = 0.75 * 9.0 * 72
#: Colours by stream, in order: compute (blue), communication (orange), then the rest of the palette.
STREAM_COLORS = ("#0072B2", "#E69F00") + RANK_COLORS[2:]


def _check_streams(streams: Sequence[Stream]) -> None:
    if not streams:
        raise CommlabError("plot_timeline needs at least one stream (name, [(label, start_s, end_s), ...]), got none")
    for name, intervals in streams:
        for interval in intervals:
            if len(interval) != 3 or not float(interval[1]) <= float(interval[2]):
                raise CommlabError(
                    f"stream {name!r}: interval {interval!r} must be (label, start_s, end_s) with start_s <= end_s")


def _check_exposed(exposed: Sequence[tuple[float, float]]) -> None:
    for span in exposed:
        if len(span) != 2 or not float(span[0]) <= float(span[1]):
            raise CommlabError(f"exposed interval {span!r} must be (start_s, end_s) with start_s <= end_s")


def _draw_stream(ax, row: int, intervals, colour: str, width_pt: float, t_span_s: float) -> None:
    """One row of bars; a bar wide enough for its label (LABEL_CHAR_PT per character, plus 4 pt) shows it."""
    spans = [(float(start), float(end) - float(start)) for _, start, end in intervals]
    ax.broken_barh(spans, (row - 0.35, 0.7), facecolors=colour, edgecolors="white", linewidth=0.8)
    for (label, start, end) in intervals:
        if label and (float(end) - float(start)) / t_span_s * width_pt >= LABEL_CHAR_PT * len(str(label)) + 4:
            ax.text((float(start) + float(end)) / 2, row, str(label), ha="center", va="center",
                    fontsize=MIN_FONT_PT, color=ink_on(colour), clip_on=True)


def timeline_streams(timeline) -> tuple[list[Stream], list[tuple[float, float]]]:
    """Streams and exposed span of a :class:`commlab.overlap.Timeline`.

    The exposed spans come from ``Timeline.exposed_intervals()`` (communication running while compute is idle),
    as the Timeline defines it: what the step takes beyond its compute.
    """
    compute = [(iv.name or f"L{iv.layer}", iv.start_s, iv.end_s) for iv in timeline.compute]
    comm = [(f"b{iv.bucket}", iv.start_s, iv.end_s) for iv in timeline.comm]
    exposed = list(timeline.exposed_intervals())
    return [("compute", compute), ("communication", comm)], exposed


def plot_timeline(streams, exposed: Sequence[tuple[float, float]] = (), title: str = "") -> Figure:
    """Draw each stream as a row of bars on a shared time axis, the first stream on top.

    ``streams`` is a list of (stream name, [(label, start_s, end_s), ...]), or a
    :class:`commlab.overlap.Timeline` (its compute and communication streams and exposed time);
    ``exposed`` a list of (start_s, end_s) during which communication runs with no compute to hide it.
    """
    if hasattr(streams, "compute") and hasattr(streams, "comm"):
        title = title or getattr(streams, "label", "")
        streams, exposed = timeline_streams(streams)
    _check_streams(streams)
    _check_exposed(exposed)
    ends = [float(end) for _, intervals in streams for _, _, end in intervals] + [float(e) for _, e in exposed]
    t_span_s = max(ends, default=0.0) or 1.0
    with use_book_style():
        fig = new_figure(9.0, 1.2 + 0.7 * len(streams), layout="constrained")
        ax = fig.add_subplot()
        n = len(streams)
        for i, (name, intervals) in enumerate(streams):
            _draw_stream(ax, n - 1 - i, intervals, STREAM_COLORS[i % len(STREAM_COLORS)], AXIS_PT, t_span_s)
        _draw_exposed(ax, exposed)
        ax.set_yticks(range(n), [name for name, _ in reversed(streams)])
        ax.set_ylim(-0.6, n - 0.4)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: format_time(t) if t else "0"))
        ax.set_xlabel("time")
        ax.grid(axis="y", visible=False)
        ax.set_title(title or "compute and communication streams", loc="left")
    return fig


def _draw_exposed(ax, exposed: Sequence[tuple[float, float]]) -> None:
    """Hatched red bands over the exposed spans, and their total in the legend."""
    for start, end in exposed:
        ax.axvspan(float(start), float(end), color=ALARM, alpha=0.18, hatch="//", linewidth=0)
    if exposed:
        total_s = sum(float(end) - float(start) for start, end in exposed)
        label = f"exposed communication: {format_time(total_s)}"
        ax.legend(handles=[Patch(facecolor=ALARM, alpha=0.3, hatch="//", label=label)],
                  loc="upper right", bbox_to_anchor=(1.0, 1.18), labelcolor=INK)
