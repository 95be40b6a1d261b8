"""The algorithms NCCL's tuner does not cost, written as steps on the cluster's levels.

Ranks are numbered NVLink domain by domain (rank = domain x d + local index, as torchrun numbers them), so two
ranks ``delta`` apart are in one domain when ``delta < d`` and otherwise on the same local index of two domains:
the same rail. Each step costs NCCL's per-hop latency for its hop (NVLink or network) and its bytes over the
slowest level it uses (:func:`~commlab.cluster.terms.steps_time`), with the protocol of least total time.

* ``flat-ring``: one ring through all N GPUs: 2(N-1) steps (all-reduce) of S/N, each as slow as the slowest hop,
  a network hop through a single NIC; a broadcast or reduce is a pipelined chain, (N-1) steps plus S once.
  On a rail-optimised fabric its hop between nodes goes from the last GPU's rail to the first's: via a spine.
* ``rabenseifner`` (Thakur, Rabenseifner and Gropp, IJHPCA 2005): reduce-scatter by recursive halving, the
  partner N/2 away first with S/2; all-gather by recursive doubling, the reverse; all-reduce is both;
  2 more steps when N is not a power of two (:func:`commlab.cost.rabenseifner_all_reduce_time_s`).
* ``pat``: the log-step all-gather in PAT's order (Jeaugey, arXiv 2506.20252): far partners first with one
  chunk, the doubled pieces to ever nearer ones, the largest (N/2 chunks) over NVLink; reduce-scatter reversed.
  (NCCL runs PAT only with one GPU per node; here every GPU runs it.)
* ``nvls-ring``: NVLink SHARP reduce-scatter inside each domain, a ring all-reduce of each GPU's S/d across
  domains on its rail, NVLink SHARP all-gather; pipelined, so its time is the latencies plus the slowest part.
* ``direct``: all-to-all, scatter and gather as grouped sends: every remote message costs NCCL's network post
  overhead (1 us on Intel hosts, 2 on AMD, tuning.cc ``getNetOverhead``) on top of one network step.

On a step between domains ``delta_D`` apart the share ``min(1, delta_D / g)`` of a group's traffic leaves the
group of ``g`` domains and shares its uplinks (:func:`~commlab.cluster.levels.exchange_share`).
"""
from __future__ import annotations

import math

import numpy as np

from commlab.cluster.levels import Shape, all_to_all_pattern, exchange_share, ring_pattern
from commlab.cluster.terms import Step, Terms, steps_time
from commlab.tuner import nccl_constants as K
from commlab.tuner.predict import nccl_tuning_table


def _per_gpu_net(shape: Shape) -> float:
    """One GPU's share of its domain's NICs, GB/s (several GPUs share a NIC when k < d)."""
    return shape.network_GBps / shape.gpus_per_domain


def _exchange_step(shape: Shape, delta: int, nbytes: np.ndarray) -> Step:
    """One step of a recursive or log-step schedule between ranks ``delta`` apart."""
    d = shape.gpus_per_domain
    if delta < d:
        return Step("intra", 1, nbytes, {"nvlink": shape.nvlink_GBps})
    shares, top = exchange_share(shape, max(1, delta // d))
    bw = {"nic": _per_gpu_net(shape)}
    for g, share in zip(shape.groups, shares):
        if share > 0:
            bw[g.name] = _per_gpu_net(shape) / (share * g.taper)
    return Step("net", 1, nbytes, bw, shape.extra_hops_us(top))


def flat_ring(op: str, shape: Shape, s: np.ndarray) -> Terms:
    n, multi = shape.gpus, shape.domains > 1
    bw = {"nic": shape.nic_GBps} if multi else {"nvlink": shape.nvlink_GBps}
    top = max(ring_pattern(shape, 1.0).top, 1 if multi and shape.cluster.fabric.rail_optimised
              and shape.groups else 0)
    hop, extra = ("net", shape.extra_hops_us(top)) if multi else ("intra", 0.0)
    if op in ("broadcast", "reduce"):
        steps = [Step(hop, n - 1, s / (n - 1), bw, extra)]
        what = f"{n - 1} steps of a chain through {n} GPUs"
    else:
        count = 2 * (n - 1) if op == "all_reduce" else n - 1
        steps = [Step(hop, count, s / n, bw, extra)]
        what = f"{count} ring steps, each waiting for a {'network' if multi else 'NVLink'} hop"
    return steps_time(shape, steps, what=what)


def _doubling(n: int) -> list[tuple[int, int]]:
    """Bruck's all-gather steps (distance, chunks of S/N sent): distance 2^i with min(2^i, N - 2^i) chunks."""
    return [(2**i, min(2**i, n - 2**i)) for i in range(math.ceil(math.log2(n)))]


def rabenseifner(op: str, shape: Shape, s: np.ndarray) -> Terms:
    n = shape.gpus
    p = 2 ** int(math.floor(math.log2(n)))
    halving = [(p >> (i + 1), s / 2 ** (i + 1)) for i in range(int(math.log2(p)))]   # RS: far first, S/2
    doubling = list(reversed(halving))                                                 # AG: near first
    plan = {"reduce_scatter": halving, "all_gather": doubling, "all_reduce": halving + doubling}[op]
    steps = [_exchange_step(shape, delta, nbytes) for delta, nbytes in plan]
    if p < n:                                               # the ranks beyond p fold in first and get the result last
        extra = 2 if op == "all_reduce" else 1
        steps += [_exchange_step(shape, p, s)] * extra
    return steps_time(shape, steps, what=f"{len(steps)} steps of recursive halving / doubling")


def pat(op: str, shape: Shape, s: np.ndarray) -> Terms:
    n = shape.gpus
    plan = _doubling(n)
    distances = [dist for dist, _ in reversed(plan)]        # PAT: the far partner first, with the smallest piece
    pieces = [(dist, chunks * s / n) for dist, (_, chunks) in zip(distances, plan)]
    if op == "reduce_scatter":
        pieces = list(reversed(pieces))
    steps = [_exchange_step(shape, delta, nbytes) for delta, nbytes in pieces]
    return steps_time(shape, steps, what=f"{len(steps)} log-steps")


def nvls_ring(op: str, shape: Shape, s: np.ndarray) -> Terms:
    """NVLS inside (NCCL's table for one domain), a ring across domains on each GPU's 1/d (its best protocol),
    pipelined: the latencies add, the slowest part sets the pace."""
    one = shape.cluster.machine(min(shape.nodes, shape.cluster.nodes_per_domain))
    entry = nccl_tuning_table(op, one, realized=True)[("NVLS", "Simple")]
    lat_s: float | np.ndarray = entry.latency_us * 1e-6
    levels = {"nvswitch": s / (entry.algbw_GBps * 1e9)}
    what = f"NVLS inside a domain ({entry.latency_us:g} us)"
    big_d = shape.domains
    if big_d > 1:
        pattern = ring_pattern(shape, 2.0 * (big_d - 1) / big_d)
        bw = {"nic": _per_gpu_net(shape)}
        for i, g in enumerate(shape.groups):
            if pattern.up[i] > 0:
                bw[g.name] = _per_gpu_net(shape) * pattern.out / (pattern.up[i] * g.taper)
        steps = 2 * (big_d - 1)
        ring = steps_time(shape, [Step("net", steps, s / (shape.gpus_per_domain * big_d), bw,
                                       shape.extra_hops_us(pattern.top))], base=False)
        lat_s = lat_s + ring.latency_s
        for name, t in ring.levels.items():
            levels[name] = levels.get(name, 0.0) + t
        what += f" + {steps} network ring steps"
    total = lat_s + np.max(np.vstack([np.broadcast_to(v, s.shape) for v in levels.values()]), axis=0)
    return Terms(total, np.broadcast_to(lat_s, s.shape), _only_the_max(levels), what)


def _only_the_max(levels: dict) -> dict:
    """In a pipeline only the slowest part counts: keep it, zero the others (per size)."""
    shape = np.broadcast_shapes(*(np.shape(v) for v in levels.values()))
    stack = np.vstack([np.broadcast_to(v, shape) for v in levels.values()])
    best = np.argmax(stack, axis=0)
    return {k: np.where(best == i, v, 0.0) for i, (k, v) in enumerate(levels.items())}


def direct(op: str, shape: Shape, s: np.ndarray) -> Terms:
    """All-to-all, scatter or gather as direct sends (see the module docstring); pipelined over the levels."""
    n, d, k_bw = shape.gpus, shape.gpus_per_domain, shape.network_GBps * 1e9
    remote = n - d
    lat_us = K.BASE_LAT_US[("Ring", "Simple")]
    lat_us += shape.net_latency_us("Simple") if shape.domains > 1 else shape.intra_latency_us("Simple")
    lat_us += remote * K.NET_OVERHEAD_US[shape.cluster.cpu]
    if op == "all_to_all":
        pattern = all_to_all_pattern(shape)
        levels = {"nvlink": (d - 1) / n * s / (shape.nvlink_GBps * 1e9)}
        up = pattern.up
    else:                                                   # one root sends (scatter) or receives (gather) it all
        pattern = all_to_all_pattern(shape)
        levels = {"nvlink": (n - 1) / n * s / (shape.nvlink_GBps * 1e9)}
        out = remote / n
        up = tuple(out * (u / pattern.out if pattern.out else 0.0) / g.domains for u, g in zip(pattern.up,
                                                                                              shape.groups))
        pattern = type(pattern)(out, up, pattern.top)
    if shape.domains > 1:
        levels["nic"] = pattern.out * s / k_bw
        for i, g in enumerate(shape.groups):
            levels[g.name] = up[i] * g.taper * s / k_bw
        lat_us += shape.extra_hops_us(pattern.top)
    lat_s = lat_us * 1e-6
    total = lat_s + np.max(np.vstack(list(levels.values())), axis=0)
    what = f"{remote} remote messages at NCCL's {K.NET_OVERHEAD_US[shape.cluster.cpu]:g} us post overhead" \
        if remote else "one NVLink step"
    return Terms(total, np.full(s.shape, lat_s), _only_the_max(levels), what)
