"""The planner's collectives on the cluster model: every multi-node time from :mod:`commlab.cluster` (chapter 09).

A layout's groups are placed as Megatron-LM orders ranks (TP innermost, then CP, then DP, then PP): a group of
``n`` ranks ``stride`` apart holds ``min(n, G / stride)`` ranks on each node it spans
(:func:`commlab.cluster.groups.group_span`). The groups side by side run the same collective at the same time,
so each group gets its share of the node's NICs (:func:`commlab.cluster.groups.group_view`): a node's egress is
its NICs x their rate, shared by all the groups that leave it, never one NIC per GPU. The time of one call is
:func:`commlab.cluster.cluster_cost`'s for the algorithm NCCL picks by default (its NVLink stage, its network
steps at NCCL's latencies, the fabric); all-to-all, which NCCL's tuner does not cost, takes the fastest
pairwise exchange. A group that straddles nodes (60 ranks on 8-GPU nodes) is costed with gcd(ranks a
node, n) ranks on each node. A group inside one node runs on that node's NVSwitch as a communicator of its own ranks.

A collective that runs while the GPU computes holds one SM per channel (NCCL launches one thread block per
channel, ``ncclLaunchKernel`` in src/enqueue.cc, and keeps ``min(MAXCHANNELS, 2 x`` the ring's channels``)`` at
run time, src/graph/connect.cc:460): :meth:`Network.channels` gives that count from NCCL's own graph search
(:func:`commlab.tuner.graphs.nccl_graphs`), inside one node and across nodes.

Point-to-point sends (pipeline stages, ring attention) cross NVLink inside a node, else the sender's share of
its node's NICs (NICs x rate / GPUs per node), at NCCL's network latency.

The fabric: a non-blocking, rail-optimised three-level fat tree of 64-port switches (DGX SuperPOD's design),
SHARP off, big enough for the job; :class:`Network` builds it from the GPU's node.

>>> from commlab.parallelism.catalogue import gpu
>>> net = Network(gpu("h100"), n_gpus=64)
>>> t, where = net.collective_s("all_reduce", 140 * 10**9, 64, 1)    # 70B's BF16 gradients over 8 DGX H100
>>> round(t, 2), where
(0.76, 'nvls-tree, nic')
>>> t, where = net.collective_s("all_reduce", 35 * 10**9, 8, 8)      # TP 8: P/8 in FP32, one GPU a node
>>> round(t, 2), where                                               # eight such groups share each node's NICs
(1.28, 'ring, nic')
"""
from __future__ import annotations

import dataclasses
import math

from commlab.cluster.algorithms import ALGORITHMS
from commlab.cluster.groups import group_span, group_view
from commlab.cluster.levels import Shape
from commlab.cluster.model import cluster_cost
from commlab.cluster.spec import Cluster, Fabric
from commlab.parallelism.catalogue import GpuSpec

_NCCL_ALGOS = ("ring", "tree", "nvls-tree")
"""The algorithms NCCL picks from by default (CollNet off); all-to-all, which NCCL's tuner does not cost, takes
the fastest of the cluster model's."""
_FABRIC_SOURCE = ("NVIDIA DGX SuperPOD reference architecture (DGX H100): rail-optimised full fat tree: "
                  "https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/"
                  "network-fabrics.html")


def planner_cluster(gpu: GpuSpec, n_gpus: int, gpus_per_node: int = 0, nics_per_node: int = 0,
                    nic_Gbps: float = 0.0) -> Cluster:
    """The cluster a plan runs on: ``gpu``'s node (or the overrides) on a non-blocking fat tree for ``n_gpus``."""
    per_node = gpus_per_node or gpu.gpus_per_node
    nics = nics_per_node or gpu.nics_per_node
    rate = float(nic_Gbps or gpu.nic_Gbps)
    nodes = max(1, math.ceil(n_gpus / per_node))
    pods = max(1, math.ceil(nodes * nics / 1024))
    fabric = Fabric(levels=3, leaf_nics=32, pod_leaves=32, pods=pods, oversubscription=(1.0, 1.0),
                    rail_optimised=True, sharp=False, switch="64-port switches (assumed)", radix=64,
                    switch_latency_us=0.13)
    return Cluster(f"plan-{gpu.name}", f"{per_node} x {gpu.title} per node, {nics} x {rate:g} Gb/s",
                   gpu.cluster_gpu or "h100", per_node, nics, rate, gpu.net, fabric, (gpu.source, _FABRIC_SOURCE),
                   default_nodes=1)


def _runtime_channels(shape: Shape) -> int:
    """NCCL's channels at run time: twice the ring graph's, at most MAXCHANNELS (src/graph/connect.cc:460)."""
    from commlab.tuner import nccl_constants as K
    from commlab.tuner.graphs import nccl_graphs

    return int(min(K.MAX_CHANNELS, 2 * nccl_graphs(shape.machine)["Ring"].n_channels))


class Network:
    """Times of the planner's collectives on one cluster, remembered per (op, bytes, group) within one plan."""

    def __init__(self, gpu: GpuSpec, n_gpus: int, gpus_per_node: int = 0, nics_per_node: int = 0,
                 nic_Gbps: float = 0.0) -> None:
        self.cluster = planner_cluster(gpu, n_gpus, gpus_per_node, nics_per_node, nic_Gbps)
        self.gpus_per_node = self.cluster.gpus_per_node
        shape = Shape.of(self.cluster, 1)
        self._nvlink_GBps = shape.nvlink_GBps
        self._nvlink_latency_s = shape.intra_latency_us("Simple") * 1e-6
        two = Shape.of(self.cluster, 2) if self.cluster.max_nodes >= 2 else shape
        self._nic_share_GBps = two.nic_GBps * self.cluster.nics_per_node / self.gpus_per_node
        self._net_latency_s = two.net_latency_us("Simple") * 1e-6
        self._memo: dict[tuple, tuple[float, str]] = {}
        self._channels = (_runtime_channels(shape), _runtime_channels(two))

    def channels(self, crosses_nodes: bool) -> int:
        """Thread blocks (one SM each) an NCCL collective holds while it runs: inside a node or across nodes."""
        return self._channels[1 if crosses_nodes else 0]

    @property
    def egress_GBps(self) -> float:
        """One node's NICs x the rate NCCL drives each at."""
        return self._nic_share_GBps * self.gpus_per_node

    def collective_s(self, op: str, nbytes: float, n_ranks: int, stride: int) -> tuple[float, str]:
        """(seconds, "algorithm, bottleneck level") of one call of ``op`` on a group of ``n_ranks`` ranks
        ``stride`` apart; ``nbytes`` is nccl-tests' size (the whole buffer for all-gather and reduce-scatter)."""
        if n_ranks < 2 or nbytes <= 0:
            return 0.0, "none"
        key = (op, int(nbytes), n_ranks, stride)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._collective(op, float(nbytes), n_ranks, stride)
        return hit

    def _collective(self, op: str, nbytes: float, n_ranks: int, stride: int) -> tuple[float, str]:
        per_node, nodes = group_span(n_ranks, stride, self.gpus_per_node)
        if nodes == 1:
            view = dataclasses.replace(self.cluster, name=f"{self.cluster.name} ({n_ranks} GPUs)",
                                       gpus_per_node=n_ranks, nics_per_node=1, default_nodes=1)
        else:
            if per_node * nodes != n_ranks:      # a group that straddles nodes: costed as gcd(per_node, n) a node
                per_node = math.gcd(per_node, n_ranks)
                nodes = n_ranks // per_node
            view = group_view(self.cluster, per_node)
        c = cluster_cost(op, [nbytes], view, nodes, algos=[a for a in _NCCL_ALGOS if op in ALGORITHMS[a]] or "all")
        algo = c.nccl_pick[0] if c.nccl_pick else c.fastest()[0]
        if algo not in c.algos:                                  # NCCL picked one we did not cost: cost them all
            c = cluster_cost(op, [nbytes], view, nodes)
        cost = c[algo]
        return float(cost.ran_time_s[0]), f"{algo}, {cost.ran_bottleneck[0].split(':')[0]}"

    def p2p_s(self, nbytes: float, stride: int) -> tuple[float, str]:
        """One send of ``nbytes`` to a rank ``stride`` away: NVLink inside a node, else the sender's share of
        its node's NICs."""
        if nbytes <= 0:
            return 0.0, "none"
        if stride < self.gpus_per_node:
            return self._nvlink_latency_s + nbytes / (self._nvlink_GBps * 1e9), "send, nvlink"
        return self._net_latency_s + nbytes / (self._nic_share_GBps * 1e9), "send, nic"
