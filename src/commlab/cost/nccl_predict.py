"""The predictive model: the time of a collective from the hardware alone, the way NCCL's tuner reckons it.

For a :class:`~commlab.cost.machine.Machine` and a collective this module builds NCCL's table of latencies (us)
and algorithm bandwidths (GB/s) per (algorithm, protocol), as ``ncclTopoTuneModel`` does
(``src/graph/tuning.cc:243-438``), on the channels :func:`~commlab.cost.nccl_graphs.nccl_graphs` finds; then,
per size, it takes the pair with the least time (``ncclTopoGetAlgoTime``, ``tuning.cc:630-655``)::

    time_us = latency_us + nbytes / (1000 * algbw_GBps)

The pieces, with their lines (constants and sources in :mod:`commlab.cost.nccl_constants`):

* bus bandwidth = channels x per-channel speed (``tuning.cc:306, 324``); Ring LL ``min(llMaxBw, 0.5 x bus)``;
  Ring LL128 ``min(0.92 x bus, channels x perChMaxRingLL128Bw)``; Tree all-reduce ``min(0.92 x bus, channels x
  perChMaxTreeBw)``, then Tree LL ``min(bus / 3.8, llMaxBw)`` and Tree LL128 ``min(bus x 7/9 (one node) or
  120/128, channels x perChMaxTreeLL128Bw)`` (``tuning.cc:327-335``);
* NVLS (the NVSwitch reduces; H100 and later): per channel ``bwIntra x nvlsEfficiency x (ch-1)/ch``, x 2 for
  an all-reduce (it pipelines two operations), ``x (ppn-1)/ppn`` otherwise; NVLSTree across nodes also
  ``min(.., 2 x bwInter on 2 nodes, perChMaxNVLSTreeBw)`` (``tuning.cc:307-323``);
* algorithm bandwidth = bus x ``nRanks / nsteps`` for Ring and NVLS (nsteps = 2(n-1) all-reduce, n-1 all-gather
  and reduce-scatter, n broadcast and reduce), x 1/2 for Tree (``tuning.cc:377-382``);
* latency: base + per hop; a ring's ``nsteps`` hops of which ``2(nodes-1)`` (all-reduce) cross the network,
  each network hop paying at least the post overhead (1 us Intel, 2 AMD, x 3 for Simple) and the latency the
  net plugin reports (twice for Simple); a tree ``2((ppn-1) intra + log2(nodes) inter)``; NVLS one NVLink
  hop (25 us) plus one network hop (``tuning.cc:384-435``);
* enabled: LL128 only over NVLink inside a node (``tuning.cc:518-536``), NVLSTree only across nodes, NVLS
  only on one node without CollNet (``tuning.cc:498-512``);
* per size: the Tree all-reduce correction factors (``tuning.cc:620-642``) and the ring plateau (latency x 1.4
  across nodes, ``tuning.cc:647-650``).

What NCCL's model is, and is not: a ranking made at initialisation, calibrated to pick well, not to time
well. Measured curves sit above it at mid sizes (launch, pipeline fill, fewer channels than the budget;
fixture 07 at 2-32 MiB runs 25-35% slower than NCCL's NVLS line), and its network latency is the plugin's
number. :mod:`commlab.cost.scorecard` holds both against the real logs.

>>> from commlab.cost.machine import parse_machine
>>> h100 = parse_machine("gpu=h100,gpus_per_node=8")
>>> p = predict("all_reduce", [8, 2**20, 2**22, 2**34], h100)
>>> p.pairs()
['Ring/LL', 'Ring/LL', 'NVLS/Simple', 'NVLS/Simple']
>>> [round(float(x), 1) for x in p.busbw_GBps]
[0.0, 65.5, 181.6, 475.8]
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from commlab.collectives import busbw_factor, canonical
from commlab.cost import nccl_constants as K
from commlab.cost.machine import Machine
from commlab.cost.nccl_graphs import Graph, nccl_graphs
from commlab.errors import CommlabError

#: Collectives NCCL's tuner models. nccl-tests' alltoall, scatter, gather and sendrecv are grouped
#: send/recv calls, which NCCL does not tune (no entry in tuning.cc).
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")


def _nsteps(op: str, n: int) -> int:
    """tuning.cc:289-291."""
    return 2 * (n - 1) if op == "all_reduce" else n - 1 if op in ("all_gather", "reduce_scatter") else n


def _log2i(x: int) -> int:
    return int(math.floor(math.log2(x))) if x >= 1 else 0


def _candidates(op: str, graphs: Mapping[str, Graph], m: Machine) -> list[tuple[str, str]]:
    """The (algorithm, protocol) pairs enabled for ``op`` on ``m`` (tuning.cc:293-303, 498-541)."""
    pairs = []
    for algo in K.ALGOS:
        if algo not in graphs:
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
            if proto == "LL128" and not (m.has_nvlink and m.compute_capability >= 70):
                continue                                   # LL128 needs NVLink paths inside the node
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
    return bus * (n / _nsteps(op, n) if algo in ("Ring", "NVLS", "NVLSTree") else 0.5)


def _latency_us(op: str, algo: str, proto: str, m: Machine) -> float:
    """tuning.cc:384-435; the net plugin's latency (Machine.net) is added to every network hop."""
    from commlab.cost.machine import NETS

    n, nodes, ppn = m.n_ranks, m.nodes, m.gpus_per_node
    intra_hw = "nvlink" if m.has_nvlink else "pci"
    lat = K.BASE_LAT_US[(algo, proto)]
    intra = K.HW_LAT_US[(intra_hw, algo, proto)]
    inter = K.HW_LAT_US[("net", "Tree" if ppn == 1 else algo, proto)] + NETS[m.net]
    if proto == "Simple":
        inter += NETS[m.net]
    if algo == "Ring":
        hw = intra_hw if nodes == 1 else "net"
        if op in ("broadcast", "reduce"):
            return lat + K.HW_LAT_US[(hw, "Ring", proto)]
        overhead = 0.0 if nodes == 1 else K.NET_OVERHEAD_US[m.cpu] * (3.0 if proto == "Simple" else 1.0)
        intra = max(intra, overhead)
        inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
        return lat + (_nsteps(op, n) - inter_steps) * intra + inter_steps * inter
    if algo == "Tree":
        return lat + 2 * ((ppn - 1) * intra + _log2i(nodes) * inter)
    if algo == "NVLS":
        return intra + (inter if nodes > 1 else 0.0)
    return lat + intra + 2 * _log2i(nodes) * inter                       # NVLSTree


@dataclass(frozen=True)
class TuningEntry:
    """One cell of NCCL's tuning table: latency (us) and algorithm bandwidth (GB/s)."""

    latency_us: float
    algbw_GBps: float
    busbw_GBps: float


def _realized(g: Graph, m: Machine) -> Graph:
    """The channels as they run: inside one node a ring's or tree's channels share the GPU's links, so the data
    moves at the links' total (NCCL's own per-link figures), even where the search budgeted less
    (2 x 20 GB/s of an A40 bridge's 48; 12 x 30 of an H100's 370.8)."""
    if m.nodes > 1 or g.algo not in ("Ring", "Tree") or not (m.has_nvlink or m.p2p):
        return g                             # across nodes the NICs decide; SHM staging is not the links
    budget = g.n_channels * g.bw_intra_GBps
    if budget >= m.intra_total_GBps:
        return g
    speed = m.intra_total_GBps / g.n_channels
    return Graph(g.algo, g.n_channels, speed, speed)


def nccl_tuning_table(op: str, m: Machine, realized: bool = False) -> dict[tuple[str, str], TuningEntry]:
    """NCCL's table for ``op`` on ``m``: (algorithm, protocol) -> latency and bandwidth, enabled pairs only.
    ``realized=True`` gives the bandwidths the channels reach (:func:`_realized`) instead of NCCL's budget."""
    op = _op(op)
    if m.n_ranks < 2:
        raise CommlabError(f"NCCL's model needs at least 2 ranks; the machine has {m.n_ranks}")
    graphs = nccl_graphs(m)
    table = {}
    for algo, proto in _candidates(op, graphs, m):
        g = _realized(graphs[algo], m) if realized else graphs[algo]
        bus = _bus_bw(op, algo, proto, g, m)
        if bus <= 0:
            continue
        table[(algo, proto)] = TuningEntry(_latency_us(op, algo, proto, m), _alg_bw(op, algo, bus, m.n_ranks), bus)
    return table


def _op(op: str) -> str:
    name = canonical(op)
    if name not in OPS:
        raise CommlabError(f"NCCL's tuner models {', '.join(OPS)}; {name!r} is grouped send/recv in nccl-tests, "
                           f"which NCCL does not tune")
    return name


def _pair_time_us(op: str, algo: str, proto: str, e: TuningEntry, s: np.ndarray, m: Machine,
                  runtime_channels: int) -> np.ndarray:
    """ncclTopoGetAlgoTime (tuning.cc:630-655) over an array of sizes."""
    bw = np.full(s.shape, e.algbw_GBps)
    lat = np.full(s.shape, e.latency_us)
    if algo == "Tree" and op == "all_reduce":
        log_size = np.floor(np.log2(np.maximum(s, 1) / 64.0))
        idx = np.clip(log_size, 0, 22).astype(int)
        corr = np.asarray(K.TREE_CORRECTION[proto])[idx]
        bw = np.where((log_size >= 0) & (log_size < 23), bw * corr, bw)
    if algo == "Ring" and proto == "Simple" and m.nodes > 1 and op == "all_reduce":
        plateau = K.RING_PLATEAU_FACTOR["pre_sm80" if m.compute_capability < 80 else "sm80_up"]
        lat = np.where(s / (runtime_channels * m.n_ranks) >= 64, lat * plateau, lat)
    return lat + s / (1000.0 * bw)


@dataclass(frozen=True)
class Prediction:
    """Per size: NCCL's pick and its time. Arrays follow ``nbytes``."""

    op: str
    machine: Machine
    nbytes: np.ndarray
    time_s: np.ndarray
    """The predicted time of the pair NCCL picks, with the bandwidth its channels reach."""
    algo: np.ndarray
    proto: np.ndarray
    table: Mapping[tuple[str, str], np.ndarray]
    """Every enabled pair's predicted time in us, per size."""
    nccl_time_us: np.ndarray
    """NCCL's own estimate for the pair it picks (its budgeted bandwidth), per size."""

    @property
    def algbw_GBps(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.time_s > 0, self.nbytes / self.time_s / 1e9, 0.0)

    @property
    def busbw_GBps(self) -> np.ndarray:
        return self.algbw_GBps * busbw_factor(self.op, self.machine.n_ranks)

    def pairs(self) -> list[str]:
        """``"Ring/LL"`` per size."""
        return [f"{a}/{p}" for a, p in zip(np.atleast_1d(self.algo), np.atleast_1d(self.proto))]

    def switches(self) -> list[tuple[int, str, str]]:
        """Where NCCL's pick changes along the sizes (sorted first): (first size of the new pair, old, new)."""
        order = np.argsort(np.atleast_1d(self.nbytes), kind="stable")
        sizes, labels = np.atleast_1d(self.nbytes)[order], [self.pairs()[i] for i in order]
        return [(int(sizes[i]), labels[i - 1], labels[i]) for i in range(1, len(labels)) if labels[i] != labels[i - 1]]


def _times(op: str, table, s: np.ndarray, m: Machine) -> tuple[list, np.ndarray]:
    runtime_channels = min(K.MAX_CHANNELS, 2 * nccl_graphs(m)["Ring"].n_channels)    # connect.cc:460
    pairs = list(table)
    return pairs, np.stack([_pair_time_us(op, a, p, table[(a, p)], s, m, runtime_channels) for a, p in pairs])


def predict(op: str, nbytes, m: Machine) -> Prediction:
    """NCCL's pick per size and its predicted time (s) for ``op`` on ``m``; ``nbytes`` is nccl-tests' ``size``
    column (all-gather / reduce-scatter: the whole buffer) and may be an array.

    NCCL picks with its own table (the first least time in its loop order, enqueue.cc topoGetAlgoInfo); the
    time is that pair's with the bandwidth its channels reach (:func:`_realized`)."""
    op = _op(op)
    s = np.asarray(nbytes, dtype=float)
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise CommlabError(f"nbytes must be finite and >= 0, got {nbytes!r}")
    pairs, model = _times(op, nccl_tuning_table(op, m), s, m)
    _, real = _times(op, nccl_tuning_table(op, m, realized=True), s, m)
    best = np.argmin(model, axis=0)
    algo = np.array([a for a, _ in pairs])[best]
    proto = np.array([p for _, p in pairs])[best]
    time_us = np.take_along_axis(real, best[None], axis=0)[0]
    nccl_us = np.take_along_axis(model, best[None], axis=0)[0]
    return Prediction(op, m, s, time_us * 1e-6, algo, proto, MappingProxyType(dict(zip(pairs, real))), nccl_us)
