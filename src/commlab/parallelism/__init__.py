"""Parallelism strategies seen through the data they move (chapter 09).

* :mod:`~commlab.parallelism.config`: ``ModelConfig`` and ``ParallelConfig``;
* :mod:`~commlab.parallelism.strategies`: DP, ZeRO 1-3/FSDP, TP, SP, PP, EP as :class:`Traffic` per step;
* :mod:`~commlab.parallelism.traffic`: ``TrafficItem`` / ``Traffic``: bytes per rank and time on a link;
* :mod:`~commlab.parallelism.pipeline`: the pipeline bubble, and GPipe / 1F1B schedules laid out in time;
* :mod:`~commlab.parallelism.hybrid`: hybrid sharding (HSDP): shard inside a node, replicate across nodes;
* :mod:`~commlab.parallelism.context`: context parallelism (ring attention's send/recv, Ulysses' all-to-alls);
* :mod:`~commlab.parallelism.worked`: the chapter's worked examples (DP sync of 7B/70B, TP per layer);
* :mod:`~commlab.parallelism.memory`: model states (ZeRO) and activations (Korthikanti et al.) per GPU;
* :mod:`~commlab.parallelism.catalogue`: the GPUs and models the planner knows;
* :mod:`~commlab.parallelism.estimate` and :mod:`~commlab.parallelism.planner`: every layout of a machine,
  refused when it does not fit, ranked by its estimated step (``commlab plan``).

Pure layer: numpy only.
"""
from commlab.parallelism.catalogue import GpuSpec, ModelSpec, gpu, gpu_names, model, model_names
from commlab.parallelism.config import CP_KINDS, RECOMPUTE, ModelConfig, ParallelConfig
from commlab.parallelism.context import cp_traffic, kv_block_nbytes
from commlab.parallelism.hybrid import hsdp_traffic
from commlab.parallelism.memory import (
    MemoryBreakdown, activation_bytes_per_layer, in_flight_micro_batches, model_state_bytes,
)
from commlab.parallelism.pipeline import (
    KINDS, Interval, bubble_fraction, bubble_ratio, idle_share, peak_in_flight, pipeline_schedule, pipeline_step_s,
)
from commlab.parallelism.strategies import dp_traffic, ep_traffic, pp_traffic, tp_traffic, traffic
from commlab.parallelism.traffic import PRIMITIVES, Traffic, TrafficItem, sent_per_rank_factor
from commlab.parallelism.worked import gradient_sync, tp_all_reduce
from commlab.parallelism.planner import Layout, Plan, PlanConfig, plan

__all__ = [
    "CP_KINDS", "GpuSpec", "Layout", "MemoryBreakdown", "ModelSpec", "Plan", "PlanConfig", "RECOMPUTE",
    "activation_bytes_per_layer", "cp_traffic", "hsdp_traffic", "gpu", "gpu_names", "in_flight_micro_batches",
    "kv_block_nbytes", "model", "model_names", "model_state_bytes", "plan",
    "KINDS", "PRIMITIVES", "Interval", "ModelConfig", "ParallelConfig", "Traffic", "TrafficItem", "bubble_fraction",
    "bubble_ratio", "dp_traffic", "ep_traffic", "gradient_sync", "idle_share", "peak_in_flight", "pipeline_schedule",
    "pipeline_step_s", "pp_traffic", "sent_per_rank_factor", "tp_all_reduce", "tp_traffic", "traffic",
]
