"""One layout of a plan, refused with its reason or estimated at its fastest micro-batch that fits (chapter 09).

The global batch of B = T / s sequences splits over the d replicas, B / d each, as m micro-batches of b sequences;
b = 1, 2, 4, 8, 16 are tried (or the one given) and the fastest that fits in memory is kept.
"""
from __future__ import annotations

from typing import Any

from commlab.parallelism.candidates import structural_reason
from commlab.parallelism.estimate import Shape, estimate_step
from commlab.parallelism.layout import Layout
from commlab.parallelism.layout_memory import memory_of
from commlab.parallelism.memory import MemoryBreakdown
from commlab.parallelism.network import Network
from commlab.parallelism.plan_config import PlanConfig

MICRO_BATCHES = (1, 2, 4, 8, 16)


def _micro_splits(cfg: PlanConfig, dp: int, pp: int, vp: int, micro_batch: int | None):
    per_replica = cfg.sequences // dp
    if cfg.n_micro_batches is not None:
        options = [per_replica // cfg.n_micro_batches] if per_replica % cfg.n_micro_batches == 0 else []
    elif micro_batch is not None:
        options = [micro_batch] if per_replica % micro_batch == 0 else []
    else:
        options = [b for b in MICRO_BATCHES if per_replica % b == 0]
    out = []
    for b in options:
        m = per_replica // b
        if vp > 1 and m % pp:
            continue
        out.append((b, m))
    return out, per_replica


def evaluate(cfg: PlanConfig, net: Network, tp: int, cp: int, pp: int, dp: int, zero: int, vp: int = 1,
             cp_kind: str = "ring", micro_batch: int | None = None) -> Layout:
    """One layout at its fastest micro-batch that fits: refused (with its reason) or estimated."""
    empty = MemoryBreakdown(0.0, 0.0, 0.0, 0.0)
    base: dict[str, Any] = dict(vp=vp, cp_kind=cp_kind, global_batch_tokens=cfg.global_batch_tokens)
    reason = structural_reason(cfg, tp, cp, pp, dp, zero, vp, cp_kind)
    if reason:
        return Layout(tp, cp, pp, dp, zero, empty, reason, **base)
    splits, per_replica = _micro_splits(cfg, dp, pp, vp, micro_batch)
    if not splits:
        what = (f"{cfg.n_micro_batches} micro-batches" if cfg.n_micro_batches else
                f"micro-batches of {micro_batch}" if micro_batch else "micro-batches of 1-16 sequences")
        extra = f" (with vp {vp}, m must be a multiple of p = {pp})" if vp > 1 else ""
        return Layout(tp, cp, pp, dp, zero, empty, f"{per_replica} sequences per replica do not split into "
                      f"{what}{extra}", **base)
    best: Layout | None = None
    smallest: tuple[MemoryBreakdown, int, int] | None = None
    for b, m in splits:
        memory = memory_of(cfg, tp, cp, pp, dp, zero, vp, b, m)
        if smallest is None or memory.total < smallest[0].total:
            smallest = (memory, b, m)
        if memory.total > cfg.usable_bytes:
            continue
        shape = Shape(tp, cp, pp, dp, zero, vp, b, m, cp_kind)
        est = estimate_step(cfg.model, cfg.gpu, net, shape, cfg.seq_len, cfg.recompute, cfg.grad_nbytes,
                            cfg.sequence_parallel, cfg.attention, cfg.overlap_grad_reduce)
        if best is not None and est.step_s >= best.step_s:
            continue
        tokens = cfg.global_batch_tokens
        per_gpu = 1e12 * est.step_s * cfg.n_gpus
        terms = {"compute": est.compute_s, "bubble": est.bubble_s} | {k: v for k, v in est.terms_s.items() if v > 0}
        exposed = sum(v for k, v in est.terms_s.items() if k not in ("optimizer", "NCCL SMs"))
        best = Layout(tp, cp, pp, dp, zero, memory, None, est.step_s, tokens / est.step_s,
                      est.model_flops / per_gpu / cfg.gpu.peak_bf16_TFLOPS, exposed, est.placed,
                      micro_batch=b, micro_batches=m, tflops_per_gpu=est.model_flops / per_gpu,
                      hardware_tflops_per_gpu=est.hardware_flops / per_gpu, terms_s=terms, **base)
    if best is not None:
        return best
    assert smallest is not None
    memory, b, m = smallest
    reason = (f"needs {memory.total / 1e9:.1f} GB per GPU, more than the {cfg.usable_bytes / 1e9:.1f} GB usable "
              f"of {cfg.gpu.memory_GiB:g} GiB")
    return Layout(tp, cp, pp, dp, zero, memory, reason, micro_batch=b, micro_batches=m, **base)


def network_for(cfg: PlanConfig) -> Network:
    return Network(cfg.gpu, cfg.n_gpus, cfg.gpus_per_node, cfg.nics_per_node, cfg.nic_Gbps)
