"""GPU servers and NVLink domains as the network sees them: GPUs, what joins them inside, what leaves (ch 01-02).

A *node* here is one server: ``gpus`` GPUs on one NVLink fabric (a :mod:`commlab.hardware` NVSwitch entry) and
``nics`` network ports of one kind for the GPU-to-GPU (compute) fabric. Its bandwidth out, per direction, is
``nics x port``; the NVLink bandwidth of all its GPUs together is ``gpus x NVLink per GPU``. An *NVLink
domain* is the set of GPUs that reach each other over NVLink: one 8-GPU server, or a whole rack when NVLink
switches leave the server (GB200 NVL72). Tensor parallelism stays inside one domain (chapter 01).

>>> node("dgx-h100").network_out_GBps, node("dgx-h100").nvlink_out_GBps
(400.0, 3600.0)
>>> domain("gb200-nvl72").gpus, domain("gb200-nvl72").bidir_TBps
(72, 129.6)
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab import hardware
from commlab.errors import CommlabError


def _check_count(owner: str, name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise CommlabError(f"{owner} {name} must be a whole number >= 1, got {value!r}")


@dataclass(frozen=True)
class Node:
    """One GPU server: its GPUs, the NVLink fabric joining them, and its compute-fabric ports."""

    name: str
    title: str
    gpus: int
    nvlink: str
    """commlab.hardware name of the link between its GPUs (an NVSwitch entry: every GPU at full NVLink)."""
    nics: int
    nic: str
    """commlab.hardware name of one compute-fabric port."""
    source: str

    def __post_init__(self) -> None:
        _check_count(f"node {self.name!r}:", "gpus", self.gpus)
        _check_count(f"node {self.name!r}:", "nics", self.nics)
        hardware.link(self.nvlink), hardware.link(self.nic)   # unknown names raise, listing the known ones

    @property
    def nvlink_out_GBps(self) -> float:
        """NVLink bandwidth of all GPUs together, one direction: gpus x NVLink per GPU."""
        return self.gpus * hardware.link(self.nvlink).unidir_GBps

    @property
    def network_out_GBps(self) -> float:
        """Bandwidth leaving the node (and, at the same time, entering it), one direction: nics x port."""
        return self.nics * hardware.link(self.nic).unidir_GBps

    @property
    def nic_per_gpu_GBps(self) -> float:
        return self.network_out_GBps / self.gpus


@dataclass(frozen=True)
class NVLinkDomain:
    """GPUs that all reach each other over NVLink, each at its full NVLink bandwidth."""

    name: str
    title: str
    gpus: int
    link: str
    """commlab.hardware NVLink generation of its GPUs."""
    source: str
    year: int

    def __post_init__(self) -> None:
        _check_count(f"NVLink domain {self.name!r}:", "gpus", self.gpus)
        if hardware.link(self.link).kind != "nvlink":
            raise CommlabError(f"NVLink domain {self.name!r}: link must be an NVLink generation, got {self.link!r}")

    @property
    def unidir_TBps(self) -> float:
        """All GPUs' NVLink bandwidth together, one direction, in TB/s."""
        return round(self.gpus * hardware.link(self.link).unidir_GBps / 1000, 6)

    @property
    def bidir_TBps(self) -> float:
        """The same, both directions added: the figure NVIDIA prints for a domain."""
        return round(2 * self.unidir_TBps, 6)


_DGX = "NVIDIA DGX {0} user guide, hardware overview (docs.nvidia.com/dgx)"


def _nodes() -> tuple[Node, ...]:
    return (
        Node("dgx-a100", "DGX A100 (8x A100)", 8, "nvswitch2", 8, "ib-hdr",
             _DGX.format("A100") + ": 8 single-port ConnectX-6 200 Gb/s HDR InfiniBand for the compute fabric"),
        Node("dgx-h100", "DGX H100 (8x H100)", 8, "nvswitch3", 8, "ib-ndr",
             _DGX.format("H100/H200") + ": 8 single-port ConnectX-7, 400 Gb/s NDR InfiniBand (4 OSFP cages)"),
        Node("dgx-b200", "DGX B200 (8x B200)", 8, "nvswitch4", 8, "ib-ndr",
             _DGX.format("B200") + ": 8 single-port ConnectX-7, 400 Gb/s InfiniBand or Ethernet"),
    )


def _domains() -> tuple[NVLinkDomain, ...]:
    return (
        NVLinkDomain("dgx-h100", "DGX H100: one server", 8, "nvlink4",
                     "NVIDIA DGX H100: 8 H100 on four third-generation NVSwitch chips", 2022),
        NVLinkDomain("dgx-b200", "DGX B200: one server", 8, "nvlink5",
                     "NVIDIA DGX B200: 8 B200 on two fifth-generation NVSwitch chips", 2024),
        NVLinkDomain("dgx-gh200", "DGX GH200: 256 superchips", 256, "nvlink4",
                     "NVIDIA DGX GH200 (nvidia.com/en-us/data-center/dgx-gh200): 256 Grace Hopper superchips in "
                     "one NVLink domain through the NVLink Switch System", 2023),
        NVLinkDomain("gb200-nvl72", "GB200 NVL72: one rack", 72, "nvlink5",
                     "NVIDIA GB200 NVL72 (nvidia.com/en-us/data-center/gb200-nvl72): 72 Blackwell GPUs in one "
                     "NVLink domain, 1.8 TB/s per GPU, '130 TB/s' for the rack (both directions)", 2024),
    )


def _lookup(kind: str, key: str, items):
    for item in items:
        if item.name == str(key).strip().lower():
            return item
    raise CommlabError(f"unknown {kind} {key!r}; known: {', '.join(i.name for i in items)}")


def nodes() -> tuple[Node, ...]:
    """The catalogue of nodes, oldest first."""
    return _nodes()


def node(name: str) -> Node:
    """One node by name ("dgx-h100"); an unknown name lists the known ones."""
    return _lookup("node", name, _nodes())


def domains() -> tuple[NVLinkDomain, ...]:
    """The catalogue of NVLink domains, smallest first within a generation."""
    return _domains()


def domain(name: str) -> NVLinkDomain:
    """One NVLink domain by name ("gb200-nvl72"); an unknown name lists the known ones."""
    return _lookup("NVLink domain", name, _domains())
