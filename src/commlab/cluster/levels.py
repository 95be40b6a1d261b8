"""A cluster at a given size, level by level: the NVLink domain, the NICs, the fabric's uplinks.

:class:`Shape` is what every algorithm's cost reads: ``N`` GPUs in ``D`` NVLink domains of ``d`` GPUs with ``k``
NICs each; per GPU its NVLink bandwidth, per NIC the speed NCCL drives it at; NCCL's per-step latencies; and
the fabric's levels as groups of domains under one leaf (and one pod), with the oversubscription above each.

**Bandwidths.** NVLink per GPU is NCCL's figure (links x ``ncclTopoNVLinkBw``, :attr:`Machine.intra_total_GBps`,
370.8 GB/s on an H100); a NIC runs at the fastest channel speed of NCCL's search list that fits under its line
rate (``search.cc`` speed arrays, :data:`commlab.tuner.nccl_constants.SPEEDS_INTER`): 48 GB/s on a 400 Gb/s
port, 12 on 100 Gb/s. NVIDIA expects "46-48 GB/s per NIC" from NDR
(https://github.com/NVIDIA/nccl-tests/issues/290).

**The fabric.** Traffic that leaves a group of ``g`` domains (under one leaf, or one pod) shares the group's
uplinks, whose bandwidth is the group's NIC bandwidth divided by the taper (the product of the
oversubscription ratios on the way up). A traffic *pattern* says how many bytes leave one domain (``out``, per
byte of the collective's buffer) and how many leave the busiest group, per domain of the group (``up``); then

    t_NIC = out x S / (k B_NIC),     t_level = up x taper x S / (k B_NIC),

and the fabric slows the collective only where ``up x taper > out``. NCCL's rings and trees keep channel c on
NIC c of every node (rail-aligned), so on a rail-optimised fabric only the group boundaries cross a spine.
The model assumes the uplinks share load perfectly (adaptive routing, or packet spraying as EFA's SRD does);
static ECMP hashing makes flows collide, which it leaves out.

>>> from commlab.cluster.presets import preset
>>> s = Shape.of(preset("h100-16k-roce"), 2048)
>>> s.gpus, s.domains, [(g.name, g.domains, g.taper) for g in s.groups]
(16384, 2048, [('leaf', 2, 1.0), ('pod', 384, 7.0)])
>>> round(float(ring_pattern(s, 2.0).up[1] * s.groups[1].taper / ring_pattern(s, 2.0).out), 4)   # last pod: 7/128
0.0547
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commlab.cluster.spec import Cluster
from commlab.tuner import nccl_constants as K
from commlab.tuner.machine import NETS, Machine
from commlab.errors import CommlabError


@dataclass(frozen=True)
class Group:
    """One fabric level: ``domains`` NVLink domains under one switch group, ``taper`` above it."""

    name: str
    """"leaf" (traffic leaving it goes up to the spines) or "pod" (up to the core)."""
    domains: int
    taper: float
    hops: int
    """Switch hops between two domains whose paths meet above this level (3 through a spine, 5 the core)."""


@dataclass(frozen=True)
class Pattern:
    """Bytes leaving one domain (``out``) and the busiest group per domain (``up``, one per fabric level),
    per byte of the collective's buffer."""

    out: float
    up: tuple[float, ...]
    top: int
    """The highest fabric level the pattern crosses (0: it stays under one leaf)."""


@dataclass(frozen=True)
class Shape:
    """A cluster of ``nodes`` nodes, seen level by level (see the module docstring)."""

    cluster: Cluster
    nodes: int
    machine: Machine
    gpus: int
    gpus_per_domain: int
    domains: int
    nics_per_domain: int
    groups: tuple[Group, ...]

    @classmethod
    def of(cls, cluster: Cluster, nodes: object) -> Shape:
        n = cluster.check_nodes(nodes)
        m = cluster.machine(n)
        per_domain = min(n, cluster.nodes_per_domain)
        domains = n // per_domain
        return cls(cluster, n, m, n * cluster.gpus_per_node, per_domain * cluster.gpus_per_node, domains,
                   per_domain * cluster.nics_per_node, _groups(cluster, per_domain))

    # -- links --------------------------------------------------------------------------------------------
    @property
    def nvlink_GBps(self) -> float:
        """One GPU's NVLink bandwidth as NCCL counts it (its PCIe link without NVLink)."""
        return self.machine.intra_total_GBps

    @property
    def nic_GBps(self) -> float:
        """One NIC at the fastest NCCL channel speed under its line rate."""
        line = self.cluster.nic_GBps
        speeds = K.SPEEDS_INTER[K.speeds_arch(self.machine.compute_capability)]
        return max((s for s in speeds if s <= line + 1e-9), default=line)

    @property
    def network_GBps(self) -> float:
        """All NICs of one domain: k x B_NIC."""
        return self.nics_per_domain * self.nic_GBps

    def net_latency_us(self, proto: str, algo: str = "Ring") -> float:
        """NCCL's latency of one network step for ``proto`` (hwLat NET plus the plugin's latency, twice for
        Simple: tuning.cc:384-391)."""
        plugin = NETS[self.cluster.net]
        return K.HW_LAT_US[("net", algo, proto)] + plugin * (2.0 if proto == "Simple" else 1.0)

    def intra_latency_us(self, proto: str, algo: str = "Ring") -> float:
        hw = "nvlink" if self.machine.has_nvlink else "pci"
        return K.HW_LAT_US[(hw, algo, proto)]

    @property
    def protocols(self) -> tuple[str, ...]:
        """NCCL's protocols here: LL128 only with NVLink (tuning.cc:518-536)."""
        return K.PROTOS if self.machine.has_nvlink else ("LL", "Simple")

    def extra_hops_us(self, top: int) -> float:
        """Switch time a network step spends above the leaf when its path crosses fabric level ``top``."""
        if top == 0:
            return 0.0
        return (self.groups[top - 1].hops - 1) * self.cluster.fabric.switch_latency_us

    def describe_links(self) -> dict[str, str]:
        """Words for the bottleneck report, per level."""
        c = self.cluster
        gen = self.machine.resolved().nvlink
        nvl = (f"NVLink {gen}, {self.nvlink_GBps:g} GB/s per GPU as NCCL counts it" if self.machine.has_nvlink
               else f"PCIe, {self.nvlink_GBps:g} GB/s per GPU")
        nic = (f"{self.nics_per_domain} x {c.nic_Gbps:g} Gb/s {c.net} NICs per "
               f"{'node' if c.nodes_per_domain == 1 else 'NVLink domain'}, {self.nic_GBps:g} GB/s each")
        out = {"nvlink": nvl, "nvswitch": "NVLink SHARP: the NVSwitch adds", "nic": nic}
        for g in self.groups:
            above = "spines" if g.name == "leaf" else "core"
            out[g.name] = f"{g.name} uplinks to the {above}, {g.taper:g}:1 ({g.domains} domains per {g.name})"
        return out


def _groups(cluster: Cluster, nodes_per_domain: int) -> tuple[Group, ...]:
    """The fabric's levels above the leaf, in domains per group (at least 1)."""
    f = cluster.fabric
    leaf_nodes = f.leaf_nics if f.rail_optimised else f.leaf_nics // cluster.nics_per_node
    pod_nodes = f.leaf_nics * f.pod_leaves // cluster.nics_per_node
    sizes = ((("leaf", leaf_nodes, 3),) if f.levels >= 2 else ()) + ((("pod", pod_nodes, 5),) if f.levels == 3 else ())
    return tuple(Group(name, max(1, nodes // nodes_per_domain), f.taper(i + 1), hops)
                 for i, (name, nodes, hops) in enumerate(sizes))


def _group_sizes(domains: int, per_group: int) -> np.ndarray:
    full, rest = divmod(domains, per_group)
    return np.array([per_group] * full + ([rest] if rest else []))


def ring_pattern(shape: Shape, factor: float) -> Pattern:
    """A ring through the domains in order, ``factor`` x S leaving every domain (2(N-1)/N for an all-reduce):
    one boundary stream leaves each group, so the busiest (smallest) group sends ``factor / size`` per domain."""
    ups, top = [], 0
    for level, g in enumerate(shape.groups, start=1):
        sizes = _group_sizes(shape.domains, g.domains)
        crossing = len(sizes) > 1
        ups.append(float(factor / sizes.min()) if crossing else 0.0)
        top = level if crossing else top
    return Pattern(factor, tuple(ups), top)


def btree_parents(n: int) -> np.ndarray:
    """Parent of every rank in NCCL's binary tree (ncclGetBtree, src/graph/trees.cc): -1 for the root.

    >>> btree_parents(14).tolist()
    [-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12]
    """
    if n < 1:
        raise CommlabError(f"a tree needs at least one rank, got {n!r}")
    r = np.arange(n)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    up = np.where(up >= n, r ^ bit, up)
    up[0] = -1
    return up


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """NCCL's double binary tree (ncclGetDtree): the tree and its mirror (even n) or its shift by one (odd n)."""
    first = btree_parents(n)
    if n % 2:
        shifted = btree_parents(n)[(np.arange(n) - 1) % n]
        second = np.where(shifted < 0, -1, (shifted + 1) % n)
    else:
        mirrored = btree_parents(n)[n - 1 - np.arange(n)]
        second = np.where(mirrored < 0, -1, n - 1 - mirrored)
    return first, second


def tree_pattern(shape: Shape) -> Pattern:
    """NCCL's double binary tree all-reduce across domains, each tree carrying S/2 up and down, reduce and
    broadcast pipelined: a domain sends S/2 to its parent and S/2 to each child, per tree."""
    n = shape.domains
    if n == 1:
        return Pattern(0.0, tuple(0.0 for _ in shape.groups), 0)
    out = np.zeros(n)
    edges = []
    for parent in dtree_parents(n):
        child = np.nonzero(parent >= 0)[0]
        np.add.at(out, child, 0.5)
        np.add.at(out, parent[child], 0.5)
        edges.append((child, parent[child]))
    ups, top = [], 0
    for level, g in enumerate(shape.groups, start=1):
        group = lambda x, domains=g.domains: x // domains                 # noqa: E731
        leaving = np.zeros(-(-n // g.domains))
        for child, parent in edges:
            cross = group(child) != group(parent)
            np.add.at(leaving, group(child[cross]), 0.5)
            np.add.at(leaving, group(parent[cross]), 0.5)
        sizes = _group_sizes(n, g.domains)
        ups.append(float(np.max(leaving / sizes)))
        top = level if leaving.any() else top
    return Pattern(float(out.max()), tuple(ups), top)


def reduction_pattern(shape: Shape) -> Pattern:
    """In-network reduction (SHARP): every domain sends S up once and gets S back; a switch passes one reduced
    stream up per group, so a group sends S up, not S per domain."""
    ups, top = [], 0
    for level, g in enumerate(shape.groups, start=1):
        sizes = _group_sizes(shape.domains, g.domains)
        crossing = len(sizes) > 1
        ups.append(float(1.0 / sizes.min()) if crossing else 0.0)
        top = level if crossing else top
    return Pattern(1.0 if shape.domains > 1 else 0.0, tuple(ups), top)


def exchange_share(shape: Shape, distance: int) -> tuple[tuple[float, ...], int]:
    """For a step whose partners are ``distance`` domains apart (rank XOR or shift): the share of the step's
    network bytes that leaves each level's groups, and the highest level crossed."""
    shares, top = [], 0
    for level, g in enumerate(shape.groups, start=1):
        share = 0.0 if shape.domains <= g.domains else min(1.0, distance / g.domains)
        shares.append(share)
        top = level if share > 0 else top
    return tuple(shares), top


def all_to_all_pattern(shape: Shape) -> Pattern:
    """Every GPU sends S/N to every GPU: a domain sends (N-d)/N x d x S; of it, the share for domains outside
    a group of g leaves the group: (D-g)/(D-1). On a rail-optimised fabric NCCL's PXN first moves data over
    NVLink to the GPU on the destination's rail, so a rail-optimised leaf groups domains like a rack does."""
    n, d, big_d = shape.gpus, shape.gpus_per_domain, shape.domains
    out = (n - d) / n * d
    ups, top = [], 0
    for level, g in enumerate(shape.groups, start=1):
        share = max(0.0, (big_d - g.domains) / (big_d - 1)) if big_d > 1 else 0.0
        ups.append(out * share)
        top = level if share > 0 else top
    return Pattern(out, tuple(ups), top)
