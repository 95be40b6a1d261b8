"""NCCL's SHM transport: GPU to GPU through host memory, when CUDA peer-to-peer is off or unsupported.

How the bytes move (NVIDIA/nccl ``src/transport/shm.cc``): the connection's buffer is host memory on the
receiver's NUMA node (``NCCL_SHM_LOCALITY`` defaults to the receiver side, shm.cc:56); the sender's SMs store
into it across PCIe, the receiver's SMs load from it across PCIe. Every byte crosses PCIe twice, up the
sender's link and down the receiver's, and between CPUs also crosses their interconnect. (NCCL 2.13 to 2.29
could move it with copy engines instead, ``NCCL_SHM_USE_CUDA_MEMCPY``; off by default, removed in 2.30.)

Two regimes, by what a GPU does at once:

* **one way**: it only writes host memory (a 2-GPU broadcast's root) or only reads it (the other GPU). Its link
  runs at what SM loads from host memory reach: :data:`SM_HOST_EFFICIENCY` of the PCIe rate.
* **two ways**: it reads the previous GPU's data from host memory while it writes its own for the next one
  (every ring of all_reduce, all_gather, reduce_scatter; the middle of a longer chain). Then the per-GPU rate
  is far below the link and does not follow the PCIe generation: 3.6-4.0 GB/s on PCIe 3 (fixtures 14, 15) as
  on PCIe 4 (fixture 06). A reason consistent with it is PCIe's ordering rule, under which a read request may
  not pass the posted writes issued before it, so each of the GPU's loads from host memory waits behind its own
  stores; no source gives the resulting rate, so :data:`SHM_TWO_WAY_GBPS` is chosen on fixture 06 and checked
  on fixtures 14 and 15 (another GPU, PCIe generation, path and host).

Between CPUs (``path=sys``) and through a shared PCIe switch (``pix``/``pxb``) the rate is further bounded by the
CPU interconnect (NCCL's own figures, topo.h) and by the shared uplink.

>>> from commlab.cost.machine import parse_machine
>>> rtx = parse_machine("gpu=rtx2080ti,gpus_per_node=2,pcie=3,p2p=0,path=pix")
>>> round(shm_rate_GBps("broadcast", rtx), 2), shm_rate_GBps("all_reduce", rtx)
(12.56, 3.87)
"""
from __future__ import annotations

from types import MappingProxyType

#: PCIe x16 payload rate per direction, GB/s: lanes x transfer rate x line-code efficiency / 8. PCIe 3.0, 4.0
#: and 5.0 run 8, 16 and 32 GT/s with 128b/130b coding (PCI-SIG, PCI Express Base Specification 3.0 section
#: 4.2.2, 4.0 and 5.0 keep it); PCIe 6.0 runs 64 GT/s in 256-byte FLITs of which 242 bytes carry TLPs and DLLPs
#: (PCI-SIG, PCIe 6.0 specification FAQ).
PCIE_RAW_GBPS = MappingProxyType({3: 8 * 16 * 128 / 130 / 8, 4: 16 * 16 * 128 / 130 / 8,
                                  5: 32 * 16 * 128 / 130 / 8, 6: 64 * 16 * 242 / 256 / 8})

#: SM loads from pinned host memory reach 80% of the PCIe rate: nvbandwidth's host_to_device_memcpy_sm moved
#: 25.13 GB/s on an A100-SXM4-40GB at 512 MiB and 1 GiB (PCIe 4.0 x16, 31.5 GB/s): NVIDIA/nvbandwidth issue 42
#: (github.com/NVIDIA/nvbandwidth/issues/42). For comparison, the copy engine reached 86% on this project's H200
#: (benchmarks/README.md, "GPU"), and nvbandwidth's README shows 26.0 GB/s (83%) for its own PCIe 4.0 example.
SM_HOST_EFFICIENCY = 25.13 / (16 * 16 * 128 / 130 / 8)

#: Per-GPU rate, GB/s each way, of a GPU that reads and writes host memory at once through NCCL's SHM transport.
#: No source states it. Chosen on fixture 06 (2 A40, PCIe 4.0, NODE path, NCCL 2.16.2: all_reduce busbw 3.86,
#: 4.02, 3.88, 3.61 GB/s at 1-8 GiB; the median, 3.87) and checked on fixtures 14 and 15 (2 RTX 2080 Ti,
#: PCIe 3.0 behind one switch: 4.00 and 3.2-3.8 GB/s), which it was not chosen on.
SHM_TWO_WAY_GBPS = 3.87

#: Bandwidth NCCL assigns to the link between two CPUs, GB/s (NVIDIA/nccl src/graph/topo.h:26-29): Intel
#: Skylake and later UPI (SKL_QPI_BW 10.0; Broadwell's QPI is 6.0, Sapphire Rapids' 22.0), AMD (AMD_BW 16.0).
CPU_INTERCONNECT_GBPS = MappingProxyType({"intel": 10.0, "amd": 16.0})

#: The collectives that are a chain, not a ring, in NCCL (broadcast and reduce): on 2 GPUs each moves data one way.
CHAIN_OPS = ("broadcast", "reduce")


def pcie_raw_GBps(m) -> float:
    """The machine's PCIe x16 payload rate per direction (:data:`PCIE_RAW_GBPS`)."""
    return PCIE_RAW_GBPS[m.pcie if m.pcie is not None else m.spec.pcie_gen]


def one_way_GBps(m) -> float:
    """A GPU that only writes or only reads host memory: its link at SM efficiency, and no more than the CPU
    interconnect across CPUs."""
    rate = pcie_raw_GBps(m) * SM_HOST_EFFICIENCY
    if m.path == "sys":
        rate = min(rate, CPU_INTERCONNECT_GBPS[m.cpu])
    return rate


def two_way_GBps(m) -> float:
    """A GPU that reads and writes host memory at once: :data:`SHM_TWO_WAY_GBPS`, bounded by the links.

    Behind a shared PCIe switch (pix, pxb) two GPUs share its uplink, each writing up and reading down:
    at most half the one-way rate each. Across CPUs each GPU's writes also cross the CPU interconnect."""
    rate = min(SHM_TWO_WAY_GBPS, pcie_raw_GBps(m) * SM_HOST_EFFICIENCY)
    if m.path in ("pix", "pxb"):
        rate = min(rate, one_way_GBps(m) / 2)
    if m.path == "sys":
        rate = min(rate, CPU_INTERCONNECT_GBPS[m.cpu])
    return rate


def shm_rate_GBps(op: str, m) -> float:
    """Per-GPU rate of ``op``'s ring or chain through host memory, GB/s each way (the bus bandwidth of the
    realised channels): one way for a broadcast or reduce on 2 GPUs, two ways otherwise."""
    if op in CHAIN_OPS and m.n_ranks == 2:
        return one_way_GBps(m)
    return two_way_GBps(m)
