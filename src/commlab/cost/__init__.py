"""Cost models: alpha-beta times per algorithm (vectorised), algbw/busbw, fitting, crossovers.

NCCL's own (simplified) tuning model lives in :mod:`commlab.cost.nccl_model`.
"""
from commlab.cost.alpha_beta import (
    ALL_REDUCE_ALGOS, all_reduce_time_s, p2p_time_s, double_tree_all_reduce_time_s, naive_all_reduce_time_s,
    pipelined_tree_all_reduce_time_s, recursive_doubling_all_reduce_time_s, ring_all_gather_time_s,
    ring_all_reduce_time_s, ring_reduce_scatter_time_s, tree_all_reduce_time_s, tree_depth,
)
from commlab.cost.bandwidth import algbw_GBps, busbw_GBps, collective_time_s
from commlab.cost.fit import AlphaBeta, crossover_nbytes, fit_alpha_beta
from commlab.cost.nccl_model import Choice, default_bus_bw_GBps, nccl_choose, nccl_time_us, switch_points

__all__ = [
    "ALL_REDUCE_ALGOS", "AlphaBeta", "Choice", "default_bus_bw_GBps", "nccl_choose", "nccl_time_us",
    "switch_points", "p2p_time_s", "algbw_GBps", "all_reduce_time_s", "busbw_GBps", "collective_time_s",
    "crossover_nbytes", "double_tree_all_reduce_time_s", "fit_alpha_beta", "naive_all_reduce_time_s",
    "pipelined_tree_all_reduce_time_s", "recursive_doubling_all_reduce_time_s", "ring_all_gather_time_s",
    "ring_all_reduce_time_s", "ring_reduce_scatter_time_s", "tree_all_reduce_time_s", "tree_depth",
]

# Rabenseifner's halving-doubling all-reduce and log-step (PAT-style) all-gather / reduce-scatter (chapter 06)
from commlab.cost.halving_doubling import (  # noqa: E402
    log_step_all_gather_time_s, log_step_reduce_scatter_time_s, rabenseifner_all_reduce_time_s,
)

__all__ += ["log_step_all_gather_time_s", "log_step_reduce_scatter_time_s", "rabenseifner_all_reduce_time_s"]
