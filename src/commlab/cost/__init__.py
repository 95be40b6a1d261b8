"""Cost models: alpha-beta times per algorithm (vectorised), algbw/busbw, fitting, crossovers, and two models of
real NCCL curves:

* the protocol-aware fitted model (:mod:`commlab.cost.protocol_fit`): a measured curve as up to three regimes
  (LL, LL128, Simple), each ``alpha + S / B``, with fitted boundaries;
* the predictive model (:mod:`commlab.cost.nccl_predict`): NCCL's tuner replayed on a described
  :class:`~commlab.cost.machine.Machine` (GPU, NVLink or PCIe, GPUs per node, NICs, nodes).

:mod:`commlab.cost.scorecard` holds both against real nccl-tests logs. NCCL's simplified teaching model lives in
:mod:`commlab.cost.nccl_model`.
"""
from commlab.cost.alpha_beta import (
    ALL_REDUCE_ALGOS, all_reduce_time_s, p2p_time_s, double_tree_all_reduce_time_s, naive_all_reduce_time_s,
    pipelined_tree_all_reduce_time_s, recursive_doubling_all_reduce_time_s, ring_all_gather_time_s,
    ring_all_reduce_time_s, ring_reduce_scatter_time_s, tree_all_reduce_time_s, tree_depth,
)
from commlab.cost.bandwidth import algbw_GBps, busbw_GBps, collective_time_s
from commlab.cost.fit import AlphaBeta, crossover_nbytes, fit_alpha_beta
from commlab.cost.machine import Machine, parse_machine
from commlab.cost.nccl_model import Choice, default_bus_bw_GBps, nccl_choose, nccl_time_us, switch_points
from commlab.cost.nccl_predict import Prediction, nccl_tuning_table, predict
from commlab.cost.protocol_fit import ProtocolFit, Regime, fit_protocol_model

__all__ = [
    "ALL_REDUCE_ALGOS", "AlphaBeta", "Choice", "default_bus_bw_GBps", "nccl_choose", "nccl_time_us",
    "switch_points", "p2p_time_s", "algbw_GBps", "all_reduce_time_s", "busbw_GBps", "collective_time_s",
    "crossover_nbytes", "double_tree_all_reduce_time_s", "fit_alpha_beta", "naive_all_reduce_time_s",
    "pipelined_tree_all_reduce_time_s", "recursive_doubling_all_reduce_time_s", "ring_all_gather_time_s",
    "ring_all_reduce_time_s", "ring_reduce_scatter_time_s", "tree_all_reduce_time_s", "tree_depth",
    "Machine", "parse_machine", "Prediction", "predict", "nccl_tuning_table", "ProtocolFit", "Regime",
    "fit_protocol_model",
]

# Rabenseifner's halving-doubling all-reduce and log-step (PAT-style) all-gather / reduce-scatter (chapter 06)
from commlab.cost.halving_doubling import (  # noqa: E402
    log_step_all_gather_time_s, log_step_reduce_scatter_time_s, rabenseifner_all_reduce_time_s,
)

__all__ += ["log_step_all_gather_time_s", "log_step_reduce_scatter_time_s", "rabenseifner_all_reduce_time_s"]
