"""Each parallelism strategy as the data it moves in one optimizer step (chapter 09).

Seen from one rank that takes part in everything (a middle pipeline stage). Per step there are m
micro-batches (``ModelConfig.n_micro_batches``) of b sequences of s tokens, each rank of a context-parallel
group holding s/c of them; A = b (s/c) h dtype_nbytes is one micro-batch's hidden states on a rank; a pipeline
stage holds L/p layers and P/(t p) of the parameters.

| strategy | primitive (what) | when | S per call | calls per step |
| --- | --- | --- | --- | --- |
| DP (DDP) | all_reduce (gradients) | once per step (no_sync between micro-batches) | P/(t p) | 1 |
| ZeRO-1 | reduce_scatter (gradients) | once per step | P/(t p) | 1 |
|  | all_gather (parameters) | after the optimizer step | P/(t p) | 1 |
| ZeRO-2 | reduce_scatter (gradients) | every micro-batch, during its backward | P/(t p) | m |
|  | all_gather (parameters) | after the optimizer step | P/(t p) | 1 |
| ZeRO-3/FSDP | all_gather (parameters) | per layer, before its forward | P/(t L) | L/p x m |
|  | all_gather (parameters) | per layer, before its backward | P/(t L) | L/p x m |
|  | reduce_scatter (gradients) | per layer, after its backward | P/(t L) | L/p x m |
| TP (Megatron) | all_reduce (activations) | 2 per layer, forward | A | 2 L/p x m |
|  | all_reduce (their gradients) | 2 per layer, backward | A | 2 L/p x m |
|  | all_reduce (activations) | full recomputation only: the forward's, again | A | 2 L/p x m |
| SP (with TP) | all_gather + reduce_scatter | instead of each TP all_reduce | A | 2 L/p x m each |
| CP | see :mod:`commlab.parallelism.context` | per layer | K, V blocks | |
| PP | sendrecv (activations) | per micro-batch, forward | A (A/t with SP) | m v |
|  | sendrecv (their gradients) | per micro-batch, backward | A (A/t with SP) | m v |
| EP (MoE) | all_to_all (tokens) | 2 per MoE layer: dispatch, combine | b (s/c) k h dtype_nbytes | 2 M/p x m |
|  | all_to_all (their gradients) | 2 per MoE layer, backward | b (s/c) k h dtype_nbytes | 2 M/p x m |

P is in bytes (n_params x dtype_nbytes), t = tp, p = pp, c = cp, L = n_layers, M = n_moe_layers, k = top_k,
v = pp_virtual. The data-parallel collectives run over the dp x cp ranks that hold the same weights.

Gradient accumulation (m > 1): DDP and ZeRO-1 keep whole gradients, so they accumulate locally and reduce once
per step (DDP's ``no_sync``). ZeRO-2 keeps only its shard of the gradients, so it must reduce-scatter after
every micro-batch's backward: DeepSpeed refuses ``no_sync`` under gradient partitioning ("no_sync context
manager is incompatible with gradient partitioning logic of ZeRO stage 2",
https://github.com/microsoft/DeepSpeed/blob/38327e07f6cd39b63418f60cedd1651b0be3e7c3/deepspeed/runtime/engine.py#L2073-L2074),
and FSDP's SHARD_GRAD_OP and FULL_SHARD likewise reduce-scatter every backward (inside ``no_sync`` FSDP keeps
unsharded gradients instead, which gives the memory back). So ZeRO-2 moves m times ZeRO-1's reduce-scatter.

Sources: ZeRO, Rajbhandari et al. SC20 (sec. 7: stages 1-2 move 2P like DP, stage 3 3P); Megatron-LM,
Shoeybi et al. 2019 (fig. 4: f and g, two all-reduces per layer in forward and two in backward); sequence
parallelism and recomputation, Korthikanti et al. 2022, arXiv 2205.05198 (all-gather + reduce-scatter: the
same volume as the all-reduce they replace; full recomputation repeats the forward's all-reduces); pipeline
p2p, Narayanan et al. SC21; EP all-to-all, Lepikhin et al. 2020 (GShard) and Fedus et al. 2021.

Simplified: expert parameters are counted with the dense ones; routing is uniform.
"""
from __future__ import annotations

from commlab.errors import CommlabError
from commlab.parallelism.config import ModelConfig, ParallelConfig
from commlab.parallelism.context import cp_traffic
from commlab.parallelism.traffic import Traffic, TrafficItem


def _layers_per_stage(model: ModelConfig, par: ParallelConfig) -> int:
    if model.n_layers % par.pp:
        raise CommlabError(f"n_layers={model.n_layers} must be divisible by pp={par.pp} (layers per stage)")
    return model.n_layers // par.pp


def _shard_nbytes(model: ModelConfig, par: ParallelConfig) -> int:
    """Parameter (= gradient) bytes one data-parallel rank is responsible for: P dtype / (tp pp)."""
    return round(model.params_nbytes / (par.tp * par.pp))


def _rank_activation_nbytes(model: ModelConfig, par: ParallelConfig) -> int:
    """One micro-batch's hidden states on one rank: b (s / cp) h dtype_nbytes."""
    return round(model.activation_nbytes / par.cp)


def dp_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Data parallelism with ZeRO stage ``par.zero`` (0: plain DDP); empty when dp x cp == 1."""
    group = par.grad_group
    if group == 1:
        return Traffic(())
    grads, m = _shard_nbytes(model, par), model.n_micro_batches
    if par.zero == 0:
        return Traffic((TrafficItem("DP", "all_reduce", "gradients",
                                    "once per step, during the last backward, bucket by bucket (no_sync before)",
                                    grads, 1, group),))
    if par.zero == 1:
        return Traffic((TrafficItem("ZeRO-1", "reduce_scatter", "gradients", "once per step, during the last backward",
                                    grads, 1, group),
                        TrafficItem("ZeRO-1", "all_gather", "parameters", "after the optimizer step", grads, 1, group)))
    if par.zero == 2:
        return Traffic((TrafficItem("ZeRO-2", "reduce_scatter", "gradients",
                                    "every micro-batch, during its backward (sharded gradients: no no_sync)",
                                    grads, m, group),
                        TrafficItem("ZeRO-2", "all_gather", "parameters", "after the optimizer step", grads, 1, group)))
    return _zero3_traffic(model, par)


def _zero3_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    layers = _layers_per_stage(model, par)
    per_layer = round(_shard_nbytes(model, par) / layers)
    calls, group = layers * model.n_micro_batches, par.grad_group
    return Traffic((
        TrafficItem("ZeRO-3", "all_gather", "parameters", "per layer, before its forward", per_layer, calls, group),
        TrafficItem("ZeRO-3", "all_gather", "parameters", "per layer, before its backward", per_layer, calls, group),
        TrafficItem("ZeRO-3", "reduce_scatter", "gradients", "per layer, after its backward", per_layer, calls,
                    group),
    ))


def tp_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Megatron TP: 2 all-reduces of A per layer in forward, 2 in backward (2 more under full recomputation);
    the SP variant (all-gather + reduce-scatter) when ``par.sp``."""
    if par.tp == 1:
        return Traffic(())
    calls = 2 * _layers_per_stage(model, par) * model.n_micro_batches
    act = _rank_activation_nbytes(model, par)
    phases = [("forward", "activations"), ("backward", "activation gradients")]
    if par.recompute == "full":
        phases.append(("recomputed forward (full recomputation)", "activations"))
    if par.sp:
        return Traffic(tuple(TrafficItem("SP", op, what, f"2 per layer, {phase}", act, calls, par.tp)
                             for phase, what in phases for op in ("all_gather", "reduce_scatter")))
    return Traffic(tuple(TrafficItem("TP", "all_reduce", what, f"2 per layer, {phase}", act, calls, par.tp)
                         for phase, what in phases))


def pp_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Activations to the next stage and their gradients back, per micro-batch (v times when interleaved)."""
    if par.pp == 1:
        return Traffic(())
    nbytes = round(_rank_activation_nbytes(model, par) / (par.tp if par.sp else 1))
    calls = model.n_micro_batches * par.pp_virtual
    return Traffic((
        TrafficItem("PP", "sendrecv", "activations", "per micro-batch, forward, to the next stage", nbytes, calls, 2),
        TrafficItem("PP", "sendrecv", "activation gradients", "per micro-batch, backward, to the previous stage",
                    nbytes, calls, 2),
    ))


def ep_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Two all-to-alls per MoE layer (dispatch, combine) in forward and two in backward, over the ``par.ep``
    ranks of an expert-parallel group; each carries the b s k h dtype_nbytes bytes of routed tokens."""
    if par.ep == 1 or model.n_moe_layers == 0:
        return Traffic(())
    if model.n_moe_layers % par.pp:
        raise CommlabError(f"n_moe_layers={model.n_moe_layers} must be divisible by pp={par.pp}")
    calls = 2 * (model.n_moe_layers // par.pp) * model.n_micro_batches
    tokens = _rank_activation_nbytes(model, par) * model.top_k
    return Traffic((
        TrafficItem("EP", "all_to_all", "tokens", "2 per MoE layer, forward (dispatch, combine)", tokens, calls,
                    par.ep),
        TrafficItem("EP", "all_to_all", "token gradients", "2 per MoE layer, backward", tokens, calls, par.ep),
    ))


def traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Everything one rank communicates in a step under ``par``: DP/ZeRO + TP/SP + CP + PP + EP.

    >>> model = ModelConfig(n_params=7 * 10**9, hidden=4096, n_layers=32, seq_len=4096)
    >>> [(i.strategy, i.primitive) for i in traffic(model, ParallelConfig(dp=4, tp=2))]
    [('DP', 'all_reduce'), ('TP', 'all_reduce'), ('TP', 'all_reduce')]
    """
    return (dp_traffic(model, par) + tp_traffic(model, par) + cp_traffic(model, par) + pp_traffic(model, par)
            + ep_traffic(model, par))
