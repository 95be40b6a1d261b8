"""The fabric around the GPUs: nodes and NVLink domains, leaf-spine networks, rail wiring, rings across nodes.

Pure layer (no torch); figures come from :mod:`commlab.hardware`, pictures from :mod:`commlab.viz.fabric`.

* :mod:`~commlab.fabric.nodes`: ``node("dgx-h100")`` (GPUs, NVLink, compute-fabric NICs) and
  ``domain("gb200-nvl72")`` (GPUs that share one NVLink domain), chapters 01-02;
* :mod:`~commlab.fabric.clos`: ``LeafSpine`` (hosts, spines, oversubscription, bisection), chapter 02;
* :mod:`~commlab.fabric.rail`: rail-optimised wiring, switch hops between two GPUs, chapter 02;
* :mod:`~commlab.fabric.ring`: a ring across nodes and its slowest hop, chapter 05.
"""
from commlab.fabric.clos import LeafSpine, non_blocking_hosts
from commlab.fabric.nodes import Node, NVLinkDomain, domain, domains, node, nodes
from commlab.fabric.rail import leaf_of, switch_hops
from commlab.fabric.ring import Hop, node_ring, node_ring_all_reduce_time_s, parallel_rings_busbw_GBps, slowest_hop

__all__ = ["Hop", "LeafSpine", "NVLinkDomain", "Node", "domain", "domains", "leaf_of", "node", "node_ring",
           "nodes", "non_blocking_hosts", "parallel_rings_busbw_GBps", "node_ring_all_reduce_time_s", "slowest_hop",
           "switch_hops"]
