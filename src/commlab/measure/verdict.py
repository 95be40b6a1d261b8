"""Hold a measured bandwidth against its link: the fraction, and what it means (the topology lab).

The roof of a host-device copy is the PCIe slot's bandwidth per direction (:mod:`commlab.hardware`, PCI-SIG
figures) for the generation NVML reports, times lanes/16. Thresholds, commlab's choice for the book:

* ``>= 0.70`` of the roof: "near the roof". Packet headers and flow control cost PCIe part of its raw rate,
  so pinned copies on a healthy x16 link land here.
* ``0.40 - 0.70``: "below the roof": typical of pageable memory (the driver stages it through a pinned buffer),
  a narrower or slower link than expected, or a switch shared with another busy device.
* ``< 0.40``: "far below the roof": check ``nvidia-smi -q`` for the link's current generation and width.

>>> verdict(26.0, 32.0, "PCIe 4.0 x16").label, round(verdict(26.0, 32.0).fraction, 3)
('near the roof', 0.812)
>>> pcie_roof(5, 16)
(64.0, 'PCIe 5.0 x16')
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.hardware import link

NEAR, BELOW = 0.70, 0.40


@dataclass(frozen=True)
class Verdict:
    fraction: float
    """Measured over roof."""
    label: str
    """"near the roof", "below the roof" or "far below the roof"."""
    text: str
    """One sentence with the numbers."""


def verdict(measured_GBps: float, roof_GBps: float, roof_name: str = "the link") -> Verdict:
    """Judge ``measured_GBps`` against ``roof_GBps`` (both per direction, 1e9 B/s)."""
    if not roof_GBps > 0:
        raise CommlabError(f"roof_GBps must be a positive bandwidth, got {roof_GBps!r}")
    fraction = measured_GBps / roof_GBps
    label = "near the roof" if fraction >= NEAR else "below the roof" if fraction >= BELOW else "far below the roof"
    return Verdict(fraction, label, f"{fraction:.0%} of {roof_name} ({roof_GBps:g} GB/s per direction): {label}")


def pcie_roof(generation: int | None, lanes: int | None = 16) -> tuple[float, str]:
    """(bandwidth per direction in GB/s, name) of a PCIe slot of this generation and width."""
    if generation not in (3, 4, 5, 6):
        raise CommlabError(f"PCIe generation must be 3, 4, 5 or 6 to have a roof, got {generation!r}")
    lanes = lanes if lanes in (1, 2, 4, 8, 16) else 16
    return link(f"pcie{generation}").unidir_GBps * lanes / 16, f"PCIe {generation}.0 x{lanes}"
