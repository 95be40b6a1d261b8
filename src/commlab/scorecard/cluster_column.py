"""The cluster model held against the shipped multi-node nccl-tests logs: the scorecard's cluster column.

Each log whose run fills whole nodes of a preset gets that preset and node count (:func:`fixture_cluster`);
per row the cluster model's time is the one of the algorithm NCCL picks by default (its tuner, with the fabric
added; :func:`commlab.cluster.cluster_cost`), or ``direct`` for the grouped send/recv collectives
(scatter, all-to-all) that NCCL's tuner does not cost. The goal,
:data:`commlab.scorecard.scorecard.CLUSTER_BW_GOAL`: median relative error <= 20 % in the bandwidth regime (sizes
>= 64 MiB) on every multi-node log.

>>> fixture_cluster(9)[:2]
('aws-p5', 2)
>>> fixture_cluster(3)[0] is None
True
"""
from __future__ import annotations

import numpy as np

from commlab.cluster.algorithms import CLUSTER_OPS
from commlab.cluster.model import cluster_cost
from commlab.cluster.presets import preset

_SAME_NET = "p4d and p4de share the network (4 x 100 Gb/s EFA); the log does not say which it ran on"
#: shipped log number -> (preset, nodes, note)
_FIXTURES = {
    7: ("aws-p5", 1, "one p5.48xlarge"),
    8: ("aws-p4de", 2, "2 p4de.24xlarge"),
    9: ("aws-p5", 2, "2 p5.48xlarge"),
    10: ("aws-p4de", 2, f"2 nodes of p4d or p4de: {_SAME_NET}"),
    11: ("oci-a100-roce", 2, "2 OCI BM.GPU4.8"),
    12: ("gcp-a3-mega", 2, "2 GCP a3-megagpu-8g"),
    13: ("gke-a4", 2, "2 GCP a4-highgpu-8g"),
}
_PARTIAL = "the run uses part of one node; the cluster model describes whole nodes (the predicted column covers it)"


def fixture_cluster(number: int) -> tuple[str | None, int | None, str]:
    """(preset name, nodes, note) of a shipped log, or (None, None, why not)."""
    if int(number) in _FIXTURES:
        return _FIXTURES[int(number)]
    return None, None, _PARTIAL


def cluster_rows(collective: str, sizes, preset_name: str, nodes: int, n_ranks: int | None = None):
    """Per row: (time_us, algorithm, bottleneck) of the cluster model for a log of ``collective``; None when
    the model does not cost it. ``n_ranks`` (the log's) must match the cluster's GPUs."""
    if collective not in CLUSTER_OPS:
        return None
    c = preset(preset_name)
    if n_ranks is not None and n_ranks != nodes * c.gpus_per_node:
        return None
    s = np.asarray(sizes, dtype=float)
    cost = cluster_cost(collective, s, c, nodes)
    picks = cost.nccl_pick or ("direct",) * len(s)
    times = np.array([cost[a].ran_time_s[i] for i, a in enumerate(picks)]) * 1e6
    bottlenecks = [cost[a].ran_bottleneck[i] for i, a in enumerate(picks)]
    return times, list(picks), bottlenecks
