"""What a measurement returns: points of a size sweep, the sweep against a roof, or why it was skipped.

Bandwidth is bytes moved over time, in 1e9 B/s: ``bw_GBps = nbytes / t_s / 1e9``. A copy of ``nbytes`` reads
and writes ``nbytes`` each; STREAM's "Copy" kernel counts both (``traffic_GBps = 2 * nbytes / t_s``, McCalpin's
STREAM benchmark), while commlab holds collectives against the rate one buffer moves at, ``bw_GBps``.

>>> p = CopyPoint(nbytes=10**9, t_s=0.1, repeats=3)
>>> p.bw_GBps, p.traffic_GBps
(10.0, 20.0)
>>> CopySweep("demo", (p,), roof_GBps=16.0, roof_name="PCIe 3.0 x16").verdict().label
'below the roof'
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.measure.verdict import Verdict, verdict
from commlab.units import GB


@dataclass(frozen=True)
class Skipped:
    """A measurement that could not run here, and why (no CUDA, one GPU, ...)."""

    what: str
    reason: str

    def to_text(self) -> str:
        return f"{self.what}: skipped ({self.reason})"

    def to_json(self) -> dict:
        return {"what": self.what, "skipped": True, "reason": self.reason}


@dataclass(frozen=True)
class CopyPoint:
    """The fastest of ``repeats`` copies of one size."""

    nbytes: int
    t_s: float
    repeats: int

    @property
    def bw_GBps(self) -> float:
        """Bytes copied per second, 1e9 B/s."""
        return self.nbytes / self.t_s / GB

    @property
    def traffic_GBps(self) -> float:
        """Bytes read plus bytes written per second (STREAM's convention for Copy)."""
        return 2 * self.bw_GBps


@dataclass(frozen=True)
class CopySweep:
    """A size sweep of one kind of copy, with the link it is held against where there is one."""

    what: str
    """"CPU memory copy (numpy)", "host-to-device, pinned", ..."""
    points: tuple[CopyPoint, ...]
    roof_GBps: float | None = None
    """The link's bandwidth per direction, 1e9 B/s; None for CPU memory (no catalogue figure)."""
    roof_name: str = ""
    """Which link: "PCIe 5.0 x16"."""

    @property
    def peak(self) -> CopyPoint:
        """The point with the highest bandwidth."""
        return max(self.points, key=lambda p: p.bw_GBps)

    @property
    def peak_GBps(self) -> float:
        return self.peak.bw_GBps

    def verdict(self) -> Verdict | None:
        """The peak as a fraction of the roof, in words; None without a roof."""
        return None if self.roof_GBps is None else verdict(self.peak_GBps, self.roof_GBps, self.roof_name)

    @property
    def largest(self) -> CopyPoint:
        """The largest size: for CPU copies the memory-bound figure, once caches no longer hold the buffers."""
        return max(self.points, key=lambda p: p.nbytes)

    def to_text(self) -> str:
        judged = self.verdict()
        big = self.largest
        text = f"{self.what}: {self.peak_GBps:.1f} GB/s peak at {self.peak.nbytes / 2**20:g} MiB"
        if big is not self.peak:
            text += f", {big.bw_GBps:.1f} GB/s at {big.nbytes / 2**20:g} MiB"
        return text + (f"; {judged.text}" if judged else "")

    def to_json(self) -> dict:
        judged = self.verdict()
        return {"what": self.what, "peak_GBps": self.peak_GBps, "peak_nbytes": self.peak.nbytes,
                "roof_GBps": self.roof_GBps, "roof_name": self.roof_name,
                "verdict": judged.label if judged else None, "fraction": judged.fraction if judged else None,
                "points": [{"nbytes": p.nbytes, "t_s": p.t_s, "bw_GBps": p.bw_GBps} for p in self.points]}
