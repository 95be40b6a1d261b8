"""A planner layout's collectives placed on a named cluster (chapter 11): the planner's time next to the cluster
model's, call by call.

Megatron-LM orders ranks TP, CP, DP, PP from the innermost, so a group of ``n`` ranks ``stride`` apart holds
:func:`commlab.cluster.groups.group_span` ranks on each node it spans; a group that leaves its node is costed
on :func:`commlab.cluster.groups.group_view` (its share of the node's NICs). :func:`place_layout` gives every
collective of a layout's step the cluster model's time (NCCL's default algorithm plus the fabric) next to the
planner's; a send/recv (pipeline and ring attention) is one message over NVLink inside a node, else over the
sender's share of its node's NICs (NICs x rate / GPUs per node), at NCCL's network latency: the same model as
:meth:`commlab.parallelism.network.Network.p2p_s`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from commlab.cluster.groups import group_span, group_view
from commlab.cluster.levels import Shape
from commlab.cluster.model import cluster_cost
from commlab.cluster.spec import Cluster
from commlab.errors import CommlabError


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
    """The planner's time per step (its own cluster, :class:`commlab.parallelism.network.Network`)."""
    cluster_s: float
    """The named cluster's time per step."""
    algo: str
    bottleneck: str


def _stride(strategy: str, tp: int, cp: int, dp: int) -> int:
    """Rank distance between neighbours of a group (TP innermost, then CP, DP, PP)."""
    return {"TP": 1, "SP": 1, "CP": tp, "PP": tp * cp * dp}.get(strategy, tp)


def _p2p_s(cluster: Cluster, nodes: int, nbytes: float) -> tuple[float, str, str]:
    """One send of ``nbytes``: over NVLink inside a node, else over the sender's share of its node's NICs."""
    shape = Shape.of(cluster, 1)
    if nodes == 1:
        return shape.intra_latency_us("Simple") * 1e-6 + nbytes / (shape.nvlink_GBps * 1e9), "send", "nvlink"
    two = Shape.of(cluster, 2) if cluster.max_nodes >= 2 else shape
    per_gpu = two.nic_GBps * cluster.nics_per_node / cluster.gpus_per_node
    return two.net_latency_us("Simple") * 1e-6 + nbytes / (per_gpu * 1e9), "send", "nic"


def place_layout(layout, cluster: Cluster) -> tuple[GroupCost, ...]:
    """Every collective of ``layout`` (a :class:`commlab.parallelism.planner.Layout` that runs) on ``cluster``."""
    if layout.reason:
        raise CommlabError(f"layout {layout.name} does not run: {layout.reason}")
    out = []
    for p in layout.placed:
        stride = _stride(p.strategy, layout.tp, layout.cp, layout.dp)
        per_node, nodes = group_span(p.n_ranks, stride, cluster.gpus_per_node)
        if p.primitive == "sendrecv":
            t, algo, bottleneck = _p2p_s(cluster, nodes, p.nbytes_per_call)
        else:
            if nodes == 1 and p.n_ranks < cluster.gpus_per_node:   # a group of part of a node: its own ranks
                view = dataclasses.replace(cluster, name=f"{cluster.name} ({p.n_ranks} GPUs)",
                                           gpus_per_node=p.n_ranks, nics_per_node=1, default_nodes=1)
            else:
                view = group_view(cluster, per_node) if nodes > 1 else cluster
            c = cluster_cost(p.primitive, [p.nbytes_per_call], view, nodes if nodes > 1 else 1)
            algo = c.nccl_pick[0] if c.nccl_pick else c.fastest()[0]
            t, bottleneck = float(c[algo].ran_time_s[0]), c[algo].ran_bottleneck[0]
        out.append(GroupCost(p.strategy, p.primitive, p.n_ranks, per_node, nodes, p.nbytes_per_call,
                             p.calls_per_step, p.time_s, t * p.calls_per_step, algo, bottleneck))
    return tuple(out)
