"""Parallelism strategies seen through the data they move (chapter 09).

* :mod:`~commlab.parallelism.config`: ``ModelConfig`` and ``ParallelConfig``;
* :mod:`~commlab.parallelism.strategies`: DP, ZeRO 1-3/FSDP, TP, SP, PP, EP as :class:`Traffic` per step;
* :mod:`~commlab.parallelism.traffic`: ``TrafficItem`` / ``Traffic``: bytes per rank and time on a link;
* :mod:`~commlab.parallelism.pipeline`: the pipeline bubble, and GPipe / 1F1B schedules laid out in time;
* :mod:`~commlab.parallelism.worked`: the chapter's worked examples (DP sync of 7B/70B, TP per layer).

Pure layer: numpy only.
"""
from commlab.parallelism.config import ModelConfig, ParallelConfig
from commlab.parallelism.pipeline import (
    KINDS, Interval, bubble_fraction, bubble_ratio, idle_share, peak_in_flight, pipeline_schedule, pipeline_step_s,
)
from commlab.parallelism.strategies import dp_traffic, ep_traffic, pp_traffic, tp_traffic, traffic
from commlab.parallelism.traffic import PRIMITIVES, Traffic, TrafficItem, sent_per_rank_factor
from commlab.parallelism.worked import gradient_sync, tp_all_reduce

__all__ = [
    "KINDS", "PRIMITIVES", "Interval", "ModelConfig", "ParallelConfig", "Traffic", "TrafficItem", "bubble_fraction",
    "bubble_ratio", "dp_traffic", "ep_traffic", "gradient_sync", "idle_share", "peak_in_flight", "pipeline_schedule",
    "pipeline_step_s", "pp_traffic", "sent_per_rank_factor", "tp_all_reduce", "tp_traffic", "traffic",
]
