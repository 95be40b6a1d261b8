"""The plain-language advice of :func:`commlab.topology.advice`, one short paragraph per finding.

Every number in a sentence is computed from the topology and the hardware catalogue; nothing is invented.
Why TP stays on NVLink and DP/PP may cross slower links is chapter 09's subject.
"""
from __future__ import annotations

from commlab.hardware import link
from commlab.topology.bandwidth import HopBandwidth, nvlink_generation, through_nvswitch
from commlab.topology.model import Topology, nvlink_count


def sentences(topo: Topology, groups, order, tp: int, slowest: HopBandwidth | None,
              bw_GBps: float | None) -> tuple[str, ...]:
    """Advice on TP, PP and DP placement, the ring, NUMA pinning and NICs."""
    if topo.empty:
        return (f"No GPUs to advise on: {topo.reason or 'the topology is empty'}. "
                "Try `commlab topo --example h100-sxm-8` to read a real machine's topology.",)
    if topo.n_gpus == 1:
        return ("One GPU: nothing to communicate inside this machine. Tensor, pipeline and data "
                "parallelism all start at the network here.",)
    out = [_placement(topo, groups, tp), _ring(order, slowest, bw_GBps)]
    out += [s for s in (_switch(topo), _through_cpu(slowest, bw_GBps), _p2p(topo), _numa(topo), _nics(topo)) if s]
    return tuple(out)


def _placement(topo: Topology, groups, tp: int) -> str:
    n = topo.n_gpus
    if tp == n:
        return (f"All {n} GPUs are joined by NVLink ({topo.relation(0, 1)} between GPU0 and GPU1): a "
                f"tensor-parallel group of up to {n} fits here. Keep TP inside the machine and put pipeline "
                "stages and data-parallel replicas across machines, where traffic is lighter.")
    if tp > 1:
        listed = ", ".join("{" + ", ".join(map(str, g)) + "}" for g in groups if len(g) > 1)
        return (f"NVLink joins only groups of up to {tp} GPUs: {listed}. Keep each tensor-parallel group inside "
                f"one of them (TP <= {tp}); put pipeline stages or data-parallel replicas across the groups: PP "
                "sends activations once per micro-batch and DP all-reduces gradients once per step, overlapped "
                "with the backward pass.")
    closest = max(((i, j) for i in range(n) for j in range(i + 1, n)), key=lambda p: _pcie_rank(topo, p))
    return (f"No NVLink: every pair goes over PCIe, the closest being GPU{closest[0]}-GPU{closest[1]} "
            f"({topo.relation(*closest)}). Tensor parallelism all-reduces activations in every layer, so keep "
            "TP at 1 here (2 at most, on the closest pair) and use data or pipeline parallelism across GPUs.")


def _pcie_rank(topo: Topology, pair: tuple[int, int]) -> int:
    order = ("SOC", "SYS", "NODE", "PHB", "PXB", "PIX")
    relation = topo.relation(*pair)
    return order.index(relation) if relation in order else -1


def _ring(order, slowest: HopBandwidth | None, bw_GBps: float | None) -> str:
    ring = " -> ".join(map(str, order + order[:1]))
    if slowest is None:
        return "Fewer than two GPUs: no ring."
    reach = (f"a ring all-reduce's busbw is at most about {bw_GBps:.0f} GB/s ({slowest.rule})" if bw_GBps is not None
             else f"its busbw cannot be bounded here ({slowest.rule})")
    return f"Ring {ring}: every hop is {slowest.relation} or better; {reach}."


def _switch(topo: Topology) -> str:
    generation = nvlink_generation(topo.gpus[0].name) if topo.n_gpus else None
    if not through_nvswitch(topo) or generation is None:
        return ""
    count, peers = nvlink_count(topo.relation(0, 1)), topo.n_gpus - 1
    text = (f"Every pair shows {topo.relation(0, 1)}: direct links to {peers} peers would need {count * peers}, "
            f"but a GPU has {link(generation).links_per_gpu}. The links go through NVSwitches, so any ring order "
            "runs at the same hop speed.")
    if generation in ("nvlink4", "nvlink5"):
        text += (" These NVSwitches can also reduce in the switch (NVLS), which lets an all-reduce pass the ring "
                 "bound (about 480 GB/s busbw on 8x H100, nccl-tests shipped log 07).")
    return text


def _through_cpu(slowest: HopBandwidth | None, bw_GBps: float | None = None) -> str:
    """What a hop through the CPU costs: a bound stated above holds only with P2P; without a stated bound
    (the PCIe generation unknown), the same P2P condition decides how far below PCIe's rate the ring stays."""
    if slowest is None or slowest.relation not in ("PHB", "NODE", "SYS", "SOC"):
        return ""
    which = ("That bound holds only with" if bw_GBps is not None
             else "Whatever the PCIe generation, a ring through it reaches PCIe's rate only with")
    return (f"The ring's slowest hop ({slowest.relation}) crosses the CPU. {which} PCIe P2P between the "
            "GPUs (`nvidia-smi topo -p2p r`); without it NCCL stages through host memory and reaches a fraction "
            "of that rate (1.4 GB/s busbw over SYS on 4 A40s, nccl-tests shipped log 05).")


def _p2p(topo: Topology) -> str:
    if topo.p2p is None:
        return ""
    n = topo.n_gpus
    bad = [f"GPU{i}-GPU{j} ({topo.p2p[i][j]})" for i in range(n) for j in range(i + 1, n) if topo.p2p[i][j] != "OK"]
    if not bad:
        return "PCIe P2P reads work between every pair of GPUs."
    return f"No P2P for {', '.join(bad)}: NCCL moves that traffic through host memory."


def _numa(topo: Topology) -> str:
    nodes: dict[int, list[int]] = {}
    for gpu in topo.gpus:
        if gpu.numa_node is not None:
            nodes.setdefault(gpu.numa_node, []).append(gpu.index)
    if len(nodes) < 2:
        return ""
    where = "; ".join(f"NUMA node {node}: GPU {', '.join(map(str, gpus))}" for node, gpus in sorted(nodes.items()))
    return (f"The GPUs sit on {len(nodes)} NUMA nodes ({where}). Pin each rank's CPU threads and data-loader "
            "workers to its GPU's CPU affinity, and keep a PCIe-only ring from crossing sockets more than needed.")


def _nics(topo: Topology) -> str:
    near = []
    for gpu in topo.gpus:
        close = [nic for nic in topo.nics if nic.relations[gpu.index] in ("PIX", "PXB")]
        if close:
            near.append(f"GPU{gpu.index}: {close[0].name} ({close[0].relations[gpu.index]})")
    if not near:
        return ""
    return ("Each GPU's nearest NIC, for traffic leaving the machine (NCCL picks it from this same topology): "
            + ", ".join(near) + ".")
