"""The parallel-layout planner: every t x c x p x d layout of a machine, with its memory and its step time
(chapter 09, ``commlab plan``).

For each layout (TP t, CP c, PP p, DP d, ZeRO stage z) of ``n_gpus`` GPUs the planner:

1. refuses what cannot run: TP must divide the attention heads and the key-value heads (Megatron-LM splits
   heads over TP ranks), CP must divide the sequence into 2c chunks (Megatron-LM's load-balanced split),
   and ZeRO-2/3 cannot be combined with pipeline parallelism (DeepSpeed's pipeline engine refuses them:
   "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
   https://github.com/microsoft/DeepSpeed/blob/38327e07f6cd39b63418f60cedd1651b0be3e7c3/deepspeed/runtime/pipe/engine.py#L77-L78;
   with sharded gradients every micro-batch would end in a reduce-scatter);
2. counts the memory per GPU (:mod:`commlab.parallelism.memory`): model states, and the activations of
   min(p, m) micro-batches of L/p layers each on the first pipeline stage; a layout above the GPU's memory
   less a reserve (``reserve_fraction``, 10 % by default: CUDA context, NCCL buffers, fragmentation) is refused;
3. estimates the step (:mod:`commlab.parallelism.estimate`) and ranks what fits by tokens per second; ties
   go to the layout that moves less time on the wires, then to the one that needs less memory.

Layer counts that do not split into p stages are not layouts and are skipped. The micro-batch size is b = 1
sequence; m micro-batches per step on every data-parallel replica (gradient accumulation, or the pipeline's
micro-batches), so the global batch is d m sequences.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from commlab.errors import CommlabError
from commlab.parallelism.catalogue import GpuSpec, ModelSpec, gpu as find_gpu, model as find_model
from commlab.parallelism.config import RECOMPUTE, ModelConfig, ParallelConfig
from commlab.parallelism.estimate import Placed, estimate_step
from commlab.parallelism.memory import (
    MemoryBreakdown, activation_bytes_per_layer, in_flight_micro_batches, model_state_bytes,
)

PIPELINE_ZERO = ("ZeRO-2 and ZeRO-3 shard the gradients, so they reduce-scatter after every micro-batch; "
                 "DeepSpeed's pipeline engine refuses them with pipeline parallelism")


@dataclass(frozen=True)
class PlanConfig:
    """What to plan for."""

    model: ModelSpec
    gpu: GpuSpec
    n_gpus: int
    gpus_per_node: int = 8
    seq_len: int = 4096
    n_micro_batches: int = 8
    recompute: str = "selective"
    mfu: float = 0.40
    reserve_fraction: float = 0.10

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", find_model(self.model))
        object.__setattr__(self, "gpu", find_gpu(self.gpu))
        for name in ("n_gpus", "gpus_per_node", "seq_len", "n_micro_batches"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise CommlabError(f"{name} must be a whole number >= 1, got {value!r}")
        if self.recompute not in RECOMPUTE:
            raise CommlabError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")
        if not 0 < self.mfu <= 1 or not 0 <= self.reserve_fraction < 1:
            raise CommlabError(f"need 0 < mfu <= 1 and 0 <= reserve_fraction < 1, got mfu={self.mfu!r}, "
                               f"reserve_fraction={self.reserve_fraction!r}")

    @property
    def usable_bytes(self) -> float:
        return self.gpu.memory_GiB * 2**30 * (1 - self.reserve_fraction)


@dataclass(frozen=True)
class Layout:
    """One layout with its memory and, when it runs, its step estimate (``reason`` says why it does not)."""

    tp: int
    cp: int
    pp: int
    dp: int
    zero: int
    memory: MemoryBreakdown
    reason: str | None = None
    step_s: float = 0.0
    tokens_per_s: float = 0.0
    mfu: float = 0.0
    exposed_comm_s: float = 0.0
    placed: tuple[Placed, ...] = field(default=(), repr=False)

    @property
    def comm_s(self) -> float:
        """Every collective's time per step, before any overlap."""
        return sum(p.time_s for p in self.placed)

    def comm_by_collective_s(self) -> dict[str, float]:
        """Seconds per step, before overlap, per collective: keys "<strategy> <primitive>" ("SP all_gather",
        "ZeRO-1 reduce_scatter", "PP sendrecv", ...), so that TP's and DP's collectives stay apart."""
        out: dict[str, float] = {}
        for p in self.placed:
            key = f"{p.strategy} {p.primitive}"
            out[key] = out.get(key, 0.0) + p.time_s
        return out

    @property
    def name(self) -> str:
        cp = f" x CP {self.cp}" if self.cp > 1 else ""
        return f"TP {self.tp}{cp} x PP {self.pp} x DP {self.dp}, ZeRO-{self.zero}"


@dataclass(frozen=True)
class Plan:
    config: PlanConfig
    ranked: tuple[Layout, ...]
    rejected: tuple[Layout, ...]

    @property
    def best(self) -> Layout:
        if not self.ranked:
            c = self.config
            raise CommlabError(f"{c.model.name} does not fit on {c.n_gpus} {c.gpu.name} GPUs at seq {c.seq_len} "
                               f"with any layout: add GPUs, use full recomputation, or shorten the sequence")
        return self.ranked[0]


def _powers_of_two(limit: int) -> list[int]:
    out, k = [], 1
    while k <= limit:
        out.append(k)
        k *= 2
    return out


def candidates(cfg: PlanConfig):
    """Every (tp, cp, pp, dp, zero) whose product is n_gpus and whose pp divides the layers."""
    n, layers = cfg.n_gpus, cfg.model.n_layers
    for tp in (t for t in _powers_of_two(min(n, 64)) if n % t == 0):
        for cp in (c for c in _powers_of_two(n // tp) if (n // tp) % c == 0):
            rest = n // (tp * cp)
            for pp in (q for q in range(1, rest + 1) if rest % q == 0 and layers % q == 0):
                dp = rest // pp
                for zero in ((0, 1, 2, 3) if dp * cp > 1 else (0,)):
                    yield tp, cp, pp, dp, zero


def structural_reason(cfg: PlanConfig, tp: int, cp: int, pp: int, zero: int) -> str | None:
    spec = cfg.model
    if spec.n_heads % tp or spec.n_kv_heads % tp:
        return (f"TP {tp} does not divide the {spec.n_heads} attention heads and {spec.n_kv_heads} key-value heads "
                "(Megatron-LM splits heads over the TP ranks)")
    if cfg.seq_len % (2 * cp):
        return f"CP {cp} needs the sequence ({cfg.seq_len}) in 2 x {cp} equal chunks"
    if zero >= 2 and pp > 1:
        return PIPELINE_ZERO
    return None


def memory_of(cfg: PlanConfig, tp: int, cp: int, pp: int, dp: int, zero: int) -> MemoryBreakdown:
    spec = cfg.model
    weights, grads, optim = model_state_bytes(spec.n_params, tp, pp, dp * cp, zero, spec.n_layers)
    per_layer = activation_bytes_per_layer(cfg.seq_len, 1, spec.hidden, spec.n_heads, tp=tp, sp=True, cp=cp,
                                           recompute=cfg.recompute)
    held = in_flight_micro_batches(pp, cfg.n_micro_batches) * spec.n_layers // pp
    return MemoryBreakdown(weights, grads, optim, per_layer * held)


def evaluate(cfg: PlanConfig, tp: int, cp: int, pp: int, dp: int, zero: int) -> Layout:
    """One layout: refused (with its reason) or estimated."""
    reason = structural_reason(cfg, tp, cp, pp, zero)
    memory = memory_of(cfg, tp, cp, pp, dp, zero)
    if reason is None and memory.total > cfg.usable_bytes:
        reason = (f"needs {memory.total / 1e9:.1f} GB per GPU, more than the {cfg.usable_bytes / 1e9:.1f} GB usable "
                  f"of {cfg.gpu.memory_GiB:g} GiB")
    if reason:
        return Layout(tp, cp, pp, dp, zero, memory, reason)
    spec = cfg.model
    model = ModelConfig(n_params=spec.n_params, hidden=spec.hidden, n_layers=spec.n_layers, seq_len=cfg.seq_len,
                        n_micro_batches=cfg.n_micro_batches, kv_hidden=spec.kv_hidden)
    par = ParallelConfig(dp=dp, tp=tp, pp=pp, cp=cp, zero=zero, sp=tp > 1, recompute=cfg.recompute)
    est = estimate_step(spec, model, par, cfg.gpu, cfg.gpus_per_node, cfg.mfu)
    tokens = dp * cfg.n_micro_batches * cfg.seq_len
    model_flops = (6 * spec.n_params * cfg.seq_len + 12 * cfg.seq_len**2 * spec.hidden * spec.n_layers) * dp * \
        cfg.n_micro_batches
    mfu = model_flops / (est.step_s * cfg.n_gpus * cfg.gpu.peak_bf16_TFLOPS * 1e12)
    exposed = est.step_s - (cfg.n_micro_batches + pp - 1) * (est.forward_s + est.backward_s)
    return Layout(tp, cp, pp, dp, zero, memory, None, est.step_s, tokens / est.step_s, mfu, exposed, est.placed)


def plan(model: str | ModelSpec, n_gpus: int, gpu: str | GpuSpec, **options) -> Plan:
    """Rank every layout of ``n_gpus`` GPUs for ``model`` (module docstring); options as :class:`PlanConfig`.

    >>> best = plan("70B", 32, "h100").best
    >>> best.tp, best.pp, best.dp
    (8, 1, 4)
    """
    cfg = PlanConfig(model=find_model(model), gpu=find_gpu(gpu), n_gpus=n_gpus, **options)
    layouts = [evaluate(cfg, *c) for c in candidates(cfg)]
    ranked = sorted((x for x in layouts if x.reason is None),
                    key=lambda x: (-round(x.tokens_per_s, 6), round(x.comm_s, 9), x.memory.total))
    rejected = tuple(x for x in layouts if x.reason is not None)
    return Plan(cfg, tuple(ranked), rejected)
