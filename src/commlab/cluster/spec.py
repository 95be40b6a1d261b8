"""A GPU cluster as the cost model sees it: nodes of GPUs, their NVLink domain, their NICs, the fabric between.

A :class:`Cluster` is ``nodes`` x ``gpus_per_node`` GPUs. The GPUs of one NVLink domain (one node, or a whole
rack on a GB200 NVL72) reach each other over NVLink; everything else crosses the *fabric*, a fat tree of
switches (:class:`Fabric`) that each node joins through ``nics_per_node`` NICs of ``nic_Gbps``:

* one switch level: every NIC on one switch;
* two levels (leaf-spine): ``leaf_nics`` NIC ports under each leaf, up to ``pod_leaves`` leaves under the
  spines, bandwidth above a leaf divided by the leaf's oversubscription (:class:`commlab.fabric.LeafSpine`);
* three levels: ``pods`` such leaf-spine pods under a core layer, with its own oversubscription.

*Rail-optimised* wiring plugs NIC i of every node into leaf i (a rail; chapter 02), so a leaf holds one NIC of
``leaf_nics`` nodes; otherwise a leaf is the top-of-rack switch of ``leaf_nics / nics_per_node`` nodes.
SHARP (in-network reduction in the switches) needs rail-optimised wiring: NCCL runs one aggregation flow per
NIC rail and the switches allow at most two (NVIDIA HPC-X, "NCCL-RDMA-SHARP Plugins",
https://docs.nvidia.com/networking/display/hpcxv226/NCCL-RDMA-SHARP+Plugins).

A cluster converts to the :class:`~commlab.tuner.machine.Machine` that NCCL's predictive model
(:func:`commlab.tuner.predict.predict`) takes; an NVLink domain larger than a node (NVL72) is one NCCL "node" there.

>>> f = Fabric(levels=2, leaf_nics=32, pod_leaves=32, oversubscription=(1.0,))
>>> f.max_nics, f.pod().hosts, f.pod().spines
(1024, 1024, 32)
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.tuner.machine import CPUS, GPUS, NETS, Machine
from commlab.errors import CommlabError
from commlab.fabric.clos import LeafSpine


def _whole(owner: str, name: str, value: object, low: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise CommlabError(f"{owner}: {name} must be a whole number >= {low}, got {value!r}")


@dataclass(frozen=True)
class Fabric:
    """The network between NVLink domains: a fat tree of ``levels`` switch levels (see the module docstring)."""

    levels: int
    """Switch levels: 1 (one switch), 2 (leaf-spine), 3 (leaf-spine-core)."""
    leaf_nics: int
    """NIC ports under one leaf switch (the switch's ports that face the nodes)."""
    pod_leaves: int = 1
    """Leaves under one set of spines (2 levels: all of them; 3 levels: one pod)."""
    pods: int = 1
    """Pods under the core (3 levels only)."""
    oversubscription: tuple[float, ...] = ()
    """Bandwidth into a level over bandwidth out of it, above the leaf and (3 levels) above the spine; 1 is
    non-blocking, 7 is Meta's 1:7 aggregation layer, 0.5 a leaf with twice as much bandwidth up as down."""
    rail_optimised: bool = True
    sharp: bool = False
    """In-network reduction (InfiniBand SHARP) in the switches."""
    switch: str = ""
    """The switch, in words."""
    radix: int = 64
    """Ports per switch (NVIDIA Quantum-2 QM9700: 64 at 400 Gb/s)."""
    switch_latency_us: float = 0.13
    """Time a packet spends in one switch, us (cut-through)."""

    def __post_init__(self) -> None:
        owner = "Fabric"
        if self.levels not in (1, 2, 3):
            raise CommlabError(f"{owner}: levels must be 1, 2 or 3 (one switch, leaf-spine, leaf-spine-core), got "
                               f"{self.levels!r}")
        for name in ("leaf_nics", "pod_leaves", "pods", "radix"):
            _whole(owner, name, getattr(self, name))
        if self.levels < 3 and self.pods != 1 or self.levels < 2 and self.pod_leaves != 1:
            raise CommlabError(f"{owner}: a {self.levels}-level fabric has pods=1 and (one level) pod_leaves=1, got "
                               f"pod_leaves={self.pod_leaves}, pods={self.pods}")
        ratios = tuple(self.oversubscription)
        if len(ratios) != self.levels - 1 or not all(isinstance(r, (int, float)) and r > 0 for r in ratios):
            raise CommlabError(f"{owner}: oversubscription needs {self.levels - 1} ratio(s) > 0 (one per level above "
                               f"the leaf), got {self.oversubscription!r}")
        if not self.switch_latency_us >= 0:
            raise CommlabError(f"{owner}: switch_latency_us must be >= 0, got {self.switch_latency_us!r}")

    @property
    def max_nics(self) -> int:
        """NIC ports the fabric connects: leaf_nics x pod_leaves x pods."""
        return self.leaf_nics * self.pod_leaves * self.pods

    def taper(self, level: int) -> float:
        """Oversubscription from the NICs up to switch level ``level`` (1: above the leaf, 2: above the spine):
        the product of the ratios on the way, so Meta's 1:2 leaf under a 1:7 core tapers by 3.5."""
        product = 1.0
        for ratio in self.oversubscription[:level]:
            product *= ratio
        return product

    def pod(self, port_GBps: float = 50.0) -> LeafSpine | None:
        """One pod as a :class:`commlab.fabric.LeafSpine` (hosts, spines, bisection), when its leaves are
        radix-port switches whose ports left over go up; None when the fabric cannot be written that way."""
        if self.levels < 2 or self.leaf_nics >= self.radix or self.pod_leaves > self.radix:
            return None
        pod = LeafSpine(radix=self.radix, down=self.leaf_nics, leaves=self.pod_leaves, port_GBps=port_GBps)
        return pod if abs(pod.oversubscription - self.oversubscription[0]) < 1e-9 else None

    def describe(self) -> str:
        wiring = "rail-optimised" if self.rail_optimised else "top-of-rack leaves"
        taper = ", ".join(f"{r:g}:1" for r in self.oversubscription)
        shape = {1: "one switch", 2: "two-level fat tree (leaf-spine)", 3: "three-level fat tree"}[self.levels]
        extra = f", oversubscription {taper}" if taper else ""
        return f"{shape}, {wiring}{extra}, SHARP {'on' if self.sharp else 'off'}"


@dataclass(frozen=True)
class Cluster:
    """Nodes of GPUs, their NVLink domain and NICs, on a :class:`Fabric`; with the sources it comes from."""

    name: str
    title: str
    gpu: str
    """A GPU of :data:`commlab.tuner.machine.GPUS`."""
    gpus_per_node: int
    nics_per_node: int
    nic_Gbps: float
    """One NIC port as NCCL sees it, Gb/s."""
    net: str
    """Network kind for NCCL's model, one of :data:`commlab.tuner.machine.NETS` (ib, roce, socket, efa, efa-p5,
    tcpxo, gib, ...)."""
    fabric: Fabric
    sources: tuple[str, ...]
    """Where each figure comes from, with addresses."""
    nvlink_domain: int | None = None
    """GPUs per NVLink domain; None: one node (72 on a GB200 NVL72 rack)."""
    nvlinks: int | None = None
    """NVLink links per GPU, when not the GPU's default."""
    cpu: str = "intel"
    nic: str = ""
    """The NIC, in words."""
    default_nodes: int = 2
    """Nodes used when none are given (the shipped logs' 2 nodes, or the size the preset is named after)."""
    notes: str = ""
    """What the description assumes where its sources are silent."""

    def __post_init__(self) -> None:
        owner = f"cluster {self.name!r}"
        if self.gpu not in GPUS:
            raise CommlabError(f"{owner}: unknown gpu {self.gpu!r}; the GPUs are: {', '.join(GPUS)}")
        for name in ("gpus_per_node", "nics_per_node", "default_nodes"):
            _whole(owner, name, getattr(self, name))
        if not (isinstance(self.nic_Gbps, (int, float)) and self.nic_Gbps > 0):
            raise CommlabError(f"{owner}: nic_Gbps must be > 0, got {self.nic_Gbps!r}")
        if self.net not in NETS or self.cpu not in CPUS:
            raise CommlabError(f"{owner}: net must be one of {', '.join(NETS)} and cpu one of {', '.join(CPUS)}; "
                               f"got net={self.net!r}, cpu={self.cpu!r}")
        domain = self.gpus_per_domain
        if not isinstance(domain, int) or domain < self.gpus_per_node or domain % self.gpus_per_node:
            raise CommlabError(f"{owner}: nvlink_domain must be a whole number of nodes of {self.gpus_per_node} GPUs, "
                               f"got {self.nvlink_domain!r}")
        f = self.fabric
        if not f.rail_optimised and f.leaf_nics % self.nics_per_node:
            raise CommlabError(f"{owner}: a top-of-rack leaf takes whole nodes: leaf_nics={f.leaf_nics} is not a "
                               f"multiple of nics_per_node={self.nics_per_node}")
        if f.sharp and not f.rail_optimised:
            raise CommlabError(f"{owner}: SHARP needs rail-optimised wiring (one aggregation flow per NIC rail)")
        if self.max_nodes < 1:
            raise CommlabError(f"{owner}: the fabric's {f.max_nics} NIC ports cannot take one node of "
                               f"{self.nics_per_node} NICs")
        if not self.sources or not all("http" in s or "arXiv" in s for s in self.sources):
            raise CommlabError(f"{owner}: every source needs an address (http... or arXiv), got {self.sources!r}")

    # -- shape -----------------------------------------------------------------------------------------------
    @property
    def gpus_per_domain(self) -> int:
        return self.gpus_per_node if self.nvlink_domain is None else self.nvlink_domain

    @property
    def nodes_per_domain(self) -> int:
        return self.gpus_per_domain // self.gpus_per_node

    @property
    def max_nodes(self) -> int:
        """Nodes the fabric connects: its NIC ports over the NICs of a node."""
        return self.fabric.max_nics // self.nics_per_node

    @property
    def nic_GBps(self) -> float:
        return self.nic_Gbps / 8.0

    def check_nodes(self, nodes: object) -> int:
        """``nodes`` as an int, or CommlabError naming what the cluster accepts."""
        try:
            n = int(str(nodes).strip())
        except ValueError:
            n = None
        top, per = self.max_nodes, self.nodes_per_domain
        if n is None or n < 1 or n > top:
            raise CommlabError(f"cluster {self.name} connects 1 to {top} nodes of {self.gpus_per_node} GPUs "
                               f"({self.fabric.max_nics} NIC ports, {self.nics_per_node} per node); "
                               f"got nodes={nodes!r}")
        if n > per and n % per:
            raise CommlabError(f"cluster {self.name}: {n} nodes do not fill whole NVLink domains of {per} nodes "
                               f"({self.gpus_per_domain} GPUs); use up to {per} nodes or a multiple of {per}")
        return n

    def machine(self, nodes: int | None = None) -> Machine:
        """The :class:`~commlab.tuner.machine.Machine` of ``nodes`` nodes (default ``default_nodes``), for NCCL's
        model: one NVLink domain is one NCCL node, with the NICs of all its nodes."""
        n = self.check_nodes(self.default_nodes if nodes is None else nodes)
        per_domain = min(n, self.nodes_per_domain)
        domains = n // per_domain
        gpus = per_domain * self.gpus_per_node
        multi = domains > 1
        return Machine(gpu=self.gpu, gpus_per_node=gpus, nodes=domains, nvlinks=self.nvlinks,
                       nics_per_node=self.nics_per_node * per_domain if multi else 0,
                       nic_Gbps=float(self.nic_Gbps) if multi else 0.0, net=self.net, cpu=self.cpu)

    def describe(self) -> list[str]:
        """Lines for ``commlab cluster show``."""
        f = self.fabric
        domain = ("one node" if self.nvlink_domain is None else
                  f"{self.gpus_per_domain} GPUs ({self.nodes_per_domain} nodes)")
        lines = [f"{self.name}: {self.title}",
                 f"  node: {self.gpus_per_node} x {self.gpu.upper()}, NVLink domain {domain}",
                 f"  NICs: {self.nics_per_node} x {self.nic_Gbps:g} Gb/s per node ({self.nic or self.net}), "
                 f"net={self.net}, cpu={self.cpu}",
                 f"  fabric: {f.describe()}; {f.switch or 'switches not named'}",
                 f"  size: up to {self.max_nodes} nodes ({self.max_nodes * self.gpus_per_node} GPUs); "
                 f"{f.leaf_nics} NIC ports per leaf"
                 + (f", {f.pod_leaves} leaves per {'pod' if f.levels == 3 else 'fabric'}" if f.levels > 1 else "")
                 + (f", {f.pods} pods" if f.levels == 3 else ""),
                 f"  NCCL's model sees {self.default_nodes} nodes as: {self.machine().describe()}"]
        if self.notes:
            lines.append(f"  assumed: {self.notes}")
        lines += ["  sources:"] + [f"    - {s}" for s in self.sources]
        return lines

    def to_json(self) -> dict:
        f = self.fabric
        return {"name": self.name, "title": self.title, "gpu": self.gpu, "gpus_per_node": self.gpus_per_node,
                "nvlink_domain_gpus": self.gpus_per_domain, "nics_per_node": self.nics_per_node,
                "nic_Gbps": self.nic_Gbps, "nic": self.nic, "net": self.net, "cpu": self.cpu,
                "fabric": {"levels": f.levels, "leaf_nics": f.leaf_nics, "pod_leaves": f.pod_leaves, "pods": f.pods,
                           "oversubscription": list(f.oversubscription), "rail_optimised": f.rail_optimised,
                           "sharp": f.sharp, "switch": f.switch, "radix": f.radix,
                           "switch_latency_us": f.switch_latency_us, "max_nics": f.max_nics},
                "max_nodes": self.max_nodes, "default_nodes": self.default_nodes,
                "machine": self.machine().describe(), "notes": self.notes, "sources": list(self.sources)}
