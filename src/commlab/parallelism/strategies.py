"""Each parallelism strategy as the data it moves in one optimizer step (chapter 09).

Seen from one rank that takes part in everything (a middle pipeline stage). Per step there are m
micro-batches (``ModelConfig.n_micro_batches``) of b sequences of s tokens; A = b s h dtype_nbytes is one
micro-batch's hidden states; a pipeline stage holds L/p layers and P/(t p) of the parameters.

| strategy | primitive (what) | when | S per call | calls per step |
| --- | --- | --- | --- | --- |
| DP (DDP) | all_reduce (gradients) | after backward | P/(t p) | 1 |
| ZeRO-1/2 | reduce_scatter (gradients) | after backward | P/(t p) | 1 |
|  | all_gather (parameters) | after the optimizer step | P/(t p) | 1 |
| ZeRO-3/FSDP | all_gather (parameters) | per layer, before its forward | P/(t L) | L/p x m |
|  | all_gather (parameters) | per layer, before its backward | P/(t L) | L/p x m |
|  | reduce_scatter (gradients) | per layer, after its backward | P/(t L) | L/p x m |
| TP (Megatron) | all_reduce (activations) | 2 per layer, forward | A | 2 L/p x m |
|  | all_reduce (their gradients) | 2 per layer, backward | A | 2 L/p x m |
| SP (with TP) | all_gather + reduce_scatter | instead of each TP all_reduce | A | 2 L/p x m each |
| PP | sendrecv (activations) | per micro-batch, forward | A (A/t with SP) | m v |
|  | sendrecv (their gradients) | per micro-batch, backward | A (A/t with SP) | m v |
| EP (MoE) | all_to_all (tokens) | 2 per MoE layer: dispatch, combine | b s k h dtype_nbytes | 2 E/p x m |
|  | all_to_all (their gradients) | 2 per MoE layer, backward | b s k h dtype_nbytes | 2 E/p x m |

P is in bytes (n_params x dtype_nbytes), t = tp, p = pp, L = n_layers, E = n_moe_layers, k = top_k,
v = pp_virtual.

Sources: ZeRO, Rajbhandari et al. SC20 (sec. 7: stages 1-2 move 2P like DP, stage 3 3P); Megatron-LM,
Shoeybi et al. 2019 (fig. 4: f and g, two all-reduces per layer in forward and two in backward); sequence
parallelism, Korthikanti et al. 2022 (all-gather + reduce-scatter: the same volume as the all-reduce they
replace); pipeline p2p, Narayanan et al. SC21; EP all-to-all, Lepikhin et al. 2020 (GShard) and Fedus et al. 2021.

Simplified: DP/ZeRO-1/2 synchronise once per step (gradient accumulation under no_sync); ZeRO-3 re-gathers
for every micro-batch and reduce-scatters every micro-batch; activation recomputation (which repeats the
forward TP all-reduces) is left out; expert parameters are counted with the dense ones; routing is uniform.
"""
from __future__ import annotations

from commlab.errors import CommlabError
from commlab.parallelism.config import ModelConfig, ParallelConfig
from commlab.parallelism.traffic import Traffic, TrafficItem


def _layers_per_stage(model: ModelConfig, par: ParallelConfig) -> int:
    if model.n_layers % par.pp:
        raise CommlabError(f"n_layers={model.n_layers} must be divisible by pp={par.pp} (layers per stage)")
    return model.n_layers // par.pp


def _shard_nbytes(model: ModelConfig, par: ParallelConfig) -> int:
    """Parameter (= gradient) bytes one data-parallel rank is responsible for: P dtype / (tp pp)."""
    return round(model.params_nbytes / (par.tp * par.pp))


def dp_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Data parallelism with ZeRO stage ``par.zero`` (0: plain DDP); empty when dp == 1."""
    if par.dp == 1:
        return Traffic(())
    grads = _shard_nbytes(model, par)
    if par.zero == 0:
        return Traffic((TrafficItem("DP", "all_reduce", "gradients", "once per step, during backward, bucket by bucket (DDP buckets)",
                                    grads, 1, par.dp),))
    if par.zero in (1, 2):
        name = f"ZeRO-{par.zero}"
        when = "once per step, after backward" if par.zero == 1 else "during backward, bucket by bucket"
        return Traffic((TrafficItem(name, "reduce_scatter", "gradients", when, grads, 1, par.dp),
                        TrafficItem(name, "all_gather", "parameters", "after the optimizer step", grads, 1, par.dp)))
    return _zero3_traffic(model, par)


def _zero3_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    layers = _layers_per_stage(model, par)
    per_layer = round(_shard_nbytes(model, par) / layers)
    calls = layers * model.n_micro_batches
    return Traffic((
        TrafficItem("ZeRO-3", "all_gather", "parameters", "per layer, before its forward", per_layer, calls, par.dp),
        TrafficItem("ZeRO-3", "all_gather", "parameters", "per layer, before its backward", per_layer, calls, par.dp),
        TrafficItem("ZeRO-3", "reduce_scatter", "gradients", "per layer, after its backward", per_layer, calls,
                    par.dp),
    ))


def tp_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Megatron TP: 2 all-reduces of A per layer in forward, 2 in backward; SP variant when ``par.sp``."""
    if par.tp == 1:
        return Traffic(())
    calls = 2 * _layers_per_stage(model, par) * model.n_micro_batches
    act = model.activation_nbytes
    if par.sp:
        return Traffic(tuple(
            TrafficItem("SP", op, what, f"2 per layer, {phase}", act, calls, par.tp)
            for phase, what in (("forward", "activations"), ("backward", "activation gradients"))
            for op in ("all_gather", "reduce_scatter")))
    return Traffic((
        TrafficItem("TP", "all_reduce", "activations", "2 per layer, forward", act, calls, par.tp),
        TrafficItem("TP", "all_reduce", "activation gradients", "2 per layer, backward", act, calls, par.tp),
    ))


def pp_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Activations to the next stage and their gradients back, per micro-batch (v times when interleaved)."""
    if par.pp == 1:
        return Traffic(())
    nbytes = round(model.activation_nbytes / (par.tp if par.sp else 1))
    calls = model.n_micro_batches * par.pp_virtual
    return Traffic((
        TrafficItem("PP", "sendrecv", "activations", "per micro-batch, forward, to the next stage", nbytes, calls, 2),
        TrafficItem("PP", "sendrecv", "activation gradients", "per micro-batch, backward, to the previous stage",
                    nbytes, calls, 2),
    ))


def ep_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Two all-to-alls per MoE layer (dispatch, combine) in forward and two in backward."""
    if par.ep == 1 or model.n_moe_layers == 0:
        return Traffic(())
    if model.n_moe_layers % par.pp:
        raise CommlabError(f"n_moe_layers={model.n_moe_layers} must be divisible by pp={par.pp}")
    calls = 2 * (model.n_moe_layers // par.pp) * model.n_micro_batches
    tokens = model.micro_batch * model.seq_len * model.top_k * model.hidden * model.dtype_nbytes
    return Traffic((
        TrafficItem("EP", "all_to_all", "tokens", "2 per MoE layer, forward (dispatch, combine)", tokens, calls,
                    par.ep),
        TrafficItem("EP", "all_to_all", "token gradients", "2 per MoE layer, backward", tokens, calls, par.ep),
    ))


def traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Everything one rank communicates in a step under ``par``: DP/ZeRO + TP/SP + PP + EP.

    >>> model = ModelConfig(n_params=7 * 10**9, hidden=4096, n_layers=32, seq_len=4096)
    >>> [(i.strategy, i.primitive) for i in traffic(model, ParallelConfig(dp=4, tp=2))]
    [('DP', 'all_reduce'), ('TP', 'all_reduce'), ('TP', 'all_reduce')]
    """
    return dp_traffic(model, par) + tp_traffic(model, par) + pp_traffic(model, par) + ep_traffic(model, par)
