"""A parallel layout's communication groups on a cluster: the planner's collectives, costed at scale.

Megatron-LM orders ranks TP, CP, DP, PP from the innermost (:mod:`commlab.parallelism.estimate`), so a group
of ``size`` ranks ``stride`` apart holds ``min(size, gpus_per_node // stride)`` ranks on each node it spans
(1 when the stride reaches a node), on consecutive nodes. The tp x cp groups side by side run the same
collective at the same time, so each rank of a group has its own share of the node's NICs: a group is costed
on :func:`group_view`, the cluster as its communicator sees it (``ranks_per_node`` GPUs per node, each with
``nics_per_node / gpus_per_node`` of the NICs, on the same leaves and pods).

:func:`place_layout` takes a layout of :func:`commlab.parallelism.plan` and gives every collective of its
step the cluster model's time (NCCL's default algorithm plus the fabric) next to the planner's (a ring on one
link per GPU); send/recv (pipeline and ring attention) is one message over the group's link.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from commlab.cluster.levels import Shape
from commlab.cluster.model import cluster_cost
from commlab.cluster.spec import Cluster
from commlab.errors import CommlabError


def group_span(size: int, stride: int, gpus_per_node: int) -> tuple[int, int]:
    """(ranks per node, nodes) of a group of ``size`` ranks ``stride`` apart.

    >>> group_span(4096, 4, 8), group_span(8, 1, 8), group_span(4, 32, 8)
    ((2, 2048), (8, 1), (1, 4))
    """
    for name, value in (("size", size), ("stride", stride), ("gpus_per_node", gpus_per_node)):
        if not isinstance(value, int) or value < 1:
            raise CommlabError(f"group {name} must be a whole number >= 1, got {value!r}")
    per_node = 1 if stride >= gpus_per_node else max(1, min(size, gpus_per_node // stride))
    return per_node, math.ceil(size / per_node)


def group_view(cluster: Cluster, ranks_per_node: int) -> Cluster:
    """The cluster as a communicator of ``ranks_per_node`` GPUs per node sees it (see the module docstring)."""
    gpn, nics = cluster.gpus_per_node, cluster.nics_per_node
    if ranks_per_node == gpn:
        return cluster
    if not 1 <= ranks_per_node < gpn or cluster.nvlink_domain not in (None, gpn):
        raise CommlabError(f"a group of {ranks_per_node} GPUs per node on {cluster.name} ({gpn} per node, NVLink "
                           f"domain {cluster.gpus_per_domain}) is not modelled")
    share = nics * ranks_per_node / gpn
    view_nics = max(1, int(share))
    speed = cluster.nic_Gbps * share / view_nics
    f = cluster.fabric
    if f.rail_optimised:                                   # a rail leaf still takes one NIC of leaf_nics nodes
        fabric = dataclasses.replace(f, sharp=False, pod_leaves=max(1, round(f.pod_leaves * view_nics / nics)))
    else:                                                  # a rack's leaf takes the same nodes, fewer NICs each
        fabric = dataclasses.replace(f, sharp=False, leaf_nics=max(view_nics, round(f.leaf_nics * view_nics / nics)))
    return dataclasses.replace(cluster, name=f"{cluster.name} ({ranks_per_node} GPU{'s' if ranks_per_node > 1 else ''}"
                               f" per node)", gpus_per_node=ranks_per_node, nics_per_node=view_nics,
                               nic_Gbps=speed, fabric=fabric, nvlinks=None,
                               default_nodes=1)


@dataclass(frozen=True)
class GroupCost:
    """One collective of a layout's step on the cluster: per call and per step, the planner's and ours."""

    strategy: str
    primitive: str
    n_ranks: int
    ranks_per_node: int
    nodes: int
    nbytes_per_call: int
    calls_per_step: int
    planner_s: float
    """The planner's time per step (its ring alpha-beta on one link per GPU)."""
    cluster_s: float
    """The cluster model's time per step."""
    algo: str
    bottleneck: str


_STRIDES = {"TP": lambda p: 1, "SP": lambda p: 1, "CP": lambda p: p.tp, "PP": lambda p: p.tp * p.cp * p.dp}


def _p2p_s(cluster: Cluster, per_node: int, nodes: int, nbytes: float) -> tuple[float, str, str]:
    """One send of ``nbytes``: over NVLink inside a node, else over the sender's share of its node's NICs."""
    shape = Shape.of(cluster, 1)
    if nodes == 1:
        return shape.intra_latency_us("Simple") * 1e-6 + nbytes / (shape.nvlink_GBps * 1e9), "send", "nvlink"
    per_gpu = shape.network_GBps / cluster.gpus_per_node
    return shape.net_latency_us("Simple") * 1e-6 + nbytes / (per_gpu * 1e9), "send", "nic"


def place_layout(layout, cluster: Cluster) -> tuple[GroupCost, ...]:
    """Every collective of ``layout`` (a :class:`commlab.parallelism.planner.Layout` that runs) on ``cluster``."""
    from commlab.parallelism.config import ParallelConfig

    if layout.reason:
        raise CommlabError(f"layout {layout.name} does not run: {layout.reason}")
    par = ParallelConfig(tp=layout.tp, cp=layout.cp, pp=layout.pp, dp=layout.dp, zero=layout.zero)
    out = []
    for p in layout.placed:
        stride = _STRIDES.get(p.strategy, lambda q: q.tp)(par)
        per_node, nodes = group_span(p.n_ranks, stride, cluster.gpus_per_node)
        if p.primitive == "sendrecv":
            t, algo, level = _p2p_s(cluster, per_node, nodes, p.nbytes_per_call)
            bottleneck = level
        else:
            view = group_view(cluster, per_node) if nodes > 1 else cluster
            c = cluster_cost(p.primitive, [p.nbytes_per_call], view, nodes if nodes > 1 else 1)
            algo = c.nccl_pick[0] if c.nccl_pick else c.fastest()[0]
            t, bottleneck = float(c[algo].ran_time_s[0]), c[algo].ran_bottleneck[0]
            if nodes == 1 and p.n_ranks < cluster.gpus_per_node:   # a group of part of a node: its own ranks
                view = dataclasses.replace(cluster, name=f"{cluster.name} ({p.n_ranks} GPUs)",
                                           gpus_per_node=p.n_ranks, nics_per_node=1, default_nodes=1)
                c = cluster_cost(p.primitive, [p.nbytes_per_call], view, 1)
                algo = c.nccl_pick[0] if c.nccl_pick else c.fastest()[0]
                t, bottleneck = float(c[algo].ran_time_s[0]), c[algo].ran_bottleneck[0]
        out.append(GroupCost(p.strategy, p.primitive, p.n_ranks, per_node, nodes, p.nbytes_per_call,
                             p.calls_per_step, p.time_s, t * p.calls_per_step, algo, bottleneck))
    return tuple(out)
