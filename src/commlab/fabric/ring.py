"""A ring that spans nodes: every step waits for its slowest hop (chapter 05).

Ranks are numbered node by node (what torchrun does: rank = node x gpus_per_node + local index), and the ring
goes 0 -> 1 -> ... -> N-1 -> 0. Inside a node a hop is NVLink; the hop out of the last GPU of a node to the
first GPU of the next crosses the network. In a ring all-reduce all N hops carry a chunk of S/N at the same
time in each of the 2(N-1) steps, so a step lasts as long as its slowest hop:

    t_step = max over hops (alpha_hop + S / (N B_hop)),   t = 2 (N - 1) t_step.

With one link everywhere this is :func:`commlab.cost.ring_all_reduce_time_s`. NCCL runs several rings at once,
each crossing the network through a different NIC (one per rail), so that all of a node's NICs work:
:func:`parallel_rings_busbw_GBps`.

>>> from commlab import hardware
>>> hops = node_ring(2, 8, "nvlink4", "ib-ndr")
>>> len(hops), sum(h.link == "ib-ndr" for h in hops)
(16, 2)
>>> slowest_hop(hops, 1e9).link
'ib-ndr'
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab import hardware
from commlab.errors import CommlabError
from commlab.fabric.nodes import Node


@dataclass(frozen=True)
class Hop:
    """One hop of the ring, from rank ``src`` to rank ``dst`` over a commlab.hardware link."""

    src: int
    dst: int
    link: str

    @property
    def alpha_s(self) -> float:
        return hardware.link(self.link).latency_s

    @property
    def bw_Bps(self) -> float:
        return hardware.link(self.link).unidir_Bps

    def time_s(self, nbytes: float) -> float:
        """alpha + S / B for one message of ``nbytes`` on this hop."""
        return self.alpha_s + nbytes / self.bw_Bps


def node_ring(n_nodes: int, gpus_per_node: int, inside: str, between: str) -> tuple[Hop, ...]:
    """The N = n_nodes x gpus_per_node hops of a ring in rank order: ``inside`` within a node, ``between``
    (a network port) where the ring leaves one node for the next."""
    for name, value in (("n_nodes", n_nodes), ("gpus_per_node", gpus_per_node)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CommlabError(f"{name} must be a whole number >= 1, got {value!r}")
    n = n_nodes * gpus_per_node
    if n < 2:
        raise CommlabError(f"a ring needs at least 2 ranks, got {n_nodes} node(s) x {gpus_per_node} GPU(s)")
    hardware.link(inside), hardware.link(between)
    return tuple(Hop(r, (r + 1) % n, between if (r + 1) % gpus_per_node == 0 and n_nodes > 1 else inside)
                 for r in range(n))


def slowest_hop(hops, chunk_nbytes: float) -> Hop:
    """The hop that takes longest to carry one chunk (the first of equals)."""
    if not hops:
        raise CommlabError("a ring needs at least one hop, got none")
    return max(hops, key=lambda hop: hop.time_s(chunk_nbytes))


def node_ring_all_reduce_time_s(nbytes: float, hops) -> float:
    """2 (N - 1) steps, each as long as the slowest hop carrying S / N: see the module docstring."""
    if nbytes < 0:
        raise CommlabError(f"nbytes must be >= 0, got {nbytes!r}")
    n = len(hops)
    chunk = nbytes / n
    return 2 * (n - 1) * slowest_hop(hops, chunk).time_s(chunk)


def parallel_rings_busbw_GBps(node: Node, n_nodes: int) -> float:
    """The bus bandwidth (nccl-tests' busbw) bound of ring all-reduce over ``n_nodes`` such nodes when one ring
    runs per NIC: each carries S / nics and crosses the network on its own NIC, so the network allows
    nics x port (the node's bandwidth out); every GPU's NVLink still carries all rings: the smaller wins.

    >>> from commlab.fabric.nodes import node
    >>> parallel_rings_busbw_GBps(node("dgx-h100"), 1), parallel_rings_busbw_GBps(node("dgx-h100"), 4)
    (450.0, 400.0)
    """
    if not isinstance(n_nodes, int) or n_nodes < 1:
        raise CommlabError(f"n_nodes must be a whole number >= 1, got {n_nodes!r}")
    nvlink_GBps = hardware.link(node.nvlink).unidir_GBps
    if n_nodes == 1:
        return nvlink_GBps
    rings = min(node.nics, node.gpus)
    return min(nvlink_GBps, rings * hardware.link(node.nic).unidir_GBps)
