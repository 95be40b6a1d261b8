"""NCCL's channel search, simplified: how many channels each algorithm gets and at what speed.

Before it tunes, NCCL searches the topology for rings, trees and NVLS trees (``ncclTopoCompute``,
``src/graph/search.cc``). Each search tries per-channel speeds from a fixed list (``speedArray``, by GPU
generation) and keeps the solution with the most bandwidth in total, ``nChannels x speed``; the tuner then
uses ``nChannels x bwIntra`` (one or two nodes) or ``nChannels x bwInter`` (more) as an algorithm's bus
bandwidth (``tuning.cc:306``). This module replays that search on a :class:`~commlab.tuner.machine.Machine`,
with the capacities a described machine has:

* inside a node every channel of a ring or a chain uses ``speed`` of each GPU's links (NVLink total, or its
  PCIe link; a PCIe path through an Intel root complex costs 6/5 of that, ``topo.h:39``); a tree's chain may
  use ``n/(n-1)`` of it (``search.cc:1146``);
* between nodes every channel uses ``speed`` of one NIC: a NIC of B GB/s holds ``floor(B / speed)`` channels,
  and no channel goes faster than one NIC or the GPU's PCIe link (``maxBw``, ``search.cc:18-28``);
* speeds are tried from the first that fits downwards until one is at most 0.49 of the best found
  (``search.cc:1229``); channels are then doubled at half the speed when the speed is >= 25 GB/s
  (``ncclTopoDupChannels``, ``search.cc:1036-1048``); a ring then tries faster speeds with its channels
  (``search.cc:1261``), a tree raises its intra-node speed up to twice the network's (``search.cc:1270``), an
  NVLS graph its network speed up to twice the intra-node one (``search.cc:1265``);
* trees get the ring's channel count (``init.cc:1184``); NVLS gets one channel per GPU (at most 32) on one
  node, one per GPU with a NIC across nodes.

Without an NVSwitch (a DGX-1's hybrid cube mesh, a 4-GPU HGX board, 2 cards on a bridge) NCCL's search
walks the pairs of GPUs depth first (``search.cc:1074-1300``) and a ring's channel needs ``speed`` on every pair
it crosses. Here a GPU's links are one pool on every layout: the pair-by-pair search changes no shipped or
held-out prediction (the layouts of those runs pool their links, or span nodes), so it is not replayed.

What it leaves out: the order GPUs and NICs are visited in, the pair-by-pair search of a layout without an
NVSwitch, PCIe switch sharing, cross-NIC rings, NVLink paths through a third GPU (NVB).
So its channel counts are the budget NCCL's model plans with on a clean machine, not a measurement.

>>> from commlab.tuner.machine import parse_machine
>>> g = nccl_graphs(parse_machine("gpu=h100,gpus_per_node=8"))
>>> g["Ring"].n_channels, g["Ring"].bw_intra_GBps, g["NVLS"].n_channels, g["NVLS"].bw_intra_GBps
(12, 30.0, 8, 40.0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from commlab.tuner import nccl_constants as K
from commlab.tuner.machine import Machine


@dataclass(frozen=True)
class Graph:
    """One algorithm's channels: ``n_channels`` at ``bw_intra_GBps`` inside a node, ``bw_inter_GBps`` between."""

    algo: str
    n_channels: int
    bw_intra_GBps: float
    bw_inter_GBps: float


def _fits(channels_at, speed: float, n: int) -> bool:
    return channels_at(speed) >= n


def _search(speeds: tuple[float, ...], max_bw: float, total: float, channels_at, min_channels: int
            ) -> tuple[int, float] | None:
    """Pass 1 of ncclTopoCompute: the (channels, speed) with the most bandwidth in total, or None."""
    i = 0
    while i < len(speeds) - 1 and (speeds[i] > max_bw or speeds[i] * min_channels > total):
        i += 1
    best: tuple[int, float] | None = None
    while True:
        k = channels_at(speeds[i])
        if k >= min_channels and (best is None or k * speeds[i] > best[0] * best[1]):
            best = (k, speeds[i])
        if best is not None and best[0] * best[1] >= total:
            return best                                   # search.cc:1166: the links are full
        if i + 1 < len(speeds) and (best is None or speeds[i + 1] / best[1] > K.SPEED_STEP_FLOOR):
            i += 1
            continue
        return best


def _dup(k: int, speed: float, cc: int, max_channels: int) -> tuple[int, float]:
    """ncclTopoDupChannels (search.cc:1036-1048): twice the channels at half the speed, for fast channels."""
    if speed < K.DUP_MIN_SPEED_GBPS or (cc > 80 and speed < 50.0 and k > 4):
        return k, speed
    k2 = min(2 * k, max_channels)
    return k2, speed / math.ceil(k2 / k)


def _raise(speeds: tuple[float, ...], speed: float, ok) -> float:
    """Pass 2: step up the speed list from ``speed`` while ``ok(next speed)`` holds."""
    higher = sorted(s for s in speeds if s > speed)
    for s in higher:
        if not ok(s):
            break
        speed = s
    return speed


def _intra_capacity(m: Machine, factor: float = 1.0):
    """Channels a GPU's links hold at a speed: total / (speed x PCIe overhead)."""
    total = m.intra_total_GBps * factor
    overhead = K.INTEL_P2P_OVERHEAD if (not m.has_nvlink and not m.p2p and m.cpu == "intel") else 1.0
    return lambda s: int(math.floor(total / (s * overhead) + 1e-9))


def _single_node(m: Machine) -> dict[str, Graph]:
    cc, n = m.compute_capability, m.gpus_per_node
    speeds = K.SPEEDS_INTRA[K.speeds_arch(cc)]
    total = m.intra_total_GBps
    ring_cap = lambda s: min(K.MAX_RING_SEARCH_CHANNELS, _intra_capacity(m)(s))   # noqa: E731
    k, s = _search(speeds, total, total, ring_cap, 1) or (1, speeds[-1])
    k, s = _dup(k, s, cc, K.MAX_RING_SEARCH_CHANNELS)
    s = _raise(speeds, s, lambda x: ring_cap(x) >= k)
    graphs = {"Ring": Graph("Ring", k, s, s)}
    tree_cap = _intra_capacity(m, n / (n - 1) if n > 1 else 1.0)
    found = _search(speeds, total, total * n / max(n - 1, 1), lambda x: k if tree_cap(x) >= k else 0, k)
    ts = found[1] if found else s
    ts = _raise(speeds, ts, lambda x: tree_cap(x) >= k and x < 2 * ts + 1e-9 and x <= total)
    graphs["Tree"] = Graph("Tree", k, ts, ts)
    if m.has_nvls and n >= 2:
        heads = min(K.MAX_NVLS_ARITY, n)
        found = _search(speeds, total, total, lambda x: heads if x * heads <= total + 1e-9 else 0, heads)
        if found:                                          # pass 2 raises bwInter up to 2 x bwIntra
            nv_inter = _raise(speeds, found[1], lambda x: x < 2 * found[1] - 1e-9)
            graphs["NVLS"] = Graph("NVLS", heads, found[1], nv_inter)
    return graphs


def _multi_node(m: Machine) -> dict[str, Graph]:
    cc, n = m.compute_capability, m.gpus_per_node
    speeds = K.SPEEDS_INTER[K.speeds_arch(cc)]
    nic = m.nic_GBps
    max_bw = min(nic, m.pcie_GBps)
    total = m.intra_total_GBps
    intra = _intra_capacity(m)
    net = lambda s: m.nics_per_node * int(math.floor(nic / s + 1e-9))                # noqa: E731
    ring_cap = lambda s: min(K.MAX_RING_SEARCH_CHANNELS, net(s), intra(s) if n > 1 else 10**6)  # noqa: E731
    k, s = _search(speeds, max_bw, total, ring_cap, 1) or (1, speeds[-1])
    k, s = _dup(k, s, cc, K.MAX_RING_SEARCH_CHANNELS)
    s = _raise(speeds, s, lambda x: x <= max_bw and ring_cap(x) >= k)
    graphs = {"Ring": Graph("Ring", k, s, s)}
    tree_intra = _intra_capacity(m, n / (n - 1) if n > 1 else 1.0)
    found = _search(speeds, max_bw, total, lambda x: k if min(net(x), tree_intra(x) if n > 1 else 10**6) >= k
                    else 0, k)
    inter = found[1] if found else s
    intra_s = _raise(speeds, inter, lambda x: (n == 1 or tree_intra(x) >= k) and x < 2 * inter + 1e-9)
    graphs["Tree"] = Graph("Tree", k, intra_s, inter)
    if m.has_nvls and n >= 2:
        heads = min(K.MAX_NVLS_ARITY, n, m.nics_per_node)
        found = _search(speeds, max_bw, total, lambda x: heads if min(net(x), intra(x)) >= heads else 0, 1)
        if found:
            nv_s = found[1]
            nv_inter = _raise(speeds, nv_s, lambda x: x <= max_bw and x < 2 * nv_s + 1e-9)
            graphs["NVLSTree"] = Graph("NVLSTree", heads, nv_s, nv_inter)
    return graphs


def nccl_graphs(m: Machine) -> dict[str, Graph]:
    """The channels and speeds NCCL's search would find for each algorithm on ``m`` (Ring, Tree, and NVLS on
    one NVSwitch node or NVLSTree across NVSwitch nodes on sm90 and later)."""
    return _single_node(m) if m.nodes == 1 else _multi_node(m)
