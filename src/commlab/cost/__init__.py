"""Cost models a learner reads: alpha-beta times per algorithm (vectorised), algbw and busbw, the alpha-beta
fit and crossovers, and the protocol-aware fit of a measured curve.

* :mod:`commlab.cost.alpha_beta`: ring, tree, double tree, naive and recursive-doubling all-reduce, the ring
  halves, a point-to-point message;
* :mod:`commlab.cost.halving_doubling`: Rabenseifner's halving-doubling all-reduce and the log-step (PAT-style)
  all-gather and reduce-scatter (chapter 06);
* :mod:`commlab.cost.bandwidth`: algbw, busbw, any collective's time on a catalogue link;
* :mod:`commlab.cost.fit`: the alpha-beta least-squares fit and the size where two algorithms cross;
* :mod:`commlab.cost.protocol_fit`: a measured curve as up to three regimes (LL, LL128, Simple), each
  ``alpha + S / B``, with fitted boundaries.

Importing this package loads only those formulas. NCCL's tuner replayed on a described machine is
:mod:`commlab.tuner`; both models held against real logs is :mod:`commlab.scorecard`.
"""
from commlab.cost.alpha_beta import (
    ALL_REDUCE_ALGOS, all_reduce_time_s, double_tree_all_reduce_time_s, naive_all_reduce_time_s, p2p_time_s,
    pipelined_tree_all_reduce_time_s, recursive_doubling_all_reduce_time_s, ring_all_gather_time_s,
    ring_all_reduce_time_s, ring_reduce_scatter_time_s, tree_all_reduce_time_s, tree_depth,
)
from commlab.cost.bandwidth import algbw_GBps, busbw_GBps, collective_time_s
from commlab.cost.fit import AlphaBeta, crossover_nbytes, fit_alpha_beta
from commlab.cost.halving_doubling import (
    log_step_all_gather_time_s, log_step_reduce_scatter_time_s, rabenseifner_all_reduce_time_s,
)
from commlab.cost.protocol_fit import ProtocolFit, Regime, fit_protocol_model

__all__ = [
    "ALL_REDUCE_ALGOS", "AlphaBeta", "ProtocolFit", "Regime", "algbw_GBps", "all_reduce_time_s", "busbw_GBps",
    "collective_time_s", "crossover_nbytes", "double_tree_all_reduce_time_s", "fit_alpha_beta", "fit_protocol_model",
    "log_step_all_gather_time_s", "log_step_reduce_scatter_time_s", "naive_all_reduce_time_s", "p2p_time_s",
    "pipelined_tree_all_reduce_time_s", "rabenseifner_all_reduce_time_s", "recursive_doubling_all_reduce_time_s",
    "ring_all_gather_time_s", "ring_all_reduce_time_s", "ring_reduce_scatter_time_s", "tree_all_reduce_time_s",
    "tree_depth",
]
