"""The replay of one generation of NCCL's tuner: ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` with the
generation's numbers and rules (:mod:`commlab.tuner.generation`), on the channels of
:func:`commlab.tuner.graphs.nccl_graphs` (today's search: the search changed too, and that is not replayed).

NCCL's cost model has changed under the same names many times: the LL protocol's bus bandwidth was a quarter of
the links before 2.18 and is a half now; Tree/Simple paid 28 us a hop (NCCL's own 256 kB chunk time) and pays
4 now; LL128 was on only for sm70 and sm80 exactly, then sm90, now any GPU from sm70; the ring's "plateau" penalty
was x 1.9 from ``nRanks / 16 x 64 KiB`` and is x 1.4 (sm80 on) from 64 bytes a channel a rank. A prediction for a
run of NCCL 2.8 made with today's table picks and times what 2.8 never did.

As for the current model (:mod:`commlab.tuner.predict`), NCCL picks with its own estimate and the time is the
pick's as the machine runs it: inside a node the channels move data at the links' total (or through host memory
with P2P off), and a network hop costs what the transport really costs. An NVLS or NVLSTree pick (2.18 on) runs on
the hardware the current model describes: the NVSwitch reduces at its measured share of the links
(``nvlsEfficiency``, which NCCL's line before 2.24 leaves out) and each (channel, head) pipe fills for two chunk
times, the chunk sized by the generation's own ``calcCollChunking`` (:func:`nvls_pick_us`). The current
generation is the predictive model itself: :func:`replay` hands it to :func:`commlab.tuner.predict.predict`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from commlab.errors import CommlabError
from commlab.tuner import nccl_constants as K
from commlab.tuner.generation import Generation
from commlab.tuner.graphs import Graph, nccl_graphs
from commlab.tuner.launch import LaunchShape
from commlab.tuner.machine import Machine
from commlab.tuner.predict import Prediction, pick, predict, realized_pair_us
from commlab.tuner.settings import TUNED_OPS, log2i, ring_steps
from commlab.tuner.table import enabled_pairs, net_hop_us, nccl_tuning_table, realized_graph, ring_step_extra_us

#: a Tree all-reduce takes the correction factor of log2(bytes / 64) below 23 in every generation (v2.8.4-1
#: tuning.cc:278, v2.23.4-1:458, v2.30.7-1:640; 2.30's 24th entry serves NVLSTree, :643)
TREE_CORRECTION_BELOW = 23


def _ll128_cap(table: MappingProxyType, op: str, arch: str, ni: str) -> float:
    return table[(op, "any")] if (op, "any") in table else table[(arch, ni)]


def _bus_bw(op: str, algo: str, proto: str, g: Graph, m: Machine, gen: Generation) -> float:
    """The bus bandwidth of one pair, GB/s, by the generation's rules (v2.8.4-1 tuning.cc:120-132,
    v2.23.4-1 :181-192)."""
    arch, ni, r = gen.arch_of(m.compute_capability), K.nodes_index(m.nodes), gen.rules
    bw = g.bw_intra_GBps if m.nodes <= 2 else g.bw_inter_GBps
    if algo == "NVLS":
        bw = min(g.bw_intra_GBps, g.bw_inter_GBps)
    if algo == "NVLSTree":
        bw = min(g.bw_intra_GBps, g.bw_inter_GBps if m.nodes <= 2 else g.bw_inter_GBps / 2)
    bus = g.n_channels * bw
    if r["ampere_bus_cap_GBps"] and arch == "ampere":
        bus = min(bus, r["ampere_bus_cap_GBps"])
    ll_row = arch if m.nodes == 1 else K.LL_MAX_BW_CPU_ROW[m.cpu]
    ll_max = gen.ll_max_bw_GBps[(ll_row, ni)]
    ppn = m.gpus_per_node
    if algo == "Ring" and proto == "LL":
        wide = m.nodes > 1 or op in ("all_reduce", "reduce")
        bus = min(ll_max, bus * r["ring_ll_factor"][0 if wide else 1])
    if algo == "Ring" and proto == "LL128":
        bus = min(bus * r["ring_ll128_factor"][1 if ppn < 2 else 0],
                  g.n_channels * _ll128_cap(gen.ring_ll128_max_bw_per_ch_GBps, op, arch, ni))
    if algo == "Tree" and op == "all_reduce":
        bus = min(bus * r["tree_factor"], g.n_channels * gen.tree_max_bw_per_ch_GBps[(arch, ni)])
    if algo == "Tree" and proto == "LL":
        bus = min(bus * r["tree_ll_factor"], ll_max)
    if algo == "Tree" and proto == "LL128":
        bus = min(bus * r["tree_ll128_factor"][0 if m.nodes == 1 else 1],
                  g.n_channels * _ll128_cap(gen.tree_ll128_max_bw_per_ch_GBps, op, arch, ni))
    return bus


def _alg_bw(op: str, algo: str, bus: float, n: int) -> float:
    if algo != "Ring" and op in ("all_gather", "reduce_scatter"):
        return bus
    if algo in ("NVLS", "NVLSTree"):
        return bus * 5.0 / 6.0                                  # v2.23.4-1 tuning.cc:224
    return bus * (n / ring_steps(op, n) if algo == "Ring" else 0.5)


def _latency_us(op: str, algo: str, proto: str, m: Machine, gen: Generation, real: bool) -> float:
    """The latency of one pair, us, by the generation's rules (v2.8.4-1 tuning.cc:138-160, v2.23.4-1 :233-275)."""
    n, nodes, ppn, r = m.n_ranks, m.nodes, m.gpus_per_node, gen.rules
    intra_hw = "nvlink" if m.has_nvlink else "pci"
    lat = gen.base_lat_us[(algo, proto)]
    intra = gen.hw_lat_us[(intra_hw, algo, proto)]
    if nodes > 1 and proto == "LL":
        intra *= r["ll_intra_lat_nodes_factor"]
    net_algo = "Tree" if (ppn == 1 and r["tree_net_lat_one_gpu_per_node"]) else algo
    inter = gen.hw_lat_us[("net", net_algo, proto)]
    hop, simple_extra = net_hop_us(proto, m, real)
    plugin = r["net_plugin_latency"]
    if plugin == "add" or real:                 # a real hop always costs what it costs, whatever NCCL budgets
        inter += hop + (simple_extra if proto == "Simple" else 0.0)
    if real and algo == "Ring":                 # and a ring's network step what it really costs (RING_NET_STEP_US)
        inter += ring_step_extra_us(m)
    elif plugin == "replace" and hop > 0:
        inter = hop
    if algo == "Ring":
        hw = intra_hw if nodes == 1 else "net"
        if op in ("broadcast", "reduce"):
            return lat + gen.hw_lat_us[(hw, "Ring", proto)]
        if r["net_overhead"] and nodes > 1:
            intra = max(intra, K.NET_OVERHEAD_US[m.cpu] * (3.0 if proto == "Simple" else 1.0))
        inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
        return lat + (ring_steps(op, n) - inter_steps) * intra + inter_steps * inter
    if algo == "Tree":
        return lat + 2 * ((ppn - 1) * intra + log2i(nodes) * inter)
    if algo == "NVLS":
        return intra + (inter if nodes > 1 else 0.0)
    return lat + intra + 2 * log2i(nodes) * inter


@dataclass(frozen=True)
class Entry:
    latency_us: float
    algbw_GBps: float


def tuning_table(op: str, m: Machine, gen: Generation, realized: bool = False) -> dict[tuple[str, str], Entry]:
    """The generation's table for ``op`` on ``m``: (algo, proto) -> latency and algorithm bandwidth, enabled pairs
    only; ``realized`` as the machine runs it (:func:`commlab.tuner.table.realized_graph`, the network's real hop)."""
    if op not in TUNED_OPS:
        raise CommlabError(f"NCCL's tuner models {', '.join(TUNED_OPS)}; got {op!r}")
    if m.n_ranks < 2:
        raise CommlabError(f"NCCL's model needs at least 2 ranks; the machine has {m.n_ranks}")
    graphs = nccl_graphs(m)
    table = {}
    for algo, proto in enabled_pairs(op, graphs, m, nvls=gen.rules["nvls"] != "none",
                                     ll128_allowed=gen.ll128_allowed):
        g = realized_graph(graphs[algo], m, op) if realized else graphs[algo]
        bus = _bus_bw(op, algo, proto, g, m, gen)
        if bus > 0:
            table[(algo, proto)] = Entry(_latency_us(op, algo, proto, m, gen, realized), _alg_bw(op, algo, bus,
                                                                                                   m.n_ranks))
    if not table:
        raise CommlabError(f"algo={m.algo or '(any)'} and proto={m.proto or '(any)'} leave NCCL {gen.name} no "
                           f"algorithm/protocol for {op} on {m.describe()}")
    return table


def _pair_time_us(op: str, algo: str, proto: str, e: Entry, s: np.ndarray, m: Machine, gen: Generation,
                  channels: int) -> np.ndarray:
    """ncclTopoGetAlgoTime with the generation's tree correction and ring plateau (v2.8.4-1 tuning.cc:271-283)."""
    bw = np.full(s.shape, e.algbw_GBps)
    lat = np.full(s.shape, e.latency_us)
    if algo == "Tree" and op == "all_reduce":
        factors = np.asarray(gen.tree_correction[proto])[:TREE_CORRECTION_BELOW]
        log_size = np.floor(np.log2(np.maximum(s, 1) / 64.0))
        idx = np.clip(log_size, 0, len(factors) - 1).astype(int)
        bw = np.where((log_size >= 0) & (log_size < len(factors)), bw * factors[idx], bw)
    if algo == "Ring" and proto == "Simple" and m.nodes > 1 and op == "all_reduce":
        pre, post = gen.rules["plateau"]
        factor = pre if m.compute_capability < 80 else post
        hit = s >= m.n_ranks / 16.0 * 65536 if gen.plateau_rule == "bytes_over_ranks" \
            else s / (channels * m.n_ranks) >= 64
        lat = np.where(hit, lat * factor, lat)
    return lat + s / (1000.0 * bw)


def replay(op: str, nbytes, m: Machine, gen: Generation, launch: LaunchShape | None = None,
           run_machine: Machine | None = None, nic_scale: float = 1.0) -> Prediction:
    """NCCL ``gen``'s pick per size for ``op`` on ``m`` and its time as the machine runs it; the current generation is
    :func:`commlab.tuner.predict.predict` itself. A calibration (:mod:`commlab.tuner.calibrate`) times the pick on
    ``run_machine`` (the same machine with its real network hop) with every bandwidth across nodes at ``nic_scale``
    of what NCCL budgets (what a NIC delivers over its port speed), while NCCL still picks with what it sees on
    ``m``. The scale divides the time's bandwidth part, ``latency + (time - latency) / nic_scale``: every term but the
    latency (bytes over bandwidth, the pipeline fills) goes as one over the bandwidth."""
    s = np.asarray(nbytes, dtype=float)
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise CommlabError(f"nbytes must be finite and >= 0, got {nbytes!r}")
    if not nic_scale > 0:
        raise CommlabError(f"nic_scale must be > 0 (a NIC's delivered rate over its port speed), got {nic_scale!r}")
    runner = run_machine or m
    scale = nic_scale if m.nodes > 1 else 1.0
    if gen.current:
        if runner == m and scale == 1.0:
            return predict(op, s, m, launch=launch)
        return _retime(op, s, predict(op, s, m), predict(op, s, runner), runner, scale, launch)
    channels = min(K.MAX_CHANNELS, 2 * nccl_graphs(m)["Ring"].n_channels)
    est_table = tuning_table(op, m, gen)
    pairs = list(est_table)
    est = np.stack([_pair_time_us(op, a, p, est_table[(a, p)], s, m, gen, channels) for a, p in pairs])
    run_table = tuning_table(op, runner, gen, realized=True)
    today = _todays_pairs(op, runner)
    rows = []
    for a, p in pairs:
        if (a, p) not in run_table:
            rows.append(np.full(s.shape, np.inf))
        elif a in ("NVLS", "NVLSTree") and (a, p) in today:
            rows.append(nvls_pick_us(op, a, p, s, runner, gen, scale))
        else:
            e = run_table[(a, p)]
            rows.append(_pair_time_us(op, a, p, Entry(e.latency_us, e.algbw_GBps * scale), s, runner, gen, channels))
    return pick(op, m, s, pairs, est, np.stack(rows), launch)


def _todays_pairs(op: str, m: Machine) -> set[tuple[str, str]]:
    """The pairs today's model enables on ``m`` (none where its NCCL_ALGO / NCCL_PROTO leave today's NCCL nothing)."""
    try:
        return set(nccl_tuning_table(op, m, realized=True))
    except CommlabError:
        return set()


def nvls_pick_us(op: str, algo: str, proto: str, s: np.ndarray, m: Machine, gen: Generation,
                 scale: float = 1.0) -> np.ndarray:
    """An NVLS or NVLSTree pick of generation ``gen`` as the machine runs it, us per size: the NVSwitch reduces at
    ``nvlsEfficiency`` of the links and each (channel, head) pipe fills for two chunk times
    (:func:`commlab.tuner.predict.realized_pair_us`), the chunk sized by ``gen``'s own calcCollChunking (its
    ``chunking``). The kernels are the ones NCCL has run since NVLS came (device/all_reduce.h: scatter, reduce, gather
    warp groups); what 2.18-2.23 changed is NCCL's estimate, which left the efficiency out (v2.23.4-1
    tuning.cc:182-183, 224), not the hardware. ``scale``: a calibrated NIC's delivered rate over its port, dividing
    the time's bandwidth part."""
    t = realized_pair_us(op, algo, proto, s, m, gen.chunking if gen.chunking else None)
    if scale != 1.0:
        lat = _latency_part_us(op, algo, proto, s, m)
        t = lat + (t - lat) / scale
    return t


def _latency_part_us(op: str, algo: str, proto: str, s: np.ndarray, m: Machine) -> np.ndarray:
    """The latency term of the predictive model's time of one pair on ``m`` (its realized latency, with the ring
    plateau where ncclTopoGetAlgoTime applies it, tuning.cc:647-650), per size."""
    lat = np.full(s.shape, nccl_tuning_table(op, m, realized=True)[(algo, proto)].latency_us)
    if algo == "Ring" and proto == "Simple" and m.nodes > 1 and op == "all_reduce":
        channels = min(K.MAX_CHANNELS, 2 * nccl_graphs(m)["Ring"].n_channels)            # connect.cc:460
        factor = K.RING_PLATEAU_FACTOR["pre_sm80" if m.compute_capability < 80 else "sm80_up"]
        lat = np.where(s / (channels * m.n_ranks) >= 64, lat * factor, lat)
    return lat


def _retime(op: str, s: np.ndarray, pick: Prediction, run: Prediction, runner: Machine, scale: float,
            launch: LaunchShape | None) -> Prediction:
    """``pick``'s choices (NCCL's, on the machine it sees) timed by ``run``'s table (the same pairs on ``runner``),
    the bandwidth part divided by ``scale``; a pair ``runner`` does not enable keeps ``run``'s own pick."""
    times = np.empty(s.shape)
    for (a, p) in {(str(a), str(p)) for a, p in zip(np.atleast_1d(pick.algo), np.atleast_1d(pick.proto))}:
        at = (np.atleast_1d(pick.algo) == a) & (np.atleast_1d(pick.proto) == p)
        row = run.table.get((a, p))
        t = np.asarray(row if row is not None else run.time_s * 1e6, dtype=float)
        if scale != 1.0:
            lat = _latency_part_us(op, a, p, s, runner) if row is not None else np.zeros(s.shape)
            t = lat + (t - lat) / scale
        times[at] = t[at]
    if launch is not None:
        times = np.maximum(times, launch.floor_us)
    return replace(pick, time_s=times * 1e-6, table=run.table, launch=launch)
