"""Redo the choice of a calibrated constant on the run it was chosen on (:mod:`commlab.calibration` names the run):
a grid of candidate values, each scored as the scorecard scores a log, and the one with the least error."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from commlab.errors import CommlabError
from commlab.scorecard.scorecard import score_file


def best_net_latency_us(path, desc: str, grid_us) -> tuple[float, list[float]]:
    """Redo the choice of a network's per-hop latency on a calibration run: the value of ``grid_us`` whose
    prediction (``desc`` with ``net_latency_us`` set to it) has the least median time error on the log at
    ``path``; returns it and the median errors along the grid (how networks.TCPXO_HOP_US was chosen)."""
    from commlab.tuner.machine import parse_machine

    medians = []
    for x in grid_us:
        median = score_file(path, parse_machine(f"{desc},net_latency_us={x:g}")).predicted_median
        if median is None:
            raise CommlabError(f"the log {str(path)!r} has no prediction to choose a latency on ({desc})")
        medians.append(median)
    return float(grid_us[int(np.argmin(medians))]), medians


def best_ring_step_us(path, desc: str, grid_us) -> tuple[float, list[float]]:
    """Redo the choice of :data:`commlab.tuner.networks.RING_NET_STEP_US` on its run: the value of ``grid_us`` whose
    prediction has the least mean relative time error over the log's rows, with ``desc``'s network steps costing that
    much more; returns it and the mean errors along the grid. The run is to be one NCCL runs as a Ring at every size
    (then ``net_latency_us``, which every network step pays, is a ring step's extra alone); another is refused."""
    from commlab.nccl.parse import parse_log
    from commlab.scorecard.calibration import predict_log
    from commlab.tuner.machine import parse_machine

    text = Path(path).read_text(encoding="utf-8")
    log = parse_log(text)
    rows = [(r.size_bytes, r.fastest.time_us) for r in log.rows if r.size_bytes > 0]
    s, t = np.array(rows, dtype=float).T
    means = []
    for x in grid_us:
        p = predict_log(log, text, s, parse_machine(f"{desc},net_latency_us={x:g}")).prediction
        if set(np.atleast_1d(p.algo)) != {"Ring"}:
            raise CommlabError(f"the log {str(path)!r} is not all Ring on {desc}: a ring step's cost is chosen on "
                               f"a run whose every size is a Ring")
        means.append(float(np.mean(np.abs(p.time_s * 1e6 / t - 1.0))))
    return float(grid_us[int(np.argmin(means))]), means
