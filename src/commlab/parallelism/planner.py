"""Rank the parallel layouts of a training job (chapter 09, ``commlab plan``).

For ``n_gpus`` GPUs of one kind, ``gpus_per_node`` to a node, the planner

1. enumerates every layout: TP t (a power of two), CP c (a power of two, ring attention or Ulysses), PP p (any
   number of stages up to the layers, lighter first and last stages: :mod:`commlab.parallelism.stages`), the
   interleaved model chunks v, DP d = n / (t c p), and the ZeRO stage (0-3, with or without a pipeline);
2. splits the user's global batch (``global_batch_tokens``, the model's own by default) over the d replicas:
   B = T / s sequences, B / d per replica, as m micro-batches of b sequences (gradient accumulation, or the
   pipeline's micro-batches), trying b = 1, 2, 4, 8, 16 and keeping the fastest that fits;
3. refuses, with the reason in one line, a layout that cannot run (heads not divisible by TP, more stages than
   layers, a batch that d x b cannot divide, interleaving with m not a multiple of p) or whose memory
   (:mod:`commlab.parallelism.memory`: BF16 weights, FP32 or BF16 gradients, FP32 master weights and Adam
   states, activations of the micro-batches in flight) exceeds the GPU's less a reserve
   (``reserve_fraction``, 10 %: CUDA context, NCCL buffers, fragmentation);
4. estimates the step (:mod:`commlab.parallelism.estimate`, every collective on the cluster model) and ranks
   what fits by tokens per second (to 4 significant figures); ties go to the layout that needs less memory (so
   ZeRO-2 above ZeRO-1 at the same speed), then to the one with less time on the wires.

:func:`score_layout` scores one given layout (``tp=8,pp=16,vp=2,cp=1,zero=1``) against the plan's best.
"""
from __future__ import annotations

import math

from commlab.errors import CommlabError
from commlab.parallelism.candidates import candidates, structural_reason
from commlab.parallelism.catalogue import GpuSpec, ModelSpec, gpu as find_gpu, model as find_model
from commlab.parallelism.evaluate import MICRO_BATCHES, evaluate, network_for
from commlab.parallelism.layout import Layout, Plan, no_fit_message
from commlab.parallelism.layout_memory import LOGIT_NBYTES, memory_of
from commlab.parallelism.layout_text import LAYOUT_KEYS, parse_layout
from commlab.parallelism.plan_config import ATTENTION, GRAD_REDUCE, MAX_VP, PlanConfig

__all__ = ["ATTENTION", "GRAD_REDUCE", "LAYOUT_KEYS", "LOGIT_NBYTES", "MAX_VP", "MICRO_BATCHES", "Layout", "Plan",
           "PlanConfig", "candidates", "evaluate", "memory_of", "network_for", "no_fit_message", "parse_layout",
           "plan", "rank", "score_layout", "structural_reason"]


def _sig(x: float, digits: int = 4) -> float:
    if x <= 0:
        return 0.0
    return round(x, -int(math.floor(math.log10(x))) + digits - 1)


def rank(layouts) -> tuple[tuple[Layout, ...], tuple[Layout, ...]]:
    ranked = sorted((x for x in layouts if x.reason is None),
                    key=lambda x: (-_sig(x.tokens_per_s), x.memory.total, x.comm_s))
    return tuple(ranked), tuple(x for x in layouts if x.reason is not None)


def plan(model: str | ModelSpec, n_gpus: int, gpu: str | GpuSpec, **options) -> Plan:
    """Rank every layout of ``n_gpus`` GPUs for ``model`` (module docstring); options as :class:`PlanConfig`.

    >>> best = plan("70B", 32, "h100").best          # Llama 2's 4M-token batch, 1,024 sequences of 4,096
    >>> best.global_batch_tokens, best.dp * best.micro_batch * best.micro_batches * 4096
    (4194304, 4194304)
    """
    if "mfu" in options:
        raise CommlabError(f"mfu={options['mfu']!r} is no longer an input: compute runs at the GPU's measured GEMM "
                           f"rate, and each layout's MFU is a result (Layout.mfu)")
    cfg = PlanConfig(model=find_model(model), gpu=find_gpu(gpu), n_gpus=n_gpus, **options)
    net = network_for(cfg)
    layouts = [evaluate(cfg, net, *c) for c in candidates(cfg)]
    ranked, rejected = rank(layouts)
    return Plan(cfg, ranked, rejected)


def score_layout(result: Plan, layout: str | dict) -> tuple[Layout, int | None]:
    """One layout of ``result``'s job, scored as the planner scores its own, and its rank in ``result``.

    A layout that leaves out ``zero`` or ``vp`` is scored at the fastest of them that fits, among the plan's
    ZeRO stages and 1 to its ``max_vp`` model chunks (as :mod:`commlab.parallelism.published` scores a published
    layout whose source does not give them); where none fits, the one that overshoots the memory least, or the
    first reason another layout gives."""
    cfg = result.config
    if isinstance(layout, str):
        kwargs = parse_layout(layout, cfg.n_gpus)
        given = {part.partition("=")[0].strip().lower() for part in layout.split(",") if part.strip()}
    else:
        kwargs, given = dict(layout), set(layout)
    zeros = [kwargs.get("zero", 0)] if "zero" in given or kwargs["dp"] * kwargs["cp"] == 1 else list(cfg.zero_stages)
    vps = [kwargs.get("vp", 1)] if "vp" in given or kwargs["pp"] == 1 else list(range(1, cfg.max_vp + 1))
    net = network_for(cfg)
    tried = [evaluate(cfg, net, **{**kwargs, "zero": z, "vp": v}) for z in zeros for v in vps]
    fitting = [x for x in tried if x.reason is None]
    if fitting:
        mine = max(fitting, key=lambda x: (_sig(x.tokens_per_s), -x.memory.total))
    else:
        short = [x for x in tried if x.reason and x.reason.startswith("needs")]
        mine = min(short, key=lambda x: x.memory.total) if short else tried[0]
    if mine.reason is not None:
        return mine, None
    faster = sum(1 for x in result.ranked if _sig(x.tokens_per_s) > _sig(mine.tokens_per_s))
    return mine, faster + 1
