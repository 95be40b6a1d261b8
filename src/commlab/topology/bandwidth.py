"""How fast one hop between two GPUs can go, from its relation and the GPU model (chapter 01).

The rule, figures from :mod:`commlab.hardware`:

* ``NV#``: # links times one link's bandwidth per direction. The NVLink generation comes from the GPU name:
  V100 -> NVLink 2, A100/A800 -> NVLink 3, H100/H200/H800/H20/GH200 -> NVLink 4, B100/B200/GB200 -> NVLink 5
  (NVIDIA's architecture whitepapers: 50 GB/s per link both directions for NVLink 2-4, 100 for NVLink 5). An
  NVSwitch box prints NV18 for every pair of H100s: 18 x 25 = 450 GB/s, the GPU's whole NVLink bandwidth.
  Other GPUs with NVLink bridges (A40, RTX 3090, ...) run their links at other rates: unknown here.
* anything else goes over PCIe: the slot's per-direction bandwidth for the generation NVML reports (or an
  example states), scaled by lanes/16 when the slot is narrower. PHB, NODE and SYS also cross the CPU; a
  pair without P2P is staged through host memory and can fall far below this roof (shipped nccl-tests logs 05
  and 06: 1.4 and 3.9 GB/s busbw on PCIe 4 A40s with P2P off).

A ring all-reduce moves the same bytes over every hop at once, so its busbw is bounded by the slowest hop
(nccl-tests doc/PERFORMANCE.md defines busbw so that it compares with one link's bandwidth).

>>> nvlink_generation("NVIDIA H100 80GB HBM3"), nvlink_generation("NVIDIA A100-SXM4-80GB"), nvlink_generation("A40")
('nvlink4', 'nvlink3', None)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from commlab.hardware import link
from commlab.topology.model import Topology, nvlink_count

_NVLINK_BY_MODEL = (("V100", "nvlink2"), ("A100", "nvlink3"), ("A800", "nvlink3"), ("H100", "nvlink4"),
                    ("H200", "nvlink4"), ("GH200", "nvlink4"), ("H800", "nvlink4"), ("H20", "nvlink4"),
                    ("B100", "nvlink5"), ("B200", "nvlink5"), ("GB200", "nvlink5"))


@dataclass(frozen=True)
class HopBandwidth:
    """One hop's bandwidth per direction and how it was worked out."""

    relation: str
    """The matrix cell: "NV18", "PIX", "SYS", ..."""
    unidir_GBps: float | None
    """Per direction, 1e9 B/s; None where the rule has no figure (unknown NVLink or PCIe generation)."""
    rule: str
    """The computation in words: "NV18: 18 x NVLink 4 link at 25 GB/s per direction"."""


def nvlink_generation(gpu_name: str | None) -> str | None:
    """The hardware catalogue's NVLink name for a GPU model, or None when the name does not say."""
    for model, generation in _NVLINK_BY_MODEL:
        if gpu_name and re.search(rf"(?<![A-Za-z0-9]){model}(?![0-9])", gpu_name):
            return generation
    return None


def through_nvswitch(topo: Topology) -> bool:
    """True when every pair shows NVLink but a GPU has too few links for direct ones: the links go through
    NVSwitches (8x H100: NV18 to 7 peers would need 126 links; an H100 has 18). False when the model is unknown.

    >>> from commlab.topology.examples import example
    >>> through_nvswitch(example("h100-sxm-8")), through_nvswitch(example("a40-pcie-8"))
    (True, False)
    """
    n = topo.n_gpus
    counts = [nvlink_count(topo.relation(i, j)) for i in range(n) for j in range(n) if i != j]
    generation = nvlink_generation(topo.gpus[0].name) if n else None
    if n < 3 or not all(counts) or generation is None:
        return False
    per_gpu = link(generation).links_per_gpu
    return per_gpu is not None and min(counts) * (n - 1) > per_gpu


def hop_bandwidth(topo: Topology, i: int, j: int) -> HopBandwidth:
    """Per-direction bandwidth between GPU i and GPU j (see the module's rule)."""
    relation = topo.relation(i, j)
    count = nvlink_count(relation)
    if count:
        return _nvlink_hop(relation, count, topo.gpus[i].name)
    return _pcie_hop(relation, topo, i, j)


#: NVLink generations in order, for a GPU the source does not name: the oldest one with enough links per GPU.
_GENERATIONS = ("nvlink2", "nvlink3", "nvlink4", "nvlink5")


def generation_from_count(count: int) -> str | None:
    """The oldest NVLink generation whose GPUs have at least ``count`` links (NV18: NVLink 4, the H100's
    18), or None when none has that many.

    >>> generation_from_count(18), generation_from_count(12), generation_from_count(6), generation_from_count(40)
    ('nvlink4', 'nvlink3', 'nvlink2', None)
    """
    for generation in _GENERATIONS:
        per_gpu = link(generation).links_per_gpu
        if per_gpu is not None and per_gpu >= count:
            return generation
    return None


def _nvlink_hop(relation: str, count: int, name: str | None) -> HopBandwidth:
    generation = nvlink_generation(name)
    guessed = generation is None
    if guessed:
        generation = generation_from_count(count)
    nvlink = link(generation) if generation is not None else None
    if nvlink is None or nvlink.per_link_bidir_GBps is None:
        return HopBandwidth(relation, None, f"{relation}: NVLink generation unknown for {name or 'an unnamed GPU'}")
    per_link = nvlink.per_link_bidir_GBps / 2
    rule = f"{relation}: {count} x {nvlink.title} link at {per_link:g} GB/s per direction"
    if guessed:
        faster = [link(g) for g in _GENERATIONS[_GENERATIONS.index(generation) + 1:]
                  if (link(g).per_link_bidir_GBps or 0) > nvlink.per_link_bidir_GBps]
        rule += (f"; the GPU is not named, and {nvlink.title} is the oldest generation with {count} links per GPU"
                 + (f", so this is a floor: {faster[0].title} links are "
                    f"{(faster[0].per_link_bidir_GBps or 0) / nvlink.per_link_bidir_GBps:g} times as fast"
                    if faster else ""))
    return HopBandwidth(relation, count * per_link, rule)


def _pcie_hop(relation: str, topo: Topology, i: int, j: int) -> HopBandwidth:
    pair = (topo.gpus[i], topo.gpus[j])
    gens = [gen for g in pair if (gen := g.pcie_gen_max or g.pcie_gen_current) in (3, 4, 5, 6)]
    widths = [g.pcie_width_max for g in pair if g.pcie_width_max]
    if len(gens) < len(pair):
        return HopBandwidth(relation, None, f"{relation}: PCIe generation unknown")
    slot = link(f"pcie{min(gens)}")
    lanes = min(widths + [16])
    via_cpu = ", through the CPU" if relation in ("PHB", "NODE", "SYS", "SOC") else ""
    return HopBandwidth(relation, slot.unidir_GBps * lanes / 16,
                        f"{relation}: PCIe {min(gens)}.0 x{lanes} at {slot.unidir_GBps * lanes / 16:g} GB/s per "
                        f"direction at best{via_cpu}")
