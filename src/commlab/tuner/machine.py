"""A machine as NCCL's cost model sees it: GPUs, their links inside a node, the NICs between nodes.

:class:`Machine` is the description the predictive model (:mod:`commlab.tuner.predict`) takes, and what
``--machine DESC`` parses: comma-separated ``field=value`` pairs, e.g.::

    gpu=h100,nvlink=4,gpus_per_node=8,nics_per_node=32,nic_Gbps=100,nodes=2,net=efa

Fields left out take the GPU's defaults (an H100 SXM has 18 NVLink 4 links on an NVSwitch; an A40 is a PCIe
card). :data:`~commlab.hardware.gpus.GPUS` lists the GPUs, with the NVLink links and PCIe generation of each and where
that comes from.

``algo`` and ``proto`` restrict NCCL's choice as NCCL_ALGO and NCCL_PROTO do, in NCCL's own syntax
(:mod:`commlab.tuner.settings`), with ``+`` between names since commas separate the fields:
``algo=Ring``, ``algo=^NVLS``, ``proto=LL128+Simple``, ``proto=LL+Simple;allreduce:^LL``.

>>> m = parse_machine("gpu=h100,gpus_per_node=8")
>>> m.describe(), m.n_ranks, m.intra_total_GBps
('gpu=h100,gpus_per_node=8,nvlink=4,nvswitch=1', 8, 370.8)
>>> parse_machine("gpu=h100,gpus_per_node=8,ALGO=ring+tree,proto=^ll128").describe()
'gpu=h100,gpus_per_node=8,nvlink=4,nvswitch=1,algo=ring+tree,proto=^ll128'
>>> parse_machine("gpu=h100,gpus=8")   # doctest: +ELLIPSIS
Traceback (most recent call last):
...
commlab.errors.CommlabError: unknown machine field 'gpus'; the fields are: gpu, gpus_per_node, nodes, nvlink, ...
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from types import MappingProxyType

from commlab.tuner import nccl_constants as K
from commlab.tuner import settings
from commlab.tuner import nvlink_topology as topo
from commlab.hardware.gpus import GPUS, Gpu, nvlink_gen
from commlab.tuner.networks import NET_TYPES
from commlab.errors import CommlabError


#: Network kinds and the latency (us) their NCCL net plugin reports, which NCCL adds to every network hop (and
#: twice for Simple; tuning.cc:389-391). Each kind, what a hop really costs and the sources:
#: :data:`commlab.tuner.networks.NET_TYPES`.
NETS = MappingProxyType({name: t.reported_latency_us for name, t in NET_TYPES.items()})
#: The PCIe path between two GPUs of a node, as ``nvidia-smi topo -m`` names it: behind one PCIe switch (pix),
#: several switches (pxb), through the CPU's host bridge (phb), between host bridges of one CPU (node), across
#: the CPUs' interconnect (sys). It matters where the GPUs talk through host memory (p2p=0).
PATHS = ("pix", "pxb", "phb", "node", "sys")
CPUS = ("intel", "amd")


def _bool(text: str, name: str) -> bool:
    low = str(text).strip().lower()
    if low in ("1", "yes", "true", "on"):
        return True
    if low in ("0", "no", "false", "off"):
        return False
    raise CommlabError(f"machine field {name} must be 1 or 0 (yes/no), got {text!r}")


def _int(text, name: str, low: int) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise CommlabError(f"machine field {name} must be a whole number >= {low}, got {text!r}") from None
    if value < low:
        raise CommlabError(f"machine field {name} must be a whole number >= {low}, got {text!r}")
    return value


@dataclass(frozen=True)
class Machine:
    """A machine for NCCL's model. ``None`` fields take the GPU's defaults (see :meth:`resolved`)."""

    gpu: str
    gpus_per_node: int
    nodes: int = 1
    nvlink: int | None = None
    """NVLink generation; 0 for none (PCIe only). Default: the GPU's (0 for PCIe cards)."""
    nvlinks: int | None = None
    """NVLink links per GPU. Default: the GPU's."""
    nvswitch: bool | None = None
    """Every GPU reaches every other through NVSwitches (DGX/HGX). Default: with NVLink and > 2 GPUs, except
    8 or fewer Pascal/Volta GPUs (DGX-1, HGX-1, DGX Station: no NVSwitch before DGX-2)."""
    pcie: int | None = None
    """PCIe generation of the GPUs' x16 links. Default: the GPU's."""
    p2p: bool | None = None
    """CUDA peer-to-peer between the GPUs; 0 when disabled (NCCL_P2P_DISABLE=1) or unsupported: NCCL then
    stages through host memory (its SHM transport). Default: the GPU's (none on GeForce RTX 40 and 50 cards);
    set when the machine is made."""
    nics_per_node: int = 0
    nic_Gbps: float = 0.0
    """Speed of one NIC (port NCCL sees) in Gb/s."""
    net: str = "ib"
    """Network kind: ib, roce, socket, efa (p4d/p4de), efa-p5, efa-p5en, gib, tcpxo
    (:data:`commlab.tuner.networks.NET_TYPES`)."""
    cpu: str = "intel"
    """CPU vendor: NCCL's cross-node LL cap and network post overhead depend on it."""
    nvls: bool | None = None
    """NVLink SHARP (in-switch reduction). Default: on with an NVSwitch on sm90 and later."""
    net_latency_us: float | None = None
    """What a network hop really adds, in us, on top of NCCL's own per-hop figure. Default: the network kind's
    (:data:`commlab.tuner.networks.NET_TYPES`); NCCL still ranks its choices with what the plugin reports."""
    path: str | None = None
    """PCIe path between the GPUs (:data:`PATHS`); None: not known (same CPU assumed)."""
    algo: str | None = None
    """NCCL_ALGO: the algorithms NCCL may choose, in its syntax with ``+`` for ``,`` (``Ring``, ``^NVLS``,
    ``Ring+Tree``); None: all (:mod:`commlab.tuner.settings`)."""
    proto: str | None = None
    """NCCL_PROTO: the protocols NCCL may choose (``Simple``, ``^LL128``, ``LL128+Simple``); None: NCCL's
    defaults. Any list turns LL128 on or off outright, as in NCCL (tuning.cc:446, 518)."""
    nvlink_topology: str | None = None
    """How the NVLink links join the GPUs: switch, mesh, dgx1 or per-pair counts ``0-1:2+0-2:1``
    (:mod:`commlab.tuner.nvlink_topology`). Default: switch with an NVSwitch, else dgx1 for 8 Pascal/Volta GPUs,
    else mesh."""

    def __post_init__(self) -> None:
        if self.gpu not in GPUS:
            raise CommlabError(f"unknown gpu {self.gpu!r}; the GPUs are: {', '.join(GPUS)}")
        if self.p2p is None:                                   # frozen: the GPU's default is set once, here
            object.__setattr__(self, "p2p", GPUS[self.gpu].p2p)
        object.__setattr__(self, "algo", settings.canonical(self.algo, settings.ALGO_NAMES, "algorithm"))
        object.__setattr__(self, "proto", settings.canonical(self.proto, settings.PROTO_NAMES, "protocol"))
        _int(self.gpus_per_node, "gpus_per_node", 1)
        _int(self.nodes, "nodes", 1)
        if self.nvlink is not None and self.nvlink not in (0, nvlink_gen(self.gpu)):
            raise CommlabError(f"gpu {self.gpu} has NVLink {nvlink_gen(self.gpu)} (or 0 for none), got "
                               f"nvlink={self.nvlink}")
        if self.pcie is not None and self.pcie not in K.PCIE_X16_BW_GBPS:
            raise CommlabError(f"pcie must be one of {tuple(K.PCIE_X16_BW_GBPS)}, got {self.pcie!r}")
        if self.net not in NET_TYPES:
            raise CommlabError(f"unknown net {self.net!r}; expected one of: {', '.join(NET_TYPES)}")
        if self.path is not None and self.path not in PATHS:
            raise CommlabError(f"unknown path {self.path!r}; expected one of: {', '.join(PATHS)}")
        if self.net_latency_us is not None and not self.net_latency_us >= 0:
            raise CommlabError(f"machine field net_latency_us must be a number >= 0, got {self.net_latency_us!r}")
        if self.cpu not in CPUS:
            raise CommlabError(f"unknown cpu {self.cpu!r}; expected one of: {', '.join(CPUS)}")
        self._check_topology()
        if self.nodes > 1 and not (self.nics_per_node >= 1 and self.nic_Gbps > 0):
            raise CommlabError(f"a machine of {self.nodes} nodes needs nics_per_node >= 1 and nic_Gbps > 0, got "
                               f"nics_per_node={self.nics_per_node}, nic_Gbps={self.nic_Gbps}")

    def _check_topology(self) -> None:
        if self.nvlink_topology is None:
            if self.has_nvlink and not self.has_nvswitch:
                _ = self.nvlink_pairs                         # a mesh the GPU's links cannot make says so now
            return
        if not self.has_nvlink:
            raise CommlabError(f"nvlink_topology={self.nvlink_topology} needs NVLink between >= 2 GPUs; the machine "
                               f"has none (gpu={self.gpu}, nvlink={self.nvlink}, gpus_per_node={self.gpus_per_node})")
        name = topo.canonical(self.nvlink_topology, self.gpus_per_node, self.links)
        object.__setattr__(self, "nvlink_topology", name)
        if self.nvswitch is not None and self.nvswitch != (name == "switch"):
            raise CommlabError(f"nvswitch={int(self.nvswitch)} contradicts nvlink_topology={name}")

    # -- what the model reads -------------------------------------------------------------------------------
    @property
    def spec(self) -> Gpu:
        return GPUS[self.gpu]

    @property
    def compute_capability(self) -> int:
        return self.spec.compute_capability

    @property
    def n_ranks(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def has_nvlink(self) -> bool:
        gen = self.nvlink if self.nvlink is not None else self.spec.nvlink_gen
        return gen > 0 and self.links > 0 and self.gpus_per_node > 1

    @property
    def links(self) -> int:
        return self.nvlinks if self.nvlinks is not None else self.spec.nvlinks

    @property
    def has_nvswitch(self) -> bool:
        if not self.has_nvlink:
            return False
        if self.nvlink_topology is not None:
            return self.nvlink_topology == "switch"
        if self.nvswitch is not None:
            return self.nvswitch
        return self.gpus_per_node > 2 and not (self.compute_capability < 80 and self.gpus_per_node <= 8)

    @property
    def nvlink_layout(self) -> str | None:
        """The NVLink layout in use: the given ``nvlink_topology``, else switch, dgx1 (8 Pascal/Volta GPUs) or
        mesh; None without NVLink."""
        if not self.has_nvlink:
            return None
        if self.nvlink_topology is not None:
            return self.nvlink_topology
        if self.has_nvswitch:
            return "switch"
        return "dgx1" if self.gpus_per_node == 8 and self.compute_capability < 80 and self.links in (4, 6) else "mesh"

    @property
    def nvlink_pairs(self) -> dict[tuple[int, int], int] | None:
        """Links between each pair of GPUs (a < b) without an NVSwitch; None with one or without NVLink."""
        layout = self.nvlink_layout
        return None if layout is None else topo.pairs(layout, self.gpus_per_node, self.links)

    @property
    def has_nvls(self) -> bool:
        default = self.has_nvswitch and self.compute_capability >= 90
        return default if self.nvls is None else (self.nvls and self.has_nvswitch and self.compute_capability >= 90)

    @property
    def pcie_GBps(self) -> float:
        return K.PCIE_X16_BW_GBPS[self.pcie if self.pcie is not None else self.spec.pcie_gen]

    @property
    def intra_total_GBps(self) -> float:
        """NCCL's totalBw of a GPU (search.cc:30-38): the sum of its NVLink links, else its PCIe link. Without an
        NVSwitch only links to the node's other GPUs count (topo.cc drops the rest): the busiest GPU's."""
        if self.has_nvlink:
            pairs = self.nvlink_pairs
            links = self.links if pairs is None else max(
                sum(k for (a, b), k in pairs.items() if g in (a, b)) for g in range(self.gpus_per_node))
            return round(links * K.nvlink_bw_GBps(self.compute_capability), 3)
        return self.pcie_GBps

    @property
    def nic_GBps(self) -> float:
        """One NIC in GB/s as NCCL counts it (Mb/s / 8000, topo.cc:418)."""
        return self.nic_Gbps / 8.0

    def resolved(self) -> Machine:
        """The same machine with every default written out."""
        return replace(self, nvlink=(self.nvlink if self.nvlink is not None else self.spec.nvlink_gen),
                       nvlinks=self.links, nvswitch=self.has_nvswitch, pcie=self.pcie or self.spec.pcie_gen,
                       nvls=self.has_nvls, nvlink_topology=self.nvlink_layout)

    def describe(self) -> str:
        """The DESC string for this machine: the given fields, and the NVLink ones it resolves to."""
        parts = [f"gpu={self.gpu}", f"gpus_per_node={self.gpus_per_node}"]
        if self.nodes != 1:
            parts.append(f"nodes={self.nodes}")
        if self.has_nvlink:
            parts.append(f"nvlink={nvlink_gen(self.gpu)}")
            if self.nvlinks is not None:
                parts.append(f"nvlinks={self.nvlinks}")
            parts.append(f"nvswitch={int(self.has_nvswitch)}")
            if self.nvlink_topology is not None and self.nvlink_topology != "switch":
                parts.append(f"nvlink_topology={self.nvlink_topology}")
        else:
            if self.spec.nvlink_gen and self.gpus_per_node > 1:
                parts.append("nvlink=0")
            parts.append(f"pcie={self.pcie or self.spec.pcie_gen}")
        if self.p2p != self.spec.p2p:
            parts.append(f"p2p={int(bool(self.p2p))}")
        if self.nodes > 1:
            parts += [f"nics_per_node={self.nics_per_node}", f"nic_Gbps={self.nic_Gbps:g}", f"net={self.net}"]
        if self.cpu != "intel":
            parts.append(f"cpu={self.cpu}")
        if self.nvls is not None and self.nvls != (self.has_nvswitch and self.compute_capability >= 90):
            parts.append(f"nvls={int(self.nvls)}")
        if self.net_latency_us is not None:
            parts.append(f"net_latency_us={self.net_latency_us:g}")
        if self.path is not None:
            parts.append(f"path={self.path}")
        parts += [f"{name}={value}" for name, value in (("algo", self.algo), ("proto", self.proto)) if value]
        return ",".join(parts)

    def enabled(self, op: str) -> tuple[frozenset[str] | None, frozenset[str] | None]:
        """(algorithms, protocols) ``algo`` and ``proto`` leave NCCL for ``op`` (commlab's name, e.g.
        ``all_reduce``); None where the field says nothing for it (NCCL's defaults)."""
        algos = settings.enabled_names(self.algo, settings.ALGO_NAMES, "algorithm").get(op) if self.algo else None
        protos = settings.enabled_names(self.proto, settings.PROTO_NAMES, "protocol").get(op) if self.proto else None
        return algos, protos


FIELDS = tuple(f.name for f in fields(Machine))
_PARSERS = {
    "gpu": lambda v, n: v.strip().lower(), "gpus_per_node": lambda v, n: _int(v, n, 1),
    "nodes": lambda v, n: _int(v, n, 1), "nvlink": lambda v, n: _int(v, n, 0), "nvlinks": lambda v, n: _int(v, n, 1),
    "nvswitch": _bool, "pcie": lambda v, n: _int(v, n, 1), "p2p": _bool, "nics_per_node": lambda v, n: _int(v, n, 0),
    "nvls": _bool, "net": lambda v, n: v.strip().lower(), "cpu": lambda v, n: v.strip().lower(),
    "path": lambda v, n: v.strip().lower(), "net_latency_us": lambda v, n: _float(v, n, low=0.0),
    "algo": lambda v, n: v.strip(), "proto": lambda v, n: v.strip(), "nvlink_topology": lambda v, n: v.strip(),
}


def _float(text: str, name: str, low: float | None = None) -> float:
    """A number > 0 (or >= ``low`` when given)."""
    try:
        value = float(str(text).strip())
    except ValueError:
        value = float("nan")
    ok = value > 0 if low is None else value >= low
    if not (ok and value < float("inf")):
        bound = "> 0" if low is None else f">= {low:g}"
        raise CommlabError(f"machine field {name} must be a number {bound}, got {text!r}")
    return value


def parse_machine(desc: str) -> Machine:
    """A :class:`Machine` from ``field=value,field=value``; unknown fields name the accepted ones. A list inside
    a field (``algo``, ``proto``) separates its names with ``+``: ``proto=LL128+Simple``."""
    if not isinstance(desc, str) or not desc.strip():
        raise CommlabError(f"a machine description is 'field=value,...' with fields {', '.join(FIELDS)} (a list in "
                           f"algo or proto joins its names with '+': proto=LL128+Simple); got {desc!r}")
    values: dict = {}
    for item in desc.split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise CommlabError(f"machine description items are field=value (a list in algo or proto joins its "
                               f"names with '+', e.g. proto=LL128+Simple), got {item.strip()!r} in {desc!r}")
        key, value = (part.strip() for part in item.split("=", 1))
        name = next((f for f in FIELDS if f.lower() == key.lower()), None)
        if name is None:
            raise CommlabError(f"unknown machine field {key!r}; the fields are: {', '.join(FIELDS)}")
        values[name] = _float(value, name) if name == "nic_Gbps" else _PARSERS[name](value, name)
    missing = [f for f in ("gpu", "gpus_per_node") if f not in values]
    if missing:
        raise CommlabError(f"the machine description {desc!r} lacks {' and '.join(missing)} (e.g. "
                           f"'gpu=h100,gpus_per_node=8')")
    return Machine(**values)
