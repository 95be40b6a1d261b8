"""The predictive model: the time of a collective from the hardware alone, the way NCCL's tuner reckons it.

For a :class:`~commlab.tuner.machine.Machine` and a collective, :mod:`commlab.tuner.table` builds NCCL's table
of latencies (us) and algorithm bandwidths (GB/s) per (algorithm, protocol), as ``ncclTopoTuneModel`` does
(``src/graph/tuning.cc:243-438``), on the channels :func:`~commlab.tuner.graphs.nccl_graphs` finds; this
module then takes, per size, the pair with the least time (``ncclTopoGetAlgoTime``, ``tuning.cc:630-655``)::

    time_us = latency_us + nbytes / (1000 * algbw_GBps)

The pieces, with their lines (constants and sources in :mod:`commlab.tuner.nccl_constants`):

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
* enabled: LL128 only where a node's GPUs are joined by NVLink, on one node or across nodes (``tuning.cc:518-536``),
  NVLSTree only across nodes, NVLS only on one node without CollNet (``tuning.cc:498-512``);
* per size: the Tree all-reduce correction factors (``tuning.cc:620-642``; NVLSTree's estimate too on Blackwell
  with an x86 host, ``:643-646``, :func:`nvlstree_corrected`) and the ring plateau (latency x 1.4
  across nodes, ``tuning.cc:647-650``).

What NCCL's model is, and is not: a ranking made at initialisation, calibrated to pick well, not to time
well. So the pick is NCCL's, and its time is taken as the machine runs it: the links' total inside a node,
host-memory staging with P2P off (:mod:`commlab.tuner.shm`), each network hop's real cost
(:mod:`commlab.tuner.networks`), the launch floor of a thread driving several GPUs
(:mod:`commlab.tuner.launch`), and the pipeline fill of NVLS / NVLSTree all-reduce, which NCCL's line leaves
out: two chunk times of a (channel, head) pipe, the chunk as ``calcCollChunking`` sizes it (:func:`_nvls_fill_us`;
without it log 07 at 2-32 MiB runs 25-50% slower than the NVLS line, 4% with it). Ring and Tree keep NCCL's
line: their channels are not cut at these sizes (``nBytes < nc x nThreads x threadThreshold``, enqueue.cc:2093,
only below about 1 MiB for Simple); a Tree across nodes adds its own fill, one chunk time per network hop of the
inter-node tree (:func:`_tree_fill_us`). A ring's network step runs at what it costs: NCCL's figure plus the
hop's cost, and on the networks timed as NCCL's IB plugin a ring step's :data:`~commlab.tuner.networks.RING_NET_STEP_US`
more (:func:`~commlab.tuner.table.net_step_us`).
:mod:`commlab.scorecard.scorecard` holds both models against the real logs.

>>> from commlab.tuner.machine import parse_machine
>>> h100 = parse_machine("gpu=h100,gpus_per_node=8")
>>> p = predict("all_reduce", [8, 2**20, 2**22, 2**34], h100)
>>> p.pairs()
['Ring/LL', 'Ring/LL', 'NVLS/Simple', 'NVLS/Simple']
>>> [round(float(x), 1) for x in p.busbw_GBps]
[0.0, 65.5, 131.4, 474.9]
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from commlab.collectives import busbw_factor
from commlab.tuner import nccl_constants as K
from commlab.tuner.launch import LaunchShape
from commlab.tuner.machine import Machine
from commlab.tuner.graphs import nccl_graphs
from commlab.tuner.settings import TUNED_OPS, log2i, tuned_op
from commlab.tuner.table import TuningEntry, nccl_tuning_table, nvls_chunk_bytes, nvls_tuning, tree_chunk_bytes
from commlab.errors import CommlabError

__all__ = ["TUNED_OPS", "Prediction", "TuningEntry", "nccl_tuning_table", "pick", "predict"]

def _nvls_fill_us(op: str, algo: str, e: TuningEntry, s: np.ndarray, m: Machine,
                  chunking: Mapping | None = None) -> np.ndarray:
    """The pipeline fill NCCL's time leaves out, us, for an NVLS / NVLSTree all-reduce (0 for the others).

    NCCL launches all ``nvlsChannels`` at every size (enqueue.cc:2084-2090) and cuts each (channel, head)
    share into chunks (:func:`~commlab.tuner.table.nvls_chunk_bytes`); every chunk passes three warp
    groups in series (scatter, reduce with the tree's network hops, gather: device/all_reduce.h:390-640), so
    the stream starts two chunk times late. One chunk time is a (channel, head) pipe's share of the bandwidth:
    ``chunk x nvlsChannels x nHeads / algbw``::

        fill_us = 2 x chunk x nvlsChannels x nHeads / (1000 x algbw_GBps)
    """
    if op != "all_reduce" or algo not in ("NVLS", "NVLSTree"):
        return np.zeros(s.shape)
    n_heads = nccl_graphs(m)[algo].n_channels
    n_ch = nvls_tuning(m, chunking)[0]
    chunk = np.array([nvls_chunk_bytes(algo, float(x), m, n_heads, chunking) for x in s.ravel()]).reshape(s.shape)
    return K.NVLS_PIPELINE_FILL_CHUNKS * chunk * n_ch * n_heads / (1000.0 * e.algbw_GBps)


def _tree_fill_us(op: str, algo: str, proto: str, e: TuningEntry, s: np.ndarray, m: Machine,
                  runtime_channels: int) -> np.ndarray:
    """The pipeline fill NCCL's time leaves out, us, for a Tree/LL128 or Tree/Simple all-reduce across nodes (0 for
    the others; :data:`~commlab.tuner.nccl_constants.TREE_FILL_PROTOS` says why not LL).

    Each of the ``runtime_channels`` pipes cuts its share into chunks
    (:func:`~commlab.tuner.table.tree_chunk_bytes`); a network hop forwards a chunk only once all of it is
    written (``src/transport/net.cc:1358-1395``), so the stream starts one chunk time late per hop of the
    inter-node tree, up and down (:data:`~commlab.tuner.nccl_constants.TREE_FILL_HOPS_PER_LEVEL`). A chunk time
    is a pipe's share of the bandwidth, as for NVLS::

        fill_us = 2 x log2(nodes) x chunk x channels / (1000 x algbw_GBps)
    """
    if op != "all_reduce" or algo != "Tree" or proto not in K.TREE_FILL_PROTOS or m.nodes < 2:
        return np.zeros(s.shape)
    hops = K.TREE_FILL_HOPS_PER_LEVEL * log2i(m.nodes)
    chunk = np.array([tree_chunk_bytes(proto, float(x), m, runtime_channels) for x in s.ravel()]).reshape(s.shape)
    return hops * chunk * runtime_channels / (1000.0 * e.algbw_GBps)


def nvlstree_corrected(m: Machine) -> bool:
    """Whether NCCL's estimate of an NVLSTree all-reduce on ``m`` takes the tree correction factor: Blackwell and
    later (``minCompCap >= 100``) on an x86 host (``cpuArch == NCCL_TOPO_CPU_ARCH_X86``), v2.30.7-1 tuning.cc:643-646.
    The factor changes NCCL's ranking, not how the pick runs: the NVLSTree time keeps the links and the pipeline fill
    (:func:`_nvls_fill_us`)."""
    return m.compute_capability >= K.NVLSTREE_CORRECTION_MIN_CC and m.gpu not in K.ARM_HOST_GPUS


def _pair_time_us(op: str, algo: str, proto: str, e: TuningEntry, s: np.ndarray, m: Machine,
                  runtime_channels: int, real: bool = False, chunking: Mapping | None = None) -> np.ndarray:
    """ncclTopoGetAlgoTime (tuning.cc:630-655) over an array of sizes; ``real`` adds the pipeline fill NCCL's
    estimate leaves out (:func:`_nvls_fill_us`, :func:`_tree_fill_us`), NVLS's chunk by ``chunking``."""
    bw = np.full(s.shape, e.algbw_GBps)
    lat = np.full(s.shape, e.latency_us)
    if algo == "Tree" and op == "all_reduce":
        log_size = np.floor(np.log2(np.maximum(s, 1) / 64.0))
        idx = np.clip(log_size, 0, 22).astype(int)
        corr = np.asarray(K.TREE_CORRECTION[proto])[idx]
        bw = np.where((log_size >= 0) & (log_size < 23), bw * corr, bw)
    if algo == "NVLSTree" and op == "all_reduce" and not real and nvlstree_corrected(m):
        log_size = np.floor(np.log2(np.maximum(s, 1) / 64.0))
        idx = np.clip(log_size, 0, K.NVLSTREE_CORRECTION_BELOW - 1).astype(int)
        corr = np.asarray(K.TREE_CORRECTION[proto])[idx]
        bw = np.where((log_size >= 0) & (log_size < K.NVLSTREE_CORRECTION_BELOW), bw * corr, bw)
    if algo == "Ring" and proto == "Simple" and m.nodes > 1 and op == "all_reduce":
        plateau = K.RING_PLATEAU_FACTOR["pre_sm80" if m.compute_capability < 80 else "sm80_up"]
        lat = np.where(s / (runtime_channels * m.n_ranks) >= 64, lat * plateau, lat)
    fill = _nvls_fill_us(op, algo, e, s, m, chunking) + _tree_fill_us(op, algo, proto, e, s, m, runtime_channels) \
        if real else 0.0
    return lat + s / (1000.0 * bw) + fill


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
    launch: LaunchShape | None = None
    """The run's launch shape, when given: no time is below its floor (:mod:`commlab.tuner.launch`)."""
    nccl_table: Mapping[tuple[str, str], np.ndarray] | None = None
    """NCCL's own estimate (us) of every enabled pair, per size: what its tuner ranks (the pick is the least)."""

    @property
    def floor_bound(self) -> np.ndarray:
        """Per size: True where the launch floor, not the collective, sets the time."""
        if self.launch is None:
            return np.zeros(np.shape(self.time_s), dtype=bool)
        return np.asarray(self.time_s * 1e6 <= self.launch.floor_us + 1e-9)

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
        pairs = self.pairs()  # once: indexing a fresh list per size made this quadratic
        sizes, labels = np.atleast_1d(self.nbytes)[order], [pairs[i] for i in order]
        return [(int(sizes[i]), labels[i - 1], labels[i]) for i in range(1, len(labels)) if labels[i] != labels[i - 1]]


def realized_pair_us(op: str, algo: str, proto: str, s: np.ndarray, m: Machine,
                     chunking: Mapping | None = None) -> np.ndarray:
    """One pair's time (us, per size) as the machine runs it: the realized table and the pipeline fills, the NVLS
    chunk by ``chunking`` (an older generation's :attr:`~commlab.tuner.generation.Generation.chunking`; today's
    when None). :mod:`commlab.tuner.replay` times an older generation's NVLS picks with it."""
    runtime_channels = min(K.MAX_CHANNELS, 2 * nccl_graphs(m)["Ring"].n_channels)    # connect.cc:460
    e = nccl_tuning_table(op, m, realized=True)[(algo, proto)]
    return _pair_time_us(op, algo, proto, e, np.asarray(s, dtype=float), m, runtime_channels, True, chunking)


def _times(op: str, table, s: np.ndarray, m: Machine, real: bool = False) -> tuple[list, np.ndarray]:
    runtime_channels = min(K.MAX_CHANNELS, 2 * nccl_graphs(m)["Ring"].n_channels)    # connect.cc:460
    pairs = list(table)
    return pairs, np.stack([_pair_time_us(op, a, p, table[(a, p)], s, m, runtime_channels, real)
                            for a, p in pairs])


def predict(op: str, nbytes, m: Machine, launch: LaunchShape | None = None) -> Prediction:
    """NCCL's pick per size and its predicted time (s) for ``op`` on ``m``; ``nbytes`` is nccl-tests' ``size``
    column (all-gather / reduce-scatter: the whole buffer) and may be an array.

    NCCL picks with its own table (the first least time in its loop order, enqueue.cc topoGetAlgoInfo); the
    time is that pair's as the machine runs it (:func:`~commlab.tuner.table.nccl_tuning_table` with
    ``realized=True``). With ``launch`` (nccl-tests' ``-g``), no time is below its floor:
    ``max(t, gpus_per_thread x launch_us)`` (:mod:`commlab.tuner.launch`)."""
    op = tuned_op(op)
    s = np.asarray(nbytes, dtype=float)
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise CommlabError(f"nbytes must be finite and >= 0, got {nbytes!r}")
    if launch is not None and not isinstance(launch, LaunchShape):
        raise CommlabError(f"launch must be a LaunchShape (commlab.tuner.launch), got {launch!r}")
    pairs, model = _times(op, nccl_tuning_table(op, m), s, m)
    _, real = _times(op, nccl_tuning_table(op, m, realized=True), s, m, real=True)
    return pick(op, m, s, pairs, model, real, launch)


def pick(op: str, m: Machine, s: np.ndarray, pairs: list[tuple[str, str]], estimate_us: np.ndarray,
         run_us: np.ndarray, launch: LaunchShape | None = None) -> Prediction:
    """NCCL's pick per size and its time: the pair of least ``estimate_us`` (NCCL's own table, the first least in
    its loop order, enqueue.cc topoGetAlgoInfo) timed by ``run_us`` (the same pairs as the machine runs them), no
    time below the launch floor. ``estimate_us`` and ``run_us`` are (pairs x sizes), rows in ``pairs``' order; the
    one pick of every generation of the tuner (:mod:`commlab.tuner.replay`)."""
    if launch is not None:
        run_us = np.maximum(run_us, launch.floor_us)
    best = np.argmin(estimate_us, axis=0)
    algo = np.array([a for a, _ in pairs])[best]
    proto = np.array([p for _, p in pairs])[best]
    time_us = np.take_along_axis(run_us, best[None], axis=0)[0]
    nccl_us = np.take_along_axis(estimate_us, best[None], axis=0)[0]
    return Prediction(op, m, s, time_us * 1e-6, algo, proto, MappingProxyType(dict(zip(pairs, run_us))), nccl_us,
                      launch, MappingProxyType(dict(zip(pairs, estimate_us))))
