"""A parallel layout's communication groups on a cluster: where a group's ranks sit, and what it sees.

Megatron-LM orders ranks TP, CP, DP, PP from the innermost, so a group of ``size`` ranks ``stride`` apart holds
``min(size, gpus_per_node // stride)`` ranks on each node it spans (1 when the stride reaches a node), on
consecutive nodes (:func:`group_span`). The tp x cp groups side by side run the same collective at the same
time, so each rank of a group has its own share of the node's NICs: a group is costed on :func:`group_view`,
the cluster as its communicator sees it (``ranks_per_node`` GPUs per node, each with
``nics_per_node / gpus_per_node`` of the NICs, on the same leaves and pods).

:func:`commlab.parallelism.placement.place_layout` places a planner layout's collectives with these.
"""
from __future__ import annotations

import dataclasses
import math

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
