"""NCCL's SHM transport: GPU to GPU through host memory, when CUDA peer-to-peer is off or unsupported.

When NCCL picks it (NVIDIA/nccl, file:line at a release tag): ``p2pCanConnect`` refuses P2P when
``ncclTopoCheckP2p`` says the path is beyond the P2P level, which ``NCCL_P2P_DISABLE=1`` sets to none
(v2.16.2-1 ``src/graph/paths.cc:279-285``), and when ``cudaDeviceCanAccessPeer`` returns 0, as on GeForce cards
with the stock driver (v2.16.2-1 ``src/transport/p2p.cc:136-168``; v2.30.3-1 ``p2p.cc:174-206``); the next
transport tried is SHM. Both cases, in one process (``-g N``) or in several, give the same transport and the
same copy. (From 2.23 the default P2P level is PXB on every host, so GPUs under different host bridges use SHM
unless the host is AMD with at most 2 GPUs: v2.23.4-1 onward, v2.30.3-1 ``paths.cc:338-343``; up to 2.22 it was
SYS except on Intel, ARM and Zhaoxin hosts, v2.16.2-1 ``paths.cc:276-295``.)

How the bytes move (``src/transport/shm.cc``, unchanged from 2.16 to 2.30 in what follows): the connection's
buffer is host memory allocated by the receiver (``NCCL_SHM_LOCALITY`` defaults to the receiver side, v2.16.2-1
``shm.cc:45,110-114``; v2.30.3-1 ``shm.cc:72,145``); the sender's SMs store into it across PCIe, the receiver's
SMs load from it across PCIe (``via SHM/direct/direct``, ``shm.cc:95``). Every byte crosses PCIe twice, up the
sender's link and down the receiver's, and between CPUs also crosses their interconnect. NCCL 2.13 to 2.30.4
could stage it with copy engines instead (``NCCL_SHM_USE_CUDA_MEMCPY``, default 0, ``shm.cc:41``), removed in
2.30.7 (commit 1fae0736). What did change is the host memory itself:

* up to 2.23, and later where the driver is older than CUDA 12.6: a ``/dev/shm`` file, ``mmap``-ed and pinned
  with ``cudaHostRegister`` (v2.16.2-1 ``src/misc/shmutils.cc:69,79,103``), i.e. ordinary small pages placed
  where the creating process first touches them;
* from 2.24 with a CUDA 12.6 or newer driver: ``cuMemCreate`` pinned host memory on the NUMA node of the
  allocating (receiving) GPU (v2.24.3-1 ``src/include/alloc.h:34-66``, ``src/transport/shm.cc:526-531``;
  default on when the driver reports 12060 or more, ``src/misc/cudawrap.cc:69``; off by default in 2.23,
  ``cudawrap.cc:14``).

The machine description names neither the NCCL version nor the driver, so this module cannot tell the two
apart; the rates below are all from the first kind (NCCL 2.16.2 logs, and logs of unknown version).

Two regimes, by what a GPU does at once:

* **one way**: it only writes host memory (a 2-GPU broadcast's root) or only reads it (the other GPU). Its link
  runs at what SM loads from host memory reach: :data:`SM_HOST_EFFICIENCY` of the PCIe rate.
* **two ways**: it reads the previous GPU's data from host memory while it writes its own for the next one
  (every ring of all_reduce, all_gather, reduce_scatter; the middle of a longer chain). Then the per-GPU rate
  is far below the link and does not follow the PCIe generation: 3.6-4.0 GB/s on PCIe 3 (shipped logs 14, 15)
  as on PCIe 4 (log 06). A reason consistent with it is PCIe's ordering rule, under which a read request may
  not pass the posted writes issued before it, so each of the GPU's loads from host memory waits behind its own
  stores; no source gives the resulting rate, so :data:`SHM_TWO_WAY_GBPS` is a calibrated constant
  (:mod:`commlab.calibration`: chosen on one run, checked on runs of another GPU, PCIe generation, path and
  host).

Between CPUs (``path=sys``) and through a shared PCIe switch (``pix``/``pxb``) the rate is further bounded by the
CPU interconnect (NCCL's own figures, topo.h) and by the shared uplink.

What the single two-way rate does not explain (all_reduce busbw at the largest sizes, GB/s per GPU):
5.2 on a DGX A100 with AMD EPYC hosts (NCCL 2.16.2, shipped log 02), 1.4 on 4 A40 across Intel sockets (2.16.2,
log 05), 14.9 on 8 RTX 4090 under 2 AMD EPYC 7542 (all pairs SYS, NCCL version unknown, driver 550-era so the
``/dev/shm`` kind of memory even if NCCL is 2.24 or later), 2.6 on 4 RTX 4090 in docker (about NCCL 2.19),
5.2-5.4 on 4 A100-PCIe across 2 sockets, 27.3 on 4 RTX 5090 on AMD Genoa (PCIe 5, NCCL 2.26.2, so likely the
``cuMemCreate`` kind). The same CPU vendor (AMD: 5.2 and 14.9), GPU (RTX 4090: 14.9 and 2.6), PCIe generation
(4.0: 1.4 to 14.9) and path (SYS: 1.4 to 14.9) give rates 3-6x apart, and NCCL's Simple-protocol thread count
(256 when the ring's planned bandwidth is at most 12 GB/s, else 512: v2.16.2-1 ``src/graph/tuning.cc:95``),
the one Little's-law lever these fields decide, would by the ring search's speed steps (``search.cc:729``; not
printed in these logs) give 512 threads to both 02 (5.2) and the RTX 4090 host (14.9), and 256 and 512 to
logs 14 and 06, which run at the same rate. So no rule over the described fields separates them; the rate stays
the calibrated one, and the logs above are where it misses.

>>> from commlab.tuner.machine import parse_machine
>>> rtx = parse_machine("gpu=rtx2080ti,gpus_per_node=2,pcie=3,p2p=0,path=pix")
>>> round(shm_rate_GBps("broadcast", rtx), 2), shm_rate_GBps("all_reduce", rtx)
(12.56, 3.87)
"""
from __future__ import annotations

from types import MappingProxyType

from commlab.calibration import value

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

#: Per-GPU rate, GB/s each way, of a GPU that reads and writes host memory at once through NCCL's SHM transport
#: (calibrated: commlab/data/calibration.csv)
SHM_TWO_WAY_GBPS = value("SHM_TWO_WAY_GBPS")

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
