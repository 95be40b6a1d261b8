"""The memory of a layout's busiest pipeline stage (chapter 09): its share of the model states under its ZeRO
stage (:mod:`commlab.parallelism.memory`; under ZeRO-2/3 also the whole gradients of the layers being reduced,
under ZeRO-3 the whole weights of the layers being gathered), the activations of the micro-batches 1F1B keeps
in flight there, and on the last stage the logits.

**16-bit gradients keep an FP32 copy beside the master weights.** The optimizer steps in FP32, so where the
gradients are reduced in 16 bits (``grad_reduce="bf16"``) the mixed-precision optimizer gives every master
weight an FP32 gradient of its own: 4 more bytes per parameter, sharded as the optimizer states are. Megatron-LM's
``FP16OptimizerWithFP16Params._copy_model_grads_to_main_grads`` allocates it at the first step
(``main_param.grad = torch.empty_like(main_param)``) and its ``zero_grad`` never frees it (NVIDIA/Megatron-LM,
megatron/optimizer/optimizer.py at 0076441, 2021); DeepSpeed's ZeRO-1/2 keeps it for its partition only. With FP32
gradients the optimizer reads them where they are and there is no copy.
"""
from __future__ import annotations

from commlab.parallelism.memory import BYTES_OPTIMIZER, BYTES_WEIGHTS, MemoryBreakdown, activation_bytes_per_layer
from commlab.parallelism.plan_config import PlanConfig
from commlab.parallelism.stages import stage_layers

MASTER_GRAD_NBYTES = 4
"""An FP32 gradient per master weight where the gradients themselves are 16-bit (module docstring)."""
UNSHARDED_GRAD_LAYERS = 2
"""Layers whose whole gradient a ZeRO-2/3 (FSDP) GPU holds at once: the one being reduce-scattered and the one its
backward is producing. FSDP reduce-scatters each unit's gradient after that unit's backward, and frees the
unsharded gradient only then (Zhao et al. 2023, 'PyTorch FSDP', arXiv 2304.11277, sec. 3.3 and 4.2, one unit a
transformer layer as in Llama 3 and torchtitan)."""
LOGIT_NBYTES = 4
"""The last stage keeps its logits in FP32 for the loss (Megatron-LM's vocab-parallel cross-entropy)."""


def _in_flight(pp: int, m: int, vp: int, stage: int) -> float:
    """Micro-batches whose activations stage ``stage`` of 1F1B holds at once: min(m, p - stage); interleaving
    adds (p-1)/(p v) on the first stage (Narayanan et al. SC21, sec. 2.2.2)."""
    held = float(min(m, pp - stage))
    if vp > 1 and stage == 0:
        held *= 1 + (pp - 1) / (pp * vp)
    return held


def memory_of(cfg: PlanConfig, tp: int, cp: int, pp: int, dp: int, zero: int, vp: int = 1, micro_batch: int = 1,
              micro_batches: int = 1) -> MemoryBreakdown:
    """The memory of the stage that needs most (the first holds the most micro-batches, the last the logits)."""
    spec, group = cfg.model, dp * cp
    counts = stage_layers(spec.n_layers, pp)
    recompute = cfg.recompute
    if recompute == "none" and cfg.attention == "flash":
        recompute = "selective"                # FlashAttention keeps no scores: Korthikanti's selective count
    per_layer = activation_bytes_per_layer(cfg.seq_len, micro_batch, spec.hidden, spec.n_heads, tp=tp,
                                           sp=cfg.sequence_parallel, cp=cp, recompute=recompute)
    worst = None
    for i in sorted({0, min(1, pp - 1), pp - 1}):
        first, last = i == 0, i == pp - 1
        n = (counts[i] * spec.layer_params + spec.embedding_params * (int(first) + int(last))) / tp
        weights, grads, optim = BYTES_WEIGHTS * n, cfg.grad_nbytes * n, BYTES_OPTIMIZER * n
        if cfg.grad_nbytes < MASTER_GRAD_NBYTES:   # 16-bit gradients: the optimizer's FP32 copy of them
            optim += MASTER_GRAD_NBYTES * n
        if zero >= 1:
            optim /= group
        if zero >= 2:                          # sharded, but a layer's whole gradient lives until its reduce-scatter
            grads = grads / group + UNSHARDED_GRAD_LAYERS * cfg.grad_nbytes * spec.layer_params / tp
        if zero >= 3:
            weights = weights / group + 2 * BYTES_WEIGHTS * spec.layer_params / tp
        acts = per_layer * counts[i] * _in_flight(pp, micro_batches, vp, i)
        if last:
            acts += micro_batch * cfg.seq_len / cp * spec.vocab / tp * LOGIT_NBYTES
        mem = MemoryBreakdown(weights, grads, optim, acts)
        if worst is None or mem.total > worst.total:
            worst = mem
    assert worst is not None
    return worst
