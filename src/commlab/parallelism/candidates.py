"""Every TP x CP x PP x DP x ZeRO layout of a job, and the structural reason one cannot run (chapter 09).

TP t and CP c are powers of two (CP leaves at least 128 tokens a rank), PP p any number of stages up to the
layers (lighter first and last stages: :mod:`commlab.parallelism.stages`), v interleaved chunks up to the
thinnest stage's layers, DP d = n / (t c p), and the ZeRO stages the framework offers.
"""
from __future__ import annotations

from commlab.parallelism.config import CP_KINDS
from commlab.parallelism.plan_config import PlanConfig
from commlab.parallelism.stages import stage_layers


def _powers_of_two(limit: int) -> list[int]:
    out, k = [], 1
    while k <= limit:
        out.append(k)
        k *= 2
    return out


def candidates(cfg: PlanConfig):
    """Every (tp, cp, pp, dp, zero, vp, cp_kind) whose product is n_gpus and whose pp fits the layers."""
    n, layers = cfg.n_gpus, cfg.model.n_layers
    for tp in (t for t in _powers_of_two(min(n, 64)) if n % t == 0):
        cps = _powers_of_two(n // tp) if cfg.context_parallel else [1]
        for cp in (c for c in cps if (n // tp) % c == 0 and cfg.seq_len // c >= 128):
            rest = n // (tp * cp)
            for pp in (q for q in range(1, min(rest, layers) + 1) if rest % q == 0):
                dp = rest // pp
                thinnest = min(stage_layers(layers, pp))
                for vp in range(1, (min(cfg.max_vp, thinnest) if pp > 1 else 1) + 1):
                    for zero in (cfg.zero_stages if dp * cp > 1 else (0,)):
                        for kind in (CP_KINDS if cp > 1 else ("ring",)):
                            yield tp, cp, pp, dp, zero, vp, kind


def structural_reason(cfg: PlanConfig, tp: int, cp: int, pp: int, dp: int, zero: int, vp: int,
                      cp_kind: str) -> str | None:
    spec = cfg.model
    if spec.n_heads % tp or spec.n_kv_heads % tp:
        which = (f"the {spec.n_heads} attention heads" if spec.n_heads % tp else
                 f"the {spec.n_kv_heads} key-value heads")
        return f"TP {tp} does not divide {which} (Megatron-LM splits heads over the TP ranks)"
    if cfg.seq_len % (2 * cp):
        return f"CP {cp} needs the sequence ({cfg.seq_len}) in 2 x {cp} equal chunks"
    if cp_kind == "ulysses" and spec.n_heads % (tp * cp):
        return f"Ulysses CP {cp} with TP {tp} needs the {spec.n_heads} heads divisible by {tp * cp}"
    if pp > spec.n_layers:
        return f"PP {pp} has more stages than the model's {spec.n_layers} layers"
    if vp > 1 and (pp == 1 or vp > min(stage_layers(spec.n_layers, pp))):
        return f"vp {vp} needs a pipeline whose every stage holds at least {vp} layers"
    if cfg.sequences % dp:
        return (f"the global batch of {cfg.sequences:,} sequences ({cfg.global_batch_tokens:,} tokens) does not "
                f"split over DP {dp}")
    return None
