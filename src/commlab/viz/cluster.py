"""A cluster as a picture, with the bottleneck of a collective drawn on it (chapter 11).

``draw_cluster(ax, shape, level, note)`` draws the levels of a :class:`~commlab.cluster.levels.Shape` from the
bottom up: a few NVLink domains (GPUs on their NVLink or NVSwitch, with a count of how many there are), their
NICs, the leaf switches, the spines and (three levels) the core, each row labelled with its figures and the
oversubscription above it. The level named by a bottleneck (``nvlink``, ``nvswitch``, ``nic``, ``leaf``,
``pod``) is drawn thick in :data:`~commlab.viz.style.ALARM`; a latency-bound collective dashes every link it
steps over. The figure computes nothing: the shape and the bottleneck come from :mod:`commlab.cluster`.
"""
from __future__ import annotations

from matplotlib.patches import FancyBboxPatch, Rectangle

from commlab.viz.style import ALARM, INK, MUTED, RANK_COLORS

FONT = 10
_Y = {"gpu": 0.0, "leaf": 2.2, "spine": 3.7, "core": 5.2}
_BOX_H = 0.5
#: colour of each bottleneck level, in the bars and the key (Okabe-Ito)
LEVEL_COLORS = {"latency": "#CC79A7", "nvlink": "#0072B2", "nvswitch": "#56B4E9", "nic": "#E69F00",
                "leaf": "#D55E00", "pod": "#882255"}


def _switch(ax, x, y, w, label, hot):
    colour = "#FADBD8" if hot else "#E6E6E6"
    ax.add_patch(FancyBboxPatch((x - w / 2, y - _BOX_H / 2), w, _BOX_H, boxstyle="round,pad=0.03",
                                facecolor=colour, edgecolor=ALARM if hot else INK, linewidth=2.4 if hot else 0.8,
                                zorder=3))
    ax.text(x, y, label, ha="center", va="center", fontsize=FONT, color=INK, zorder=4)


def _link(ax, x0, y0, x1, y1, hot, dashed, width=1.0):
    ax.plot([x0, x1], [y0, y1], color=ALARM if (hot or dashed) else MUTED, lw=3.0 if hot else width,
            ls="--" if dashed else "-", zorder=2)


def _domain_xs(shape, width: float) -> tuple[list[float], bool]:
    """x of the domains drawn (at most 4; the third is '...' when there are more)."""
    shown = min(shape.domains, 4)
    step = width / shown
    return [step * (i + 0.5) for i in range(shown)], shape.domains > 4


def _draw_domain(ax, x, w, shape, hot, dashed, label):
    d = shape.gpus_per_domain
    ax.add_patch(FancyBboxPatch((x - w / 2, _Y["gpu"] - 0.75), w, 1.25, boxstyle="round,pad=0.04",
                                facecolor="#F4F4F4", edgecolor=ALARM if hot else MUTED,
                                linewidth=2.4 if hot else 0.8, zorder=1))
    squares = min(d, 8)
    size = min(0.26, (w - 0.3) / squares * 0.8)
    gap = (w - 0.3) / squares
    for g in range(squares):
        gx = x - w / 2 + 0.15 + gap * (g + 0.5)
        ax.add_patch(Rectangle((gx - size / 2, _Y["gpu"] + 0.05), size, size, facecolor=RANK_COLORS[g % 8],
                               edgecolor=INK, linewidth=0.4, zorder=3))
    ax.plot([x - w / 2 + 0.2, x + w / 2 - 0.2], [_Y["gpu"] - 0.12] * 2, color=ALARM if (hot or dashed) else INK,
            lw=3.5 if hot else 2.0, ls="--" if dashed else "-", zorder=2)
    ax.text(x, _Y["gpu"] - 0.45, label, ha="center", va="center", fontsize=FONT, color=INK, zorder=4)


def draw_cluster(ax, shape, level: str | None, note: str = "") -> None:
    """Draw ``shape`` on ``ax`` with ``level`` (a bottleneck level, or "latency", or None) marked."""
    c, width = shape.cluster, 10.0
    latency = level == "latency"
    multi = shape.domains > 1
    xs, gap = _domain_xs(shape, width)
    w = min(2.2, width / len(xs) - 0.3)
    intra_hot = level in ("nvlink", "nvswitch")
    for i, x in enumerate(xs):
        if gap and i == 2:
            ax.text(x, _Y["gpu"], "...", ha="center", va="center", fontsize=14, color=MUTED)
            continue
        _draw_domain(ax, x, w, shape, intra_hot, latency, "NVSwitch" if shape.machine.has_nvswitch else "NVLink")
    top = _Y["gpu"] + 0.55
    if not multi:
        ax.text(width / 2, _Y["leaf"], "one NVLink domain: the network is not used", ha="center", va="center",
                fontsize=FONT, color=MUTED)
    else:
        rows = [("leaf", "leaves")] + [(g.name, "spines" if g.name == "leaf" else "core") for g in shape.groups]
        tiers = [_Y["leaf"], _Y["spine"], _Y["core"]][:len(rows)]
        switch_xs = [width * (j + 0.5) / 3 for j in range(3)]
        for i, x in enumerate(xs):
            if not (gap and i == 2):
                for sx in (switch_xs[min(i, 2)], switch_xs[(i + 1) % 3]):
                    _link(ax, x, top, sx, tiers[0] - _BOX_H / 2, level == "nic", latency)
        for t, y in enumerate(tiers):
            name, _ = rows[t]
            label = "leaf" if t == 0 else ("spine" if t == 1 else "core")
            hot_up = t < len(shape.groups) and level == shape.groups[t].name
            for sx in switch_xs:
                _switch(ax, sx, y, 1.5, label, hot_up)
                if t + 1 < len(tiers):
                    for sx2 in switch_xs:
                        _link(ax, sx, y + _BOX_H / 2, sx2, tiers[t + 1] - _BOX_H / 2, hot_up, latency, 0.7)
        _tier_notes(ax, shape, tiers, width)
    ax.text(width / 2, -1.25, f"{shape.nodes} nodes x {c.gpus_per_node} {c.gpu.upper()} = {shape.gpus} GPUs in "
            f"{shape.domains} NVLink domain{'s' if multi else ''} of {shape.gpus_per_domain}",
            ha="center", va="center", fontsize=FONT, color=INK)
    if note:
        ax.text(width / 2, 6.15, note, ha="center", va="center", fontsize=FONT, color=ALARM if level else INK,
                wrap=True)
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-1.55, 6.5)
    ax.axis("off")


def _tier_notes(ax, shape, tiers, width) -> None:
    """Between the rows: the NICs under the leaves, and per level the domains under one switch group and the
    oversubscription above it."""
    c = shape.cluster
    wiring = "rail-optimised" if c.fabric.rail_optimised else "top-of-rack"
    notes = [f"{shape.nics_per_domain} x {c.nic_Gbps:g} Gb/s NICs per domain, {wiring} leaves"]
    notes += [f"{g.domains} domain{'s' if g.domains > 1 else ''} per {g.name}, {g.taper:g}:1 above it"
              for g in shape.groups]
    ys = [(_Y["gpu"] + tiers[0]) / 2 + 0.2] + [(a + b) / 2 for a, b in zip(tiers, tiers[1:])]
    for y, text in zip(ys, notes):
        ax.text(width / 2, y, text, ha="center", va="center", fontsize=FONT, color=INK, zorder=5,
                bbox=dict(facecolor="white", edgecolor="none", pad=1.5, alpha=0.9))
