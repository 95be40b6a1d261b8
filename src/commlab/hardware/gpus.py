"""One record per GPU: compute capability, NVLink links, PCIe generation and P2P (what NCCL's model needs), and
memory, HBM bandwidth and the dense BF16 peak (what the planner and ASTRA-sim's files need), each with its source.

``source`` cites the links and P2P; ``memory_source`` the memory, HBM bandwidth and BF16 peak. A figure no
source of the project gives is None (the V100 has no BF16 tensor cores; most PCIe cards' memory is not used).
:data:`GPUS` holds every part by the name ``--machine gpu=NAME`` takes; :data:`VARIANTS` other memory
configurations of one of them (the same chip and links: NCCL's model cannot tell them apart), and :func:`gpu`
looks a name up in both.

A GPU's NVLink total is its links times the per-link rate of its generation (NVIDIA's figures, both directions:
NVLink 1 40 GB/s, NVLink 2-4 50 GB/s, NVLink 5 100 GB/s; GA102's (sm86) NVLink 3 links are x4 links of 28.125
GB/s); each source names the data sheet's total. NCCL itself counts a link at its own figure
(:func:`commlab.tuner.nccl_constants.nvlink_bw_GBps`, topo.h:19-24), which is what the model uses.

A PCIe card with an NVLink bridge lists the bridge's links; the bridge is off by default (``nvlink=0``) and
``nvlink=<gen>`` turns it on (:func:`nvlink_gen`).

>>> GPUS["h800"].nvlinks, GPUS["b300"].compute_capability, nvlink_gen("h100-pcie"), GPUS["rtx4090"].p2p
(8, 103, 4, False)
>>> gpu("h200").memory_GiB, gpu("h200").hbm_GBps, gpu("a100-40gb").hbm_GBps, gpu("a100-40gb").nvlinks
(141.0, 4800.0, 1555.0, 12)
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType

from commlab.errors import CommlabError


@dataclass(frozen=True)
class Gpu:
    """One GPU: its compute capability and default links (NCCL's model), its memory and peaks (the planner)."""

    name: str
    compute_capability: int
    nvlink_gen: int
    """NVLink generation of the SXM part (0: a PCIe card without NVLink by default)."""
    nvlinks: int
    """NVLink links per GPU when it has NVLink (SXM, or the bridge of a PCIe card)."""
    pcie_gen: int
    source: str
    """Where the links and P2P come from."""
    p2p: bool = True
    """CUDA peer-to-peer between two such GPUs by default (GeForce 40 and 50 cards: the driver has none)."""
    memory_GiB: float | None = None
    """HBM capacity (vendors' "80 GB" of HBM is 80 GiB: nvidia-smi shows about 80 x 1024 MiB)."""
    hbm_GBps: float | None = None
    """HBM bandwidth, 1e9 bytes/s (data sheet)."""
    peak_bf16_TFLOPS: float | None = None
    """Dense BF16 tensor-core peak, 1e12 FLOP/s (no sparsity)."""
    memory_source: str = ""
    """Where the memory, HBM bandwidth and BF16 peak come from."""


_NO_P2P_4090 = ("the driver reports no CUDA P2P between GeForce RTX 40 cards (NVIDIA/nccl issue 1127: "
                "'It is for sure that 4090 does not support it')")
_NO_P2P_5090 = ("`nvidia-smi topo -p2p rw` reports GNS (GPU not supported) for a pair of RTX 5090 "
                "(github.com/noonghunna/club-3090/issues/1140)")

_A100 = "NVIDIA A100 data sheet, SXM4 {mem}GB: {mem} GB {kind}, {bw} GB/s, 312 TFLOPS BF16 dense"

#: The GPUs commlab knows, by lower-case name. Links per GPU and the NVLink total from NVIDIA's data sheets.
GPUS = MappingProxyType({g.name: g for g in (
    Gpu("p100", 60, 1, 4, 3, "Tesla P100 SXM2: 4 NVLink 1 links, 160 GB/s (NVIDIA Tesla P100 data sheet; GP100 "
        "whitepaper WP-08019: 80 GB/s each way)"),
    Gpu("gtx1080", 61, 0, 0, 3, "GeForce GTX 1080: PCIe Gen3 card, no NVLink (SLI HB bridge only; NVIDIA GTX 1080 "
        "specifications)"),
    Gpu("gtx1080ti", 61, 0, 0, 3, "GeForce GTX 1080 Ti: PCIe Gen3 card, no NVLink (SLI HB bridge only; NVIDIA GTX "
        "1080 Ti specifications)"),
    Gpu("v100", 70, 2, 6, 3, "V100 SXM2/SXM3: 6 NVLink 2 links, 300 GB/s (NVIDIA Tesla V100 data sheet)",
        hbm_GBps=900.0, memory_source="NVIDIA Tesla V100 data sheet: V100 SXM2 900 GB/s HBM2 (no BF16 tensor cores)"),
    Gpu("t4", 75, 0, 0, 3, "T4: PCIe Gen3 card, no NVLink (NVIDIA T4 data sheet)"),
    Gpu("rtx2080ti", 75, 0, 2, 3, "RTX 2080 Ti: PCIe Gen3 card; a 2-link NVLink 2 bridge is optional, 100 GB/s "
        "(NVIDIA Turing architecture whitepaper)"),
    Gpu("a100", 80, 3, 12, 4, "A100 SXM4: 12 NVLink 3 links, 600 GB/s (NVIDIA A100 data sheet)",
        memory_GiB=80.0, hbm_GBps=2039.0, peak_bf16_TFLOPS=312.0,
        memory_source=_A100.format(mem="80", kind="HBM2e", bw="2,039")),
    Gpu("a800", 80, 3, 8, 4, "A800 SXM4: 8 NVLink 3 links, 400 GB/s (NVIDIA A800 data sheet; the A100's 600 GB/s "
        "cut for export, Reuters via tweakers.net/nieuws/203182)"),
    Gpu("a100-pcie", 80, 0, 12, 4, "A100 PCIe: PCIe Gen4 card; 3 NVLink 3 bridges join 2 cards with 12 links, "
        "600 GB/s (NVIDIA A100 PCIe product brief PB-10137, Table 6; NVIDIA A100 data sheet)"),
    Gpu("a30", 80, 0, 4, 4, "A30: PCIe Gen4 card; an NVLink 3 bridge joins 2 cards, 200 GB/s (NVIDIA A30 data "
        "sheet)"),
    Gpu("a40", 86, 0, 4, 4, "A40: PCIe Gen4 card; the NVLink 3 bridge joins 2 cards with 4 x4 links (NV4), "
        "112.5 GB/s (NVIDIA A40 product brief PB-09976)"),
    Gpu("a10", 86, 0, 0, 4, "A10: PCIe Gen4 card, no NVLink (NVIDIA A10 data sheet)"),
    Gpu("a10g", 86, 0, 0, 4, "A10G (AWS G5): PCIe Gen4 card, no NVLink (AWS EC2 G5 instance specifications)"),
    Gpu("rtx3090", 86, 0, 4, 4, "RTX 3090: PCIe Gen4 card; a 4-link NVLink 3 bridge is optional, 112.5 GB/s "
        "(NVIDIA Ampere GA102 whitepaper: four x4 links of 14.0625 GB/s each way)"),
    Gpu("rtxa6000", 86, 0, 4, 4, "RTX A6000: PCIe Gen4 card; a 2-way NVLink 3 bridge (4 x4 links), 112.5 GB/s "
        "(NVIDIA RTX A6000 data sheet)"),
    Gpu("l4", 89, 0, 0, 4, "L4: PCIe Gen4 card, no NVLink (NVIDIA L4 data sheet)"),
    Gpu("l40", 89, 0, 0, 4, "L40: PCIe Gen4 card, no NVLink (NVIDIA L40 data sheet)"),
    Gpu("l40s", 89, 0, 0, 4, "L40S: PCIe Gen4 card, no NVLink (NVIDIA L40S data sheet)"),
    Gpu("rtx4090", 89, 0, 0, 4, f"GeForce RTX 4090: PCIe Gen4 card, no NVLink; {_NO_P2P_4090}", p2p=False),
    Gpu("h100", 90, 4, 18, 5, "H100 SXM5: 18 NVLink 4 links, 900 GB/s (NVIDIA H100 data sheet)",
        memory_GiB=80.0, hbm_GBps=3350.0, peak_bf16_TFLOPS=989.0,
        memory_source="NVIDIA H100 data sheet, SXM: 80 GB HBM3, 3.35 TB/s, 989 TFLOPS BF16 dense"),
    Gpu("h100-pcie", 90, 0, 12, 5, "H100 PCIe: PCIe Gen5 card; NVLink 4 bridges join 2 cards, 600 GB/s (NVIDIA "
        "H100 PCIe product brief PB-11133)"),
    Gpu("h100-nvl", 90, 0, 12, 5, "H100 NVL: PCIe Gen5 card; NVLink 4 bridges join 2 cards, 600 GB/s (NVIDIA H100 "
        "data sheet, H100 NVL column)"),
    Gpu("h800", 90, 4, 8, 5, "H800 SXM5: 8 NVLink 4 links, 400 GB/s (NVIDIA H800 data sheet; the H100's 900 GB/s "
        "cut for export)", memory_GiB=80.0, hbm_GBps=3350.0, peak_bf16_TFLOPS=989.0,
        memory_source="NVIDIA H800 SXM5: the H100 SXM5 with its NVLink cut for export (80 GB HBM3, 3.35 TB/s, 989 "
        "TFLOPS BF16 dense, as the H100)"),
    Gpu("h20", 90, 4, 18, 5, "HGX H20: 18 NVLink 4 links, 900 GB/s (NVIDIA H20 specifications, as reported by "
        "tweaktown.com/news/95224: 'keeps the 900GB/sec NVLink')"),
    Gpu("h200", 90, 4, 18, 5, "H200 SXM: 18 NVLink 4 links, 900 GB/s (NVIDIA H200 data sheet)",
        memory_GiB=141.0, hbm_GBps=4800.0, peak_bf16_TFLOPS=989.0,
        memory_source="NVIDIA H200 data sheet: 141 GB HBM3e, 4.8 TB/s, 989 TFLOPS BF16 dense "
        "(nvidia.com/en-us/data-center/h200)"),
    Gpu("gh200", 90, 4, 18, 5, "GH200 Grace Hopper: 18 NVLink 4 links, 900 GB/s between GPUs (NVIDIA GH200 data "
        "sheet); the Grace CPU is on NVLink-C2C"),
    Gpu("b200", 100, 5, 18, 5, "B200: 18 NVLink 5 links, 1800 GB/s (NVIDIA DGX B200 data sheet)",
        memory_GiB=180.0, hbm_GBps=8000.0, peak_bf16_TFLOPS=2250.0,
        memory_source="NVIDIA DGX B200 data sheet: 1440 GB for 8 GPUs, 64 TB/s HBM3e (8 TB/s each), 72 PFLOPS FP8 "
        "training (2.25 PFLOPS BF16 dense per GPU) (nvidia.com/en-us/data-center/dgx-b200)"),
    Gpu("gb200", 100, 5, 18, 6, "GB200: 18 NVLink 5 links per GPU, 1800 GB/s (NVIDIA GB200 NVL72 data sheet)",
        hbm_GBps=8000.0, memory_source="NVIDIA GB200 NVL72 data sheet: 8 TB/s HBM3e per Blackwell GPU"),
    Gpu("b300", 103, 5, 18, 6, "B300 (Blackwell Ultra, sm103): 18 NVLink 5 links, 1800 GB/s (NVIDIA HGX B300 / "
        "DGX B300 data sheet); PCIe Gen6 host link"),
    Gpu("gb300", 103, 5, 18, 6, "GB300 (Blackwell Ultra, sm103): 18 NVLink 5 links per GPU, 1800 GB/s (NVIDIA "
        "GB300 NVL72 data sheet)"),
    Gpu("rtx5090", 120, 0, 0, 5, f"GeForce RTX 5090: PCIe Gen5 card, no NVLink; {_NO_P2P_5090}", p2p=False),
)})


def nvlink_gen(gpu: str) -> int:
    """The GPU's NVLink generation: the SXM part's, or its bridge's for a PCIe card (2 Turing, 3 Ampere,
    4 Hopper); 0 when it has no NVLink at all."""
    spec = GPUS[gpu]
    if spec.nvlink_gen:
        return spec.nvlink_gen
    cc = spec.compute_capability
    return 0 if spec.nvlinks == 0 else 4 if cc >= 90 else 3 if cc >= 80 else 2


#: Other memory configurations of a GPU in :data:`GPUS`: the same chip and links, other memory and bandwidth.
VARIANTS = MappingProxyType({v.name: v for v in (
    replace(GPUS["a100"], name="a100-40gb", memory_GiB=40.0, hbm_GBps=1555.0,
            memory_source=_A100.format(mem="40", kind="HBM2", bw="1,555")),
)})


def gpu(name: str) -> Gpu:
    """A GPU's record by name (case ignored), from :data:`GPUS` or :data:`VARIANTS`; an unknown name lists the
    known ones."""
    key = str(name).strip().lower()
    found = GPUS.get(key) or VARIANTS.get(key)
    if found is None:
        raise CommlabError(f"unknown GPU {name!r}; the GPUs are: {', '.join([*GPUS, *VARIANTS])}")
    return found
