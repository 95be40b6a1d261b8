"""NCCL's own algorithms on a cluster: the predictive model's time, then what the fabric adds.

For ``ring``, ``tree`` and ``nvls-tree`` the time per (algorithm, protocol) is :func:`commlab.tuner.predict.predict`'s
(NCCL 2.30's tuner on the cluster's :class:`~commlab.tuner.machine.Machine`, realized bandwidths); the cluster
model adds what NCCL's tuner does not see:

* the fabric's uplinks: a collective cannot beat ``latency + up x taper x S / (k B_NIC)`` for its traffic
  pattern (:mod:`~commlab.cluster.levels`), so an oversubscribed level the pattern crosses slows it;
* switch hops above the leaf: NCCL's per-hop network latency stands for a path through one leaf; a step whose
  path crosses the spines (or the core) spends 2 (or 4) more switch latencies.

Then per size the protocol with the least time, as NCCL picks within an algorithm. With a non-blocking fabric
and all nodes under one leaf per rail, the result *is* predict's (tests/unit/test_cluster_model.py holds it).
"""
from __future__ import annotations

import math

import numpy as np

from commlab.cluster.levels import Shape, ring_pattern, tree_pattern
from commlab.cluster.terms import Terms
from commlab.collectives import busbw_factor

#: our name -> NCCL's algorithm(s) in predict's table
NCCL_OF = {"ring": ("Ring",), "tree": ("Tree",), "nvls-tree": ("NVLS", "NVLSTree")}


def ring_factor(op: str, n_ranks: int) -> float:
    """Bytes a ring sends out of each node per byte of the buffer: 2(N-1)/N all-reduce, (N-1)/N all-gather and
    reduce-scatter, 1 broadcast and reduce (nccl-tests' busbw factor, which is that share)."""
    return busbw_factor(op, n_ranks) if op in ("all_reduce", "all_gather", "reduce_scatter") else 1.0


def net_steps(algo: str, op: str, domains: int) -> float:
    """Network steps in NCCL's latency of the algorithm (tuning.cc:384-435)."""
    if domains == 1:
        return 0.0
    if algo == "ring":
        return 2.0 * (domains - 1) if op == "all_reduce" else domains - 1.0
    return 2.0 * math.floor(math.log2(domains))


def why_not(algo: str, op: str, shape: Shape, table) -> str | None:
    """None when NCCL's table has the algorithm for this op and shape, else why not."""
    have = [name for name in NCCL_OF[algo] if any(a == name for a, _ in table)]
    if have:
        return None
    if algo == "nvls-tree" and not shape.machine.has_nvls:
        return "needs NVLink SHARP: an NVSwitch of H100 or later (NCCL's NVLS)"
    if algo == "nvls-tree":
        return (f"NCCL runs NVLS {op} across nodes only with CollNet (SHARP); see collnet-direct and nvls-sharp")
    return f"NCCL's tuner has no {algo} for {op} here"


def _pattern(algo: str, op: str, shape: Shape):
    if algo == "ring":
        return ring_pattern(shape, ring_factor(op, shape.gpus))
    return tree_pattern(shape)


def _intra_level(algo: str, op: str, shape: Shape, pattern) -> str:
    """Which level NCCL's own bandwidth term stands for: inside one domain its links (NVLink, or the NVSwitch
    for NVLS), across domains the NICs, unless a GPU's NVLink carries more of the ring or chain than the NICs."""
    if shape.domains == 1:
        return "nvswitch" if algo == "nvls-tree" else "nvlink"
    if algo == "nvls-tree":
        return "nic"
    d = shape.gpus_per_domain
    nvlink_load = ((d - 1) / d * pattern.out if algo == "ring" else 2.0) / shape.nvlink_GBps
    return "nvlink" if nvlink_load > pattern.out / shape.network_GBps else "nic"


def nccl_terms(algo: str, op: str, shape: Shape, nbytes: np.ndarray, prediction, table) -> Terms:
    """Time of NCCL's ``algo`` with the fabric added, per size (``prediction`` and ``table``: predict's output and
    nccl_tuning_table(realized=True) for this op and shape)."""
    pattern = _pattern(algo, op, shape)
    level = _intra_level(algo, op, shape, pattern)
    k_bw = shape.network_GBps * 1e9
    fabric = {g.name: pattern.up[i] * g.taper * nbytes / k_bw for i, g in enumerate(shape.groups)}
    extra_s = net_steps(algo, op, shape.domains) * shape.extra_hops_us(pattern.top) * 1e-6
    candidates, nccl_us = [], []
    for (name, proto), times_us in prediction.table.items():
        if name not in NCCL_OF[algo]:
            continue
        nccl_us.append(np.asarray(prediction.nccl_table[(name, proto)], dtype=float))
        lat_s = table[(name, proto)].latency_us * 1e-6
        t_pair = np.asarray(times_us, dtype=float) * 1e-6
        bound = max(fabric.values(), key=lambda v: float(np.max(v)), default=np.zeros_like(t_pair))
        total = np.maximum(t_pair, lat_s + bound) + extra_s
        levels = {level: np.maximum(t_pair - lat_s, 0.0)}
        levels.update({g: np.where(lat_s + v > t_pair, v, 0.0) for g, v in fabric.items()})
        candidates.append(Terms(total, np.full(t_pair.shape, lat_s + extra_s), levels,
                                _latency_words(algo, op, shape, proto)))
    return pick_fastest(candidates, by=np.vstack(nccl_us))   # the protocol NCCL's own estimate ranks first


def pick_fastest(candidates: list[Terms], by: np.ndarray | None = None) -> Terms:
    """Per size, the candidate (a protocol of one algorithm) with the least time, or, with ``by`` (one row per
    candidate), the least ``by``: NCCL ranks the protocols of an algorithm with its own estimate, and the time
    it then takes may hold costs the estimate leaves out (the pipeline fill, :mod:`commlab.tuner.predict`)."""
    times = np.vstack([c.time_s for c in candidates]) if by is None else by
    best = np.argmin(times, axis=0)
    names = {k for c in candidates for k in c.levels}
    pick = lambda arrays: np.choose(best, arrays)                                     # noqa: E731
    levels = {k: pick([np.broadcast_to(c.levels.get(k, 0.0), best.shape) for c in candidates]) for k in names}
    common = int(np.bincount(best.ravel()).argmax())
    return Terms(pick([c.time_s for c in candidates]), pick([c.latency_s for c in candidates]), levels,
                 candidates[common].latency_what)


def _latency_words(algo: str, op: str, shape: Shape, proto: str) -> str:
    steps = net_steps(algo, op, shape.domains)
    if steps == 0:
        return f"NCCL's {algo} latency inside one NVLink domain ({proto})"
    hop = shape.net_latency_us(proto, "Ring" if algo == "ring" else "Tree")
    if algo == "ring":
        n = shape.gpus
        total = 2 * (n - 1) if op == "all_reduce" else n - 1 if op in ("all_gather", "reduce_scatter") else n
        return f"{total} ring steps, {steps:g} of them between nodes at NCCL's {hop:g} us ({proto})"
    return f"{steps:g} tree hops between nodes at NCCL's {hop:g} us ({proto})"
