"""The cluster: nodes, NVLink domains, NICs and the fat tree between them, and what collectives cost there.

Pure layer (numpy only). Build on :mod:`commlab.fabric` (leaf-spine fabrics, rails) and :mod:`commlab.cost`
(NCCL's tuner, :func:`commlab.tuner.predict.predict`):

* :mod:`~commlab.cluster.spec`: :class:`Cluster` and :class:`Fabric`, typed and validated; ``Cluster.machine``
  gives the :class:`~commlab.tuner.machine.Machine` NCCL's model takes;
* :mod:`~commlab.cluster.presets`: named clusters with their sources (``preset("dgx-h100-ndr")``);
* :mod:`~commlab.cluster.levels`: a cluster at a size, level by level, and the traffic patterns on its fabric;
* :mod:`~commlab.cluster.model`: ``cluster_cost(op, nbytes, cluster, nodes)``: time, busbw and bottleneck per
  algorithm (:mod:`~commlab.cluster.algorithms`);
* :mod:`~commlab.cluster.straggler`: one slow NIC, one late GPU, failures at scale;
* :mod:`~commlab.scorecard.cluster_column`: the cluster model's column of ``commlab scorecard``;
* :mod:`~commlab.cluster.astra`: the same cluster as ASTRA-sim's analytical backend reads it.
"""
from commlab.cluster.algorithms import ALGORITHMS, CLUSTER_OPS, algorithms_for
from commlab.cluster.levels import Shape
from commlab.cluster.model import AlgoCost, ClusterCost, cluster_cost, sweep_nodes
from commlab.cluster.presets import preset, preset_names, presets
from commlab.cluster.spec import Cluster, Fabric

__all__ = ["ALGORITHMS", "AlgoCost", "Cluster", "ClusterCost", "Fabric", "CLUSTER_OPS", "Shape", "algorithms_for",
           "cluster_cost", "preset", "preset_names", "presets", "sweep_nodes"]
