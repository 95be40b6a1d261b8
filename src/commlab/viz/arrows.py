"""The arrows of a schedule animation: one curved arrow per (panel, sender, receiver) pair, precomputed.

Each arrow is a quadratic Bezier from the sender's box to the receiver's, bent by ``rad`` the way matplotlib's
``arc3`` connection bends (control point at the midpoint plus ``rad`` times the chord turned by -90 degrees), so
that a -> b and b -> a do not overlap. The curves are sampled once; a frame only picks which arrows show and
in what colour, and draws them as one LineCollection (bodies) and one PolyCollection (heads) per panel, which
is much cheaper than redrawing FancyArrowPatches.
"""
from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection

#: Points sampled along each arrow's curve.
SAMPLES = 24


def edge_point(centre: np.ndarray, towards: np.ndarray, half_w: float, half_h: float, gap: float) -> np.ndarray:
    """Where the segment from ``centre`` towards ``towards`` leaves a box of half sizes, plus ``gap``."""
    d = towards - centre
    length = max(float(np.hypot(*d)), 1e-12)
    t = min(half_w / max(abs(d[0]), 1e-12), half_h / max(abs(d[1]), 1e-12))
    return centre + d * min(t + gap / length, 0.45)


def arrow_geometry(start: np.ndarray, end: np.ndarray, rad: float, head_len: float):
    """(body polyline [SAMPLES, 2], head triangle [3, 2], label anchor [2]) of one curved arrow.

    Chords longer than 0.8 data units bend proportionally less, so long arrows (naive, recursive doubling,
    trees) stay close to their straight line while a ring's neighbours still curve apart.
    """
    chord = end - start
    rad = rad * min(1.0, 0.8 / max(float(np.hypot(*chord)), 1e-12))
    turned = np.array([chord[1], -chord[0]])
    control = (start + end) / 2 + rad * turned
    t_end = max(0.5, 1 - head_len / max(float(np.hypot(*chord)), 1e-12))
    t = np.linspace(0.0, t_end, SAMPLES)[:, None]
    body = (1 - t) ** 2 * start + 2 * (1 - t) * t * control + t**2 * end
    direction = end - body[-1]
    direction = direction / max(float(np.hypot(*direction)), 1e-12)
    side = np.array([-direction[1], direction[0]]) * head_len * 0.42
    head = np.array([end, body[-1] + side, body[-1] - side])
    normal = turned / max(float(np.hypot(*turned)), 1e-12)
    label_at = (start + end) / 2 + normal * (0.5 * rad * float(np.hypot(*chord)) + np.sign(rad or 1) * 0.09)
    return body, head, label_at


class ArrowPool:
    """Arrows of one panel, keyed by (src, dst); ``show`` draws a frame's set."""

    def __init__(self, ax, geometry: dict[tuple[int, int], tuple], fontsize: float, ink: str,
                 halo: bool = False) -> None:
        """``halo``: set each label on a white patch, where labels can land on lines (a tree's edges); it costs
        a few milliseconds a frame, so rings go without."""
        self.geometry, self.ink = geometry, ink
        self.bodies = ax.add_collection(LineCollection([], linewidths=1.6, zorder=6, capstyle="round"))
        self.heads = ax.add_collection(PolyCollection([], linewidths=0, zorder=6))
        box = dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none", alpha=0.85) if halo else None
        self.labels = {pair: ax.text(*g[2], "", ha="center", va="center", fontsize=fontsize, zorder=7,
                                     visible=False, bbox=box) for pair, g in geometry.items()}

    @property
    def artists(self) -> list:
        return [self.bodies, self.heads, *self.labels.values()]

    def show(self, styles: dict[tuple[int, int], tuple[str, str, bool]]) -> None:
        """Draw exactly the arrows in ``styles``: (src, dst) -> (label text, colour, dashed)."""
        pairs = list(styles)
        self.bodies.set_segments([self.geometry[p][0] for p in pairs])
        self.bodies.set_color([styles[p][1] for p in pairs])
        self.bodies.set_linestyle([(0, (4, 3)) if styles[p][2] else "solid" for p in pairs])
        self.bodies.set_linewidth([2.6 if styles[p][1] != self.ink else 1.6 for p in pairs])
        self.heads.set_verts([self.geometry[p][1] for p in pairs])
        self.heads.set_facecolor([styles[p][1] for p in pairs])
        for pair, label in self.labels.items():
            if pair in styles:
                text, colour, _ = styles[pair]
                label.set(visible=True, text=text, color=colour, weight="normal" if colour == self.ink else "bold")
            else:
                label.set_visible(False)
