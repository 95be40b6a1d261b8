"""What a machine's GPUs look like to each other: the data of ``nvidia-smi topo -m`` (chapter 01).

A :class:`Topology` holds the GPUs, the GPU-by-GPU relation matrix exactly as nvidia-smi writes it
("X" on the diagonal, "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"), the NICs where the source lists them, the
peer-to-peer status where known (``nvidia-smi topo -p2p r``'s labels), and where it came from. A topology that
could not be read is empty and says why in ``reason``.

>>> t = Topology(gpus=(Gpu(0), Gpu(1)), matrix=(("X", "NV2"), ("NV2", "X")), source="example")
>>> t.n_gpus, t.relation(0, 1), nvlink_count(t.relation(0, 1)), nvlink_count("PHB")
(2, 'NV2', 2, 0)
>>> Topology.unavailable("no GPU").reason
'no GPU'
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from commlab.errors import CommlabError

#: PCIe relations from nearest to farthest, as nvidia-smi's legend orders them (SOC: old drivers' SYS).
PCIE_RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC")
#: What each relation means, in nvidia-smi's own words (its legend).
LEGEND = {
    "X": "self",
    "NV#": "connection traversing a bonded set of # NVLinks",
    "PIX": "at most a single PCIe bridge",
    "PXB": "multiple PCIe bridges, without the PCIe host bridge",
    "PHB": "PCIe and a PCIe host bridge (typically the CPU)",
    "NODE": "PCIe and the interconnect between PCIe host bridges within a NUMA node",
    "SYS": "PCIe and the SMP interconnect between NUMA nodes (e.g. QPI/UPI)",
}
#: ``nvidia-smi topo -p2p`` labels: OK, chipset / GPU / topology not supported, not supported, disabled, unknown.
P2P_LABELS = ("OK", "CNS", "GNS", "TNS", "NS", "DR", "U")
_NV_RE = re.compile(r"^NV(\d+)$")


def is_relation(cell: str) -> bool:
    """True for a cell nvidia-smi can write in the GPU matrix: X, NV#, PIX, PXB, PHB, NODE, SYS (or SOC)."""
    return cell == "X" or cell in PCIE_RELATIONS or _NV_RE.match(cell) is not None


def nvlink_count(cell: str) -> int:
    """The # of "NV#" (bonded NVLinks between the pair); 0 for a PCIe relation or "X"."""
    match = _NV_RE.match(cell)
    return int(match.group(1)) if match else 0


@dataclass(frozen=True)
class Gpu:
    """One GPU. Fields a source does not give (the text of ``topo -m`` has no names) are None."""

    index: int
    """Position in the matrix (nvidia-smi's GPU#)."""
    name: str | None = None
    """Product name as NVML reports it: "NVIDIA H100 80GB HBM3"."""
    memory_bytes: int | None = None
    """Total device memory in bytes."""
    pcie_gen_current: int | None = None
    """PCIe generation the link runs at now (it drops when idle to save power)."""
    pcie_gen_max: int | None = None
    """Highest PCIe generation the GPU and its slot support."""
    pcie_width_current: int | None = None
    """Lanes in use now (16 for x16)."""
    pcie_width_max: int | None = None
    """Lanes the link can use."""
    numa_node: int | None = None
    """NUMA node of the CPU memory nearest the GPU."""
    cpu_affinity: str | None = None
    """CPUs nearest the GPU, as nvidia-smi writes them: "0-47,96-143"."""
    pci_bus_id: str | None = None
    """PCI address: "00000000:1B:00.0"."""

    @property
    def label(self) -> str:
        """nvidia-smi's column name: "GPU0"."""
        return f"GPU{self.index}"


@dataclass(frozen=True)
class Nic:
    """A network device in the matrix, with its relation to every GPU."""

    label: str
    """Column name in the matrix: "NIC0" (newer drivers) or the device name (older ones)."""
    name: str
    """Device name from the NIC legend ("mlx5_0"), or the label when there is no legend."""
    relations: tuple[str, ...]
    """Relation to GPU 0, 1, ... ("PIX", "NODE", "SYS", ...)."""


@dataclass(frozen=True)
class Topology:
    """GPUs, their relation matrix, NICs and P2P status, with the source they came from."""

    gpus: tuple[Gpu, ...] = ()
    matrix: tuple[tuple[str, ...], ...] = ()
    """matrix[i][j]: how GPU i reaches GPU j, as nvidia-smi writes it ("X" on the diagonal)."""
    nics: tuple[Nic, ...] = ()
    p2p: tuple[tuple[str, ...], ...] | None = None
    """p2p[i][j]: P2P read status ("OK", "CNS", ... see P2P_LABELS; "X" on the diagonal); None if unknown."""
    source: str = ""
    """"pynvml", "nvidia-smi text" or "example: <name>"."""
    reason: str = ""
    """Why the topology is empty (no driver, no GPU, ...); "" when it is not."""
    notes: tuple[str, ...] = field(default=())
    """Remarks about the source (where a text was published, what a reader skipped)."""

    def __post_init__(self) -> None:
        n = len(self.gpus)
        if len(self.matrix) != n or any(len(row) != n for row in self.matrix):
            raise CommlabError(f"a topology of {n} GPUs needs a {n}x{n} matrix, got {len(self.matrix)} rows")
        for nic in self.nics:
            if len(nic.relations) != n:
                raise CommlabError(f"NIC {nic.label} has {len(nic.relations)} relations for {n} GPUs")

    @classmethod
    def unavailable(cls, reason: str, source: str = "pynvml") -> Topology:
        """An empty topology that says why it is empty."""
        return cls(source=source, reason=reason)

    @property
    def n_gpus(self) -> int:
        return len(self.gpus)

    @property
    def empty(self) -> bool:
        return not self.gpus

    def relation(self, i: int, j: int) -> str:
        """How GPU i reaches GPU j: "X", "NV18", "PIX", ..."""
        return self.matrix[i][j]

    def nvlink_pairs(self) -> dict[tuple[int, int], int]:
        """NVLink links between each pair (i < j) of GPUs the matrix joins by NVLink (its ``NV#`` cells).

        >>> Topology(gpus=(Gpu(0), Gpu(1), Gpu(2)), matrix=(("X", "NV2", "SYS"), ("NV2", "X", "NV1"),
        ...          ("SYS", "NV1", "X"))).nvlink_pairs()
        {(0, 1): 2, (1, 2): 1}
        """
        n = self.n_gpus
        counts = {(i, j): nvlink_count(self.matrix[i][j]) for i in range(n) for j in range(i + 1, n)}
        return {pair: k for pair, k in counts.items() if k}

    def names(self) -> list[str]:
        """GPU names in order, or nvidia-smi's labels ("GPU0") where the source has no names."""
        return [gpu.name or gpu.label for gpu in self.gpus]

    def to_json(self) -> dict:
        """The JSON contract of ``commlab topo --json``."""
        out = {"gpus": self.names(), "matrix": [list(row) for row in self.matrix],
               "source": self.source, "reason": self.reason}
        if self.nics:
            out["nics"] = [{"label": nic.label, "name": nic.name, "relations": list(nic.relations)}
                           for nic in self.nics]
        if self.p2p is not None:
            out["p2p"] = [list(row) for row in self.p2p]
        return out
