"""NCCL's tuning table for a described machine: per (algorithm, protocol), a latency and a bandwidth.

This is ``ncclTopoTuneModel`` (NVIDIA/nccl ``src/graph/tuning.cc:243-438``) on the channels
:func:`~commlab.tuner.graphs.nccl_graphs` finds, as NCCL computes it to *choose*; and, with
``realized=True``, the same table as the machine *runs* it:

* inside one node the channels share the GPU's links, so the data moves at the links' total (NCCL's per-link
  figures), even where the search budgeted less;
* with CUDA P2P off the GPUs talk through host memory (NCCL's SHM transport): the rate is
  :func:`commlab.tuner.shm.shm_rate_GBps`, not the PCIe budget NCCL plans with;
* across nodes a network hop costs what the transport really costs (:mod:`commlab.tuner.networks`), not the
  latency its plugin reports to steer NCCL's choice.

The constants and their lines are in :mod:`commlab.tuner.nccl_constants`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from commlab.tuner import nccl_constants as K
from commlab.tuner.machine import Machine
from commlab.tuner.graphs import Graph, nccl_graphs
from commlab.tuner.networks import NET_TYPES
from commlab.tuner.settings import log2i, ring_steps, tuned_op
from commlab.tuner.shm import shm_rate_GBps
from commlab.errors import CommlabError

def enabled_pairs(op: str, graphs: Mapping[str, Graph], m: Machine, nvls: bool = True,
                  ll128_allowed: Callable[[int], bool] | None = None) -> list[tuple[str, str]]:
    """The (algorithm, protocol) pairs NCCL enables for ``op`` on ``m`` (tuning.cc:293-303, 498-541), within what
    the machine's ``algo`` / ``proto`` (NCCL_ALGO / NCCL_PROTO) allow (tuning.cc:452-460, 539-540). A given protocol
    list replaces NCCL's default LL128 rule and the transport's documented NCCL_PROTO (tuning.cc:518).

    One filter for every generation of the tuner (:mod:`commlab.tuner.replay`): ``nvls`` whether the generation
    has NVLS at all, ``ll128_allowed`` its LL128 rule by compute capability (default: today's, any GPU from sm70
    with NVLink paths inside the node)."""
    allowed = ll128_allowed or (lambda cc: cc >= 70)
    algos, protos = m.enabled(op)
    pairs = []
    for algo in K.ALGOS:
        if algo not in graphs or (algos is not None and algo not in algos):
            continue
        if algo in ("NVLS", "NVLSTree") and not nvls:
            continue
        if op in ("broadcast", "reduce") and algo != "Ring":
            continue
        if op in ("all_gather", "reduce_scatter") and algo not in ("Ring", "NVLS"):
            continue
        if algo == "NVLSTree" and m.nodes == 1 or algo == "NVLS" and m.nodes > 1:
            continue
        for proto in K.PROTOS:
            if algo in ("NVLS", "NVLSTree") and proto != "Simple":
                continue
            if protos is not None:
                if proto in protos:
                    pairs.append((algo, proto))
                continue
            if proto == "LL128" and not (m.has_nvlink and allowed(m.compute_capability)):
                continue                                   # LL128 needs NVLink paths inside the node
            if m.nodes > 1 and proto not in NET_TYPES[m.net].protocols:
                continue                                   # the transport's documented NCCL_PROTO
            pairs.append((algo, proto))
    return pairs


def _bus_bw(op: str, algo: str, proto: str, g: Graph, m: Machine) -> float:
    """Bus bandwidth of one pair, GB/s (tuning.cc:306-337)."""
    arch, ni = K.arch_of(m.compute_capability), K.nodes_index(m.nodes)
    bw = g.bw_intra_GBps if m.nodes <= 2 else g.bw_inter_GBps
    if algo in ("NVLS", "NVLSTree"):
        intra = g.bw_intra_GBps * K.NVLS_EFFICIENCY[arch] * (g.n_channels - 1) / g.n_channels
        ppn = m.gpus_per_node
        intra *= 2.0 if op == "all_reduce" else (ppn - 1) / ppn
        inter = g.bw_inter_GBps * (2.0 if (m.nodes <= 2 and algo == "NVLSTree") else 1.0)
        cap = K.NVLS_TREE_MAX_BW_PER_CH_GBPS[(arch, ni)] if algo == "NVLSTree" else math.inf
        bw = min(intra, inter, cap)
    bus = g.n_channels * bw
    ll_row = arch if m.nodes == 1 else K.LL_MAX_BW_CPU_ROW[m.cpu]
    ll_max = K.LL_MAX_BW_GBPS[(ll_row, ni)]
    if algo == "Ring" and proto == "LL":
        bus = min(ll_max, bus * K.LL_BW_FACTOR)
    if algo == "Ring" and proto == "LL128":
        bus = min(bus * K.LL128_BW_FACTOR, g.n_channels * K.RING_LL128_MAX_BW_PER_CH_GBPS[(arch, ni)])
    if algo == "Tree" and op == "all_reduce":
        bus = min(bus * K.TREE_ALL_REDUCE_FACTOR, g.n_channels * K.TREE_MAX_BW_PER_CH_GBPS[(arch, ni)])
    if algo == "Tree" and proto == "LL":
        bus = min(bus * K.TREE_LL_FACTOR, ll_max)
    if algo == "Tree" and proto == "LL128":
        factor = K.TREE_LL128_FACTOR_ONE_NODE if m.nodes == 1 else K.TREE_LL128_FACTOR_NODES
        bus = min(bus * factor, g.n_channels * K.TREE_LL128_MAX_BW_PER_CH_GBPS[(arch, ni)])
    return bus


def _alg_bw(op: str, algo: str, bus: float, n: int) -> float:
    """Bus to algorithm bandwidth (tuning.cc:377-382)."""
    if algo != "Ring" and op in ("all_gather", "reduce_scatter"):
        return bus
    return bus * (n / ring_steps(op, n) if algo in ("Ring", "NVLS", "NVLSTree") else 0.5)


def net_hop_us(proto: str, m: Machine, real: bool) -> tuple[float, float]:
    """(latency added to every network hop, and added again for Simple), us: what the plugin reports (NCCL's
    view, tuning.cc:389-391) or, ``real``, what the hop costs (:mod:`commlab.tuner.networks`)."""
    net = NET_TYPES[m.net]
    if not real:
        return net.reported_latency_us, net.reported_latency_us
    if m.net_latency_us is not None:                      # the description's own figure; Simple's extra stays
        return m.net_latency_us, net.simple_extra_us
    return net.real_hop_us, net.real_simple_extra_us()


def net_step_us(proto: str, algo: str, m: Machine, real: bool = False) -> float:
    """What NCCL charges one network step of ``algo``/``proto``, us (``interLat``, tuning.cc:387-391): its own
    ``hwLat[NET]`` (the Tree's row with one GPU a node) plus the net plugin's latency, twice for Simple (or,
    ``real``, what the step really costs: the hop's cost, :mod:`commlab.tuner.networks`, and a ring's
    :func:`ring_step_extra_us`)."""
    hop, simple_extra = net_hop_us(proto, m, real)
    inter = K.HW_LAT_US[("net", "Tree" if m.gpus_per_node == 1 else algo, proto)] + hop
    return (inter + simple_extra if proto == "Simple" else inter) + (ring_step_extra_us(m) if real and algo == "Ring"
                                                                     else 0.0)


def ring_step_extra_us(m: Machine) -> float:
    """What a ring's network step really costs beyond NCCL's figure on ``m``'s network, us
    (:attr:`commlab.tuner.networks.NetType.ring_step_extra_us`); 0 on one node, and where the description (or a
    calibration) gives the hop's cost itself (``net_latency_us``: then that is the whole of it)."""
    if m.nodes == 1 or m.net_latency_us is not None:
        return 0.0
    return NET_TYPES[m.net].ring_step_extra_us


def net_steps(op: str, algo: str, m: Machine) -> int:
    """How many network steps NCCL's latency charges one ``op`` with ``algo`` on ``m`` (tuning.cc:411-428): a ring's
    ``nInterSteps``, ``2 (nNodes - 1)`` for all-reduce and ``nNodes - 1`` for all-gather and reduce-scatter (one
    for broadcast and reduce, a pipeline); a tree's ``2 log2(nNodes)``; NVLS one; 0 on one node."""
    nodes = m.nodes
    if nodes == 1:
        return 0
    if algo == "Ring":
        if op in ("broadcast", "reduce"):
            return 1
        return 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
    if algo == "NVLS":
        return 1
    return 2 * log2i(nodes)                                               # Tree, NVLSTree


def _latency_us(op: str, algo: str, proto: str, m: Machine, real: bool = False) -> float:
    """tuning.cc:384-435; a network hop adds the net plugin's latency (reported, or ``real``: its true cost)."""
    n, nodes, ppn = m.n_ranks, m.nodes, m.gpus_per_node
    intra_hw = "nvlink" if m.has_nvlink else "pci"
    lat = K.BASE_LAT_US[(algo, proto)]
    intra = K.HW_LAT_US[(intra_hw, algo, proto)]
    inter = net_step_us(proto, algo, m, real)
    if algo == "Ring":
        hw = intra_hw if nodes == 1 else "net"
        if op in ("broadcast", "reduce"):
            return lat + K.HW_LAT_US[(hw, "Ring", proto)]
        overhead = 0.0 if nodes == 1 else K.NET_OVERHEAD_US[m.cpu] * (3.0 if proto == "Simple" else 1.0)
        intra = max(intra, overhead)
        inter_steps = net_steps(op, algo, m)
        return lat + (ring_steps(op, n) - inter_steps) * intra + inter_steps * inter
    if algo == "Tree":
        return lat + 2 * ((ppn - 1) * intra + log2i(nodes) * inter)
    if algo == "NVLS":
        return intra + (inter if nodes > 1 else 0.0)
    return lat + intra + 2 * log2i(nodes) * inter                       # NVLSTree


@dataclass(frozen=True)
class TuningEntry:
    """One cell of NCCL's tuning table: latency (us) and algorithm bandwidth (GB/s)."""

    latency_us: float
    algbw_GBps: float
    busbw_GBps: float


def realized_graph(g: Graph, m: Machine, op: str) -> Graph:
    """The channels as they run. Inside one node a ring's or tree's channels share the GPU's links, so the data
    moves at the links' total (NCCL's own per-link figures), even where the search budgeted less (2 x 20 GB/s
    of an A40 bridge's 48; 12 x 30 of an H100's 370.8). With P2P off the bytes go through host memory at
    :func:`~commlab.tuner.shm.shm_rate_GBps`. Across nodes the NICs decide, as budgeted."""
    if m.nodes > 1 or g.algo not in ("Ring", "Tree"):
        return g
    if not (m.has_nvlink or m.p2p):
        speed = shm_rate_GBps(op, m) / g.n_channels
        return Graph(g.algo, g.n_channels, speed, speed)
    budget = g.n_channels * g.bw_intra_GBps
    if budget >= m.intra_total_GBps:
        return g
    speed = m.intra_total_GBps / g.n_channels
    return Graph(g.algo, g.n_channels, speed, speed)


def nccl_tuning_table(op: str, m: Machine, realized: bool = False) -> dict[tuple[str, str], TuningEntry]:
    """NCCL's table for ``op`` on ``m``: (algorithm, protocol) -> latency and bandwidth, enabled pairs only.
    ``realized=True`` gives the bandwidths the channels reach (:func:`realized_graph`) and the latencies the network
    really has (:mod:`commlab.tuner.networks`) instead of NCCL's budget and its plugin's report."""
    op = tuned_op(op)
    if m.n_ranks < 2:
        raise CommlabError(f"NCCL's model needs at least 2 ranks; the machine has {m.n_ranks}")
    graphs = nccl_graphs(m)
    table = {}
    pairs = enabled_pairs(op, graphs, m)
    if not pairs:
        raise _nothing_enabled(op, graphs, m)
    for algo, proto in pairs:
        g = realized_graph(graphs[algo], m, op) if realized else graphs[algo]
        bus = _bus_bw(op, algo, proto, g, m)
        if bus <= 0:
            continue
        latency = _latency_us(op, algo, proto, m, realized)
        table[(algo, proto)] = TuningEntry(latency, _alg_bw(op, algo, bus, m.n_ranks), bus)
    return table


def nvls_tuning(m: Machine, chunking: Mapping | None = None) -> tuple[int, int, int]:
    """(nvlsChannels, chunk bytes, NVLSTree's largest chunk) as ``ncclNvlsTuning`` sets them (nvls.cc:202-240),
    with the sm100 multi-node table of ``ncclNvlsTreeSm100Tuning`` (nvls.cc:163-199). The NIC is taken to sit
    on the GPU's PCIe switch (PXB or closer) when the node has a NIC per GPU. ``chunking``: an older generation's
    chunk sizes (:attr:`commlab.tuner.generation.Generation.chunking`): its NVLS chunk and 4-node NVLSTree cap, on
    sm90's 16 channels (the sm100 table is 2.27's on).

    >>> from commlab.tuner.machine import parse_machine
    >>> nvls_tuning(parse_machine("gpu=h100,gpus_per_node=8,nodes=4,nics_per_node=8,nic_Gbps=400"))
    (16, 131072, 65536)
    """
    sm100, nodes, ppn = m.compute_capability >= 100, m.nodes, m.gpus_per_node
    if chunking is not None:
        chunk = int(chunking["nvls_chunk_bytes"])
        cap = int(chunking["nvls_tree_max_chunk_4_nodes_bytes"])
        return K.NVLS_NCHANNELS["sm90"], chunk, cap if nodes >= 4 else chunk
    n_ch = (K.NVLS_NCHANNELS["sm100_nodes"] if nodes > 1 else K.NVLS_NCHANNELS["sm100_one_node"]) if sm100 \
        else K.NVLS_NCHANNELS["sm90"]
    chunk, tree_max = K.NVLS_CHUNK_BYTES, 0
    if sm100 and nodes > 1:
        nic, pxb, kib = m.nic_GBps, m.nics_per_node >= ppn, 1024
        if nodes == 2 and nic >= 48.0:
            n_ch, tree_max = 32, 128 * kib
            if ppn <= 4:
                chunk = tree_max = 256 * kib
            elif ppn >= 16 or (ppn <= 8 and pxb and nic < 96.0):
                tree_max = 64 * kib
        elif nic >= 96.0:
            n_ch, chunk, tree_max = (24, 256 * kib, 256 * kib) if ppn <= 8 else (32, chunk, 128 * kib if ppn < 32
                                                                                  else 64 * kib)
        elif nic >= 48.0:
            n_ch, tree_max = 24, 64 * kib if pxb else 128 * kib
    if tree_max == 0:
        tree_max = K.NVLS_TREE_MAX_CHUNK_BYTES_4_NODES if nodes >= 4 else chunk
    return n_ch, chunk, tree_max


def nvls_chunk_bytes(algo: str, nbytes: float, m: Machine, n_heads: int, chunking: Mapping | None = None) -> int:
    """The chunk ``calcCollChunking`` gives an NVLS or NVLSTree all-reduce of ``nbytes`` (enqueue.cc:2258-2285):
    the largest chunk, halved while the size is under a multiple of ``nvlsChannels x nHeads`` chunks; with
    ``chunking``, by an older generation's rules (:func:`nvls_tuning`)."""
    n_ch, chunk, tree_max = nvls_tuning(m, chunking)
    concurrent = n_ch * n_heads
    rules: tuple[tuple[int, int, int], ...] = K.NVLS_CHUNK_RULES if chunking is None else chunking["nvls_rules"]
    if algo == "NVLSTree":
        chunk = min(chunk, tree_max)
        rules = K.NVLS_TREE_CHUNK_RULES if chunking is None else chunking["nvls_tree_rules"]
    for times, above, to in rules:
        if nbytes < times * concurrent * chunk and chunk > above:
            chunk = to
    return chunk


def tree_chunk_bytes(proto: str, nbytes: float, m: Machine, n_channels: int) -> int:
    """The chunk ``calcCollChunking`` gives each channel of a Tree all-reduce of ``nbytes`` (enqueue.cc:2222-2232,
    2286-2294, 2321): a step's data (chunkSteps = 1), for LL128 halved while the channel's share is under
    ``nstepsLL128 x 64 / ppn``, then ``x 16 / ppn`` chunks; whole grains; at most the channel's share.

    >>> from commlab.tuner.machine import parse_machine
    >>> m = parse_machine("gpu=h100,gpus_per_node=8,nodes=4,nics_per_node=8,nic_Gbps=400")
    >>> [tree_chunk_bytes("LL128", x, m, 16) for x in (2**20, 2**23, 2**26)]
    [17280, 34560, 71040]
    """
    share = int(nbytes) // n_channels
    if proto == "LL128":
        ppn = m.gpus_per_node
        steps = 1 + log2i(m.nodes) + 0.1 * ppn
        chunk = K.TREE_LL128_MAX_CHUNK_BYTES
        for times, floor in K.TREE_LL128_CHUNK_RULES:
            while share // chunk < steps * times / ppn and chunk > floor:
                chunk //= 2
    else:
        step = K.BUFF_BYTES[proto] // K.NCCL_STEPS
        chunk = step // 2 if proto == "LL" else step
    chunk = chunk // K.GRAIN_BYTES[proto] * K.GRAIN_BYTES[proto]
    return min(chunk, share)


def _nothing_enabled(op: str, graphs: Mapping[str, Graph], m: Machine) -> CommlabError:
    """NCCL fails a call its NCCL_ALGO / NCCL_PROTO leave nothing for (enqueue.cc:2063, ncclInvalidUsage)."""
    free = replace(m, algo=None, proto=None)
    could = ", ".join(f"{a}/{p}" for a, p in enabled_pairs(op, graphs, free))
    return CommlabError(f"algo={m.algo or '(any)'} and proto={m.proto or '(any)'} leave NCCL no algorithm/protocol "
                        f"for {op} on {free.describe()} (it could use {could}); NCCL fails such a call: 'No "
                        f"algorithm/protocol available' (enqueue.cc:2063)")
