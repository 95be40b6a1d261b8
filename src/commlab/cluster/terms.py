"""Where a collective's time goes: latency, and the bandwidth time of each level (NVLink, NIC, uplinks).

Every algorithm's cost is built as :class:`Terms`: the time, the part of it that is latency, and for each
level the time its bytes spend there. The *bottleneck* of a size is the largest of these shares: the latency
(too many steps) or the level whose link the bytes wait on. :func:`steps_time` times a sequence of steps the
way NCCL's tuner times a protocol, ``latency + bytes / (bandwidth x efficiency)`` per step, with the protocol
of least total time per size (LL moves 8 bytes of data per 16, LL128 120 per 128, Simple all: tuning.cc:327-337).

>>> t = Terms(np.array([1e-5, 1e-3]), np.array([8e-6, 1e-5]), {"nic": np.array([2e-6, 9.9e-4])}, "2 steps")
>>> t.bottleneck(lambda level: {"nic": "the NICs"}.get(level, level))
('latency: 2 steps', 'nic: the NICs')
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from commlab.tuner import nccl_constants as K
from commlab.errors import CommlabError

#: bytes of data per byte on the wire, per protocol (tuning.cc:327-337)
EFFICIENCY = {"LL": K.LL_BW_FACTOR, "LL128": K.LL128_BW_FACTOR, "Simple": 1.0}


@dataclass(frozen=True)
class Terms:
    """A collective's time per size, its latency part, and the bandwidth time spent at each level."""

    time_s: np.ndarray
    latency_s: np.ndarray
    levels: dict[str, np.ndarray] = field(default_factory=dict)
    latency_what: str = "latency"
    """What the latency is made of, in words ("2 x 2047 network steps of NCCL's 14 us")."""

    def bottleneck(self, words) -> tuple[str, ...]:
        """Per size, "level: link" of the largest share; ``words(level)`` names the link of a level."""
        names = ["latency"] + list(self.levels)
        stack = np.vstack([self.latency_s] + [np.broadcast_to(v, self.time_s.shape) for v in self.levels.values()])
        best = np.argmax(stack, axis=0)
        out = []
        for i in np.atleast_1d(best):
            name = names[int(i)]
            out.append(f"latency: {self.latency_what}" if name == "latency" else f"{name}: {words(name)}")
        return tuple(out)


@dataclass(frozen=True)
class Step:
    """``count`` steps of ``nbytes`` each (per size), on a network or an intra-domain hop, bounded by the
    slowest of ``bw_GBps`` (level -> GB/s)."""

    hop: str
    """"net" or "intra"."""
    count: float
    nbytes: np.ndarray
    bw_GBps: dict[str, float]
    extra_us: float = 0.0
    """Switch time above the leaf, per step."""


def steps_time(shape, steps: list[Step], base: bool = True, algo: str = "Ring", what: str = "") -> Terms:
    """The steps run one after another; per size, the protocol with the least total (see the module docstring)."""
    sizes = np.asarray(steps[0].nbytes, dtype=float) if steps else np.zeros(1)
    best_t: np.ndarray | None = None
    best: list[tuple[float, dict[str, np.ndarray]]] = []
    choice = np.zeros(sizes.shape, dtype=int)
    for proto in shape.protocols:
        lat = K.BASE_LAT_US[(algo, proto)] if base else 0.0
        levels: dict[str, np.ndarray] = {}
        for s in steps:
            alpha = shape.net_latency_us(proto, algo) if s.hop == "net" else shape.intra_latency_us(proto, algo)
            lat += s.count * (alpha + s.extra_us)
            level, bw = min(s.bw_GBps.items(), key=lambda kv: kv[1])
            add = s.count * np.asarray(s.nbytes, dtype=float) / (bw * 1e9 * EFFICIENCY[proto])
            levels[level] = levels.get(level, 0.0) + add
        total = lat * 1e-6 + sum(levels.values(), np.zeros_like(sizes))
        if best_t is None:
            best_t = total
        else:
            better = total < best_t
            choice = np.where(better, len(best), choice)
            best_t = np.where(better, total, best_t)
        best.append((lat, levels))
    if best_t is None:
        raise CommlabError(f"{what or 'steps_time'}: the shape offers no protocol, got {shape.protocols!r}")
    latency = np.array([best[c][0] for c in np.atleast_1d(choice)]).reshape(sizes.shape) * 1e-6
    names = {name for _, lv in best for name in lv}
    levels = {n: np.choose(choice, [np.broadcast_to(lv.get(n, 0.0), sizes.shape) for _, lv in best]) for n in names}
    return Terms(best_t, latency, levels, what or "the steps' latency")
