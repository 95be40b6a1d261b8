"""Gantt chart of compute and communication streams, exposed communication highlighted (chapter 07).

The overlap simulator (:mod:`commlab.overlap`) or a profiler trace gives the intervals; this module draws
them. "Exposed" communication is the part no compute hides: the caller passes those intervals (the simulator
computes them), and they are drawn as a hatched red band over the time axis and listed in the legend, which
sits in its own band above the axes' title so a long title cannot run into it.

A bar is never drawn narrower than :data:`MIN_BAR_PT` (about 1.5 px at 96-100 dpi): a 30 us all-reduce on a
100 ms axis would otherwise be a fifth of a pixel, hidden under the white edges that separate wide bars.
"""
from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

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
#: Height of the legend's band above the axes, in inches (added to the figure when there is exposed time).
KEY_IN = 0.3
#: Colours by stream, in order: compute (blue), communication (orange), then the rest of the palette.
STREAM_COLORS = ("#0072B2", "#E69F00") + RANK_COLORS[2:]
#: White edge between neighbouring bars, in points.
EDGE_PT = 0.8
#: Narrowest drawn bar, in points (1.1 pt is 1.5 px at 96 dpi): a narrower bar gets an edge of its own colour,
#: this wide, instead of a white one, so it shows however short it is.
MIN_BAR_PT = 1.1
#: Bars estimated narrower than this (points, on AXIS_PT) are drawn with that edge.
TINY_BAR_PT = 2.0
#: Short names of the collectives on a communication stream ("AR 3": bucket 3's all-reduce).
OP_ABBREVIATIONS = MappingProxyType({"all_reduce": "AR", "all_gather": "AG", "reduce_scatter": "RS",
                                     "broadcast": "BC", "reduce": "RD", "all_to_all": "A2A", "gather": "GA",
                                     "scatter": "SC", "sendrecv": "SR"})


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


def _bar_pt(start, end, width_pt: float, t_span_s: float) -> float:
    """Estimated drawn width of a bar from ``start`` to ``end`` (seconds), in points."""
    return (float(end) - float(start)) / t_span_s * width_pt


def _fitting_label(label, bar_pt: float) -> str:
    """The label if it fits its bar (LABEL_CHAR_PT per character, plus 4 pt), else its last word ("3" of
    "AR 3") if that fits, else nothing."""
    words = str(label).split()
    for text in (str(label).strip(), words[-1] if len(words) > 1 else ""):
        if text and bar_pt >= LABEL_CHAR_PT * len(text) + 4:
            return text
    return ""


def _draw_stream(ax, row: int, intervals, colour: str, width_pt: float, t_span_s: float) -> None:
    """One row of bars, each with the label that fits it (:func:`_fitting_label`).

    Bars under TINY_BAR_PT (their share of ``width_pt``) get an edge of their own colour, MIN_BAR_PT wide."""
    spans = [(float(start), float(end) - float(start)) for _, start, end in intervals]
    tiny = [(x, w) for x, w in spans if _bar_pt(0.0, w, width_pt, t_span_s) < TINY_BAR_PT]
    wide = [(x, w) for x, w in spans if _bar_pt(0.0, w, width_pt, t_span_s) >= TINY_BAR_PT]
    if wide:
        ax.broken_barh(wide, (row - 0.35, 0.7), facecolors=colour, edgecolors="white", linewidth=EDGE_PT)
    if tiny:
        ax.broken_barh(tiny, (row - 0.35, 0.7), facecolors=colour, edgecolors=colour, linewidth=MIN_BAR_PT)
    for (label, start, end) in intervals:
        text = _fitting_label(label, _bar_pt(start, end, width_pt, t_span_s))
        if text:
            ax.text((float(start) + float(end)) / 2, row, text, ha="center", va="center",
                    fontsize=MIN_FONT_PT, color=ink_on(colour), clip_on=True)


def comm_label(interval) -> str:
    """"AR 3" for bucket 3's all-reduce (OP_ABBREVIATIONS; another op keeps its name), "b3" without an op."""
    op = getattr(interval, "op", "")
    if not op:
        return f"b{interval.bucket}"
    return f"{OP_ABBREVIATIONS.get(op, op)} {interval.bucket}"


def timeline_streams(timeline) -> tuple[list[Stream], list[tuple[float, float]]]:
    """Streams and exposed span of a :class:`commlab.overlap.Timeline`.

    Communication intervals are labelled by :func:`comm_label` ("AR 3", "AG 2", "RS 1"; "b3" without an op).
    The exposed spans come from ``Timeline.exposed_intervals()`` (communication running while compute is idle),
    as the Timeline defines it: what the step takes beyond its compute.
    """
    compute = [(iv.name or f"L{iv.layer}", iv.start_s, iv.end_s) for iv in timeline.compute]
    comm = [(comm_label(iv), iv.start_s, iv.end_s) for iv in timeline.comm]
    exposed = list(timeline.exposed_intervals())
    return [("compute", compute), ("communication", comm)], exposed


def plot_timeline(streams, exposed: Sequence[tuple[float, float]] = (), title: str = "") -> Figure:
    """Draw each stream as a row of bars on a shared time axis, the first stream on top.

    ``streams`` is a list of (stream name, [(label, start_s, end_s), ...]), or a
    :class:`commlab.overlap.Timeline` (its compute and communication streams and exposed time);
    ``exposed`` a list of (start_s, end_s) during which communication runs with no compute to hide it.
    A label too long for its bar shows only its last word ("3" of "AR 3"), or nothing if that does not fit.
    """
    if hasattr(streams, "compute") and hasattr(streams, "comm"):
        title = title or getattr(streams, "label", "")
        streams, exposed = timeline_streams(streams)
    _check_streams(streams)
    _check_exposed(exposed)
    ends = [float(end) for _, intervals in streams for _, _, end in intervals] + [float(e) for _, e in exposed]
    t_span_s = max(ends, default=0.0) or 1.0
    with use_book_style():
        fig = new_figure(9.0, 1.2 + 0.7 * len(streams) + (KEY_IN if exposed else 0.0), layout="constrained")
        ax = fig.add_subplot()
        n = len(streams)
        for i, (_name, intervals) in enumerate(streams):
            _draw_stream(ax, n - 1 - i, intervals, STREAM_COLORS[i % len(STREAM_COLORS)], AXIS_PT, t_span_s)
        _draw_exposed(fig, ax, exposed, t_span_s)
        ax.set_yticks(range(n), [name for name, _ in reversed(streams)])
        ax.set_ylim(-0.6, n - 0.4)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: format_time(t) if t else "0"))
        ax.set_xlabel("time")
        ax.grid(axis="y", visible=False)
        ax.set_axisbelow(True)        # grid lines under the bars: over them they would look like bar ends
        ax.set_title(title or "compute and communication streams", loc="left")
    return fig


def _draw_exposed(fig, ax, exposed: Sequence[tuple[float, float]], t_span_s: float) -> None:
    """Hatched red bands over the exposed spans (a tiny one edged MIN_BAR_PT wide, like a tiny bar), and their
    total in a legend in its own band at the top of the figure (constrained layout's "outside upper right"),
    above the axes' title, so the two never collide."""
    for start, end in exposed:
        tiny = _bar_pt(start, end, AXIS_PT, t_span_s) < TINY_BAR_PT
        ax.axvspan(float(start), float(end), color=ALARM, alpha=0.18, hatch="//", linewidth=MIN_BAR_PT if tiny else 0)
    if exposed:
        total_s = sum(float(end) - float(start) for start, end in exposed)
        label = f"exposed communication: {format_time(total_s)}"
        fig.legend(handles=[Patch(facecolor=ALARM, alpha=0.3, hatch="//", label=label)],
                   loc="outside upper right", labelcolor=INK)
