"""Leaf-spine fabrics (two-level folded Clos, the fat trees of GPU clusters): size, cost, oversubscription.

Every switch has ``radix`` ports of one speed. A leaf gives ``down`` ports to hosts (NICs) and the rest,
``up = radix - down``, one to each spine; a spine has one port per leaf, so at most ``radix`` leaves. Then

* hosts = leaves x down; spines = up;
* oversubscription = down / up: 1 (written 1:1) means *non-blocking*: any half of the hosts can send to the
  other half at full port speed at once; 2:1 means they get half of it when every host sends off its leaf;
* bisection bandwidth (one direction) = hosts x port / 2 / max(1, oversubscription).

Non-blocking with radix k reaches k^2/2 hosts on two levels; a third level reaches k^3/4 (Al-Fares, Loukissas
and Vahdat, "A Scalable, Commodity Data Center Network Architecture", SIGCOMM 2008; the fat tree itself is
Leiserson's, IEEE Trans. Computers 1985, built from Clos's networks, Bell System Technical Journal 1953).

>>> f = LeafSpine(radix=64, down=32, leaves=64)
>>> f.hosts, f.spines, f.oversubscription, f.switches
(2048, 32, 1.0, 96)
>>> LeafSpine(radix=64, down=48, leaves=8).oversubscription
3.0
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.errors import CommlabError


@dataclass(frozen=True)
class LeafSpine:
    """A two-level leaf-spine fabric of ``leaves`` leaf switches, each with ``down`` host ports."""

    radix: int
    """Ports per switch (64 on NVIDIA's Quantum-2 QM9700 NDR InfiniBand switch)."""
    down: int
    """Host-facing ports per leaf; the other radix - down go up, one to each spine."""
    leaves: int
    port_GBps: float = 50.0
    """One port, one direction (400 Gb/s NDR: 50 GB/s)."""

    def __post_init__(self) -> None:
        for name in ("radix", "down", "leaves"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise CommlabError(f"LeafSpine.{name} must be a whole number >= 1, got {value!r}")
        if not self.down < self.radix:
            raise CommlabError(f"LeafSpine: down={self.down} host ports leave no port up to a spine on a switch of "
                               f"radix={self.radix}; need down < radix")
        if self.leaves > self.radix:
            raise CommlabError(f"LeafSpine: {self.leaves} leaves need {self.leaves} ports on each spine, but a "
                               f"spine has radix={self.radix}; add a third level (k^3/4 hosts) instead")
        if not self.port_GBps > 0:
            raise CommlabError(f"LeafSpine.port_GBps must be > 0, got {self.port_GBps!r}")

    @property
    def up(self) -> int:
        return self.radix - self.down

    @property
    def spines(self) -> int:
        return self.up

    @property
    def switches(self) -> int:
        return self.leaves + self.spines

    @property
    def hosts(self) -> int:
        return self.leaves * self.down

    @property
    def oversubscription(self) -> float:
        """Host bandwidth into a leaf over its bandwidth up to the spines: down / up."""
        return self.down / self.up

    @property
    def bisection_GBps(self) -> float:
        """One direction across the worst cut into halves: hosts x port / 2, divided by the oversubscription."""
        return self.hosts * self.port_GBps / 2 / max(1.0, self.oversubscription)


def non_blocking_hosts(radix: int, levels: int) -> int:
    """Most hosts a non-blocking fat tree of ``radix``-port switches reaches: k^2/2 (2 levels), k^3/4 (3).

    >>> non_blocking_hosts(64, 2), non_blocking_hosts(64, 3)
    (2048, 65536)
    """
    if not isinstance(radix, int) or radix < 2 or radix % 2:
        raise CommlabError(f"radix must be an even whole number >= 2, got {radix!r}")
    if levels == 2:
        return radix * radix // 2
    if levels == 3:
        return radix ** 3 // 4
    raise CommlabError(f"levels must be 2 or 3, got {levels!r}")
