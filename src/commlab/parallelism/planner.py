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
from dataclasses import dataclass, field
from typing import Any

from commlab.errors import CommlabError
from commlab.parallelism.catalogue import GpuSpec, ModelSpec, gpu as find_gpu, model as find_model
from commlab.parallelism.config import CP_KINDS, RECOMPUTE
from commlab.parallelism.estimate import Placed, Shape, estimate_step
from commlab.parallelism.memory import BYTES_OPTIMIZER, BYTES_WEIGHTS, MemoryBreakdown, activation_bytes_per_layer
from commlab.parallelism.network import Network
from commlab.parallelism.stages import stage_layers

GRAD_REDUCE = ("fp32", "bf16")
ATTENTION = ("flash", "softmax")
MICRO_BATCHES = (1, 2, 4, 8, 16)
MAX_VP = 8
LAYOUT_KEYS = ("tp", "pp", "vp", "cp", "dp", "zero", "cp_kind", "mb")
LOGIT_NBYTES = 4
"""The last stage keeps its logits in FP32 for the loss (Megatron-LM's vocab-parallel cross-entropy)."""


@dataclass(frozen=True)
class PlanConfig:
    """What to plan for; 0 (or None) takes the model's or the GPU's own value."""

    model: ModelSpec
    gpu: GpuSpec
    n_gpus: int
    gpus_per_node: int = 0
    seq_len: int = 0
    global_batch_tokens: int = 0
    n_micro_batches: int | None = None
    """Fix the micro-batches per replica (the micro-batch size follows from the global batch)."""
    recompute: str = "selective"
    grad_reduce: str = "fp32"
    nics_per_node: int = 0
    nic_Gbps: float = 0.0
    reserve_fraction: float = 0.10
    sequence_parallel: bool = True
    """Megatron-LM's sequence parallelism with TP (Korthikanti et al. 2022); off for runs before it existed."""
    attention: str = "flash"
    """"flash" (FlashAttention: no scores in HBM) or "softmax" (the scores materialised, Megatron-LM's fused
    softmax of 2021-2022)."""
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    """The ZeRO stages the framework offers (Megatron-LM of 2021: none but 0; DeepSpeed's pipeline: 0 and 1)."""
    context_parallel: bool = True
    """Whether the framework offers context parallelism (Megatron-LM from 2023)."""
    max_vp: int = MAX_VP
    """The most interleaved model chunks per stage (1: no interleaving, as in DeepSpeed's pipeline engine)."""
    overlap_grad_reduce: bool = True
    """Whether the data-parallel gradient reduction overlaps the backward (Megatron-Core's
    ``--overlap-grad-reduce``, PyTorch DDP's buckets, FSDP); False for Megatron-LM of 2021-22, whose ``train_step``
    all-reduces after the whole forward-backward, and DeepSpeed's pipeline engine, whose schedule reduces after the
    last backward (``ReduceGrads`` in deepspeed/runtime/pipe/schedule.py)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", find_model(self.model))
        object.__setattr__(self, "gpu", find_gpu(self.gpu))
        own = {"gpus_per_node": self.gpu.gpus_per_node, "seq_len": self.model.seq_len,
               "global_batch_tokens": self.model.global_batch_tokens, "nics_per_node": self.gpu.nics_per_node,
               "nic_Gbps": self.gpu.nic_Gbps}
        for name, value in own.items():
            if getattr(self, name) in (None, 0):
                object.__setattr__(self, name, value)
        for name in ("n_gpus", "gpus_per_node", "seq_len", "global_batch_tokens", "n_micro_batches",
                     "nics_per_node"):
            value = getattr(self, name)
            if value is None and name == "n_micro_batches":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise CommlabError(f"{name} must be a whole number >= 1, got {value!r}")
        if self.recompute not in RECOMPUTE:
            raise CommlabError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")
        if not self.zero_stages or not set(self.zero_stages) <= {0, 1, 2, 3}:
            raise CommlabError(f"zero_stages must be some of 0, 1, 2, 3, got {self.zero_stages!r}")
        if not isinstance(self.max_vp, int) or self.max_vp < 1:
            raise CommlabError(f"max_vp must be a whole number >= 1, got {self.max_vp!r}")
        if self.attention not in ATTENTION:
            raise CommlabError(f"attention must be one of {', '.join(ATTENTION)}, got {self.attention!r}")
        if self.grad_reduce not in GRAD_REDUCE:
            raise CommlabError(f"grad_reduce must be one of {', '.join(GRAD_REDUCE)}, got {self.grad_reduce!r}")
        if not (isinstance(self.nic_Gbps, (int, float)) and self.nic_Gbps > 0):
            raise CommlabError(f"nic_Gbps must be > 0, got {self.nic_Gbps!r}")
        if not 0 <= self.reserve_fraction < 1:
            raise CommlabError(f"need 0 <= reserve_fraction < 1, got reserve_fraction={self.reserve_fraction!r}")
        if self.global_batch_tokens % self.seq_len:
            raise CommlabError(f"the global batch of {self.global_batch_tokens:,} tokens is not a whole number of "
                               f"{self.seq_len:,}-token sequences")
        if self.n_gpus > self.gpus_per_node and self.n_gpus % self.gpus_per_node:
            raise CommlabError(f"{self.n_gpus} GPUs are not a whole number of {self.gpus_per_node}-GPU nodes")

    @property
    def usable_bytes(self) -> float:
        return self.gpu.memory_GiB * 2**30 * (1 - self.reserve_fraction)

    @property
    def sequences(self) -> int:
        """Sequences per optimizer step: T / s."""
        return self.global_batch_tokens // self.seq_len

    @property
    def grad_nbytes(self) -> int:
        return 4 if self.grad_reduce == "fp32" else 2

    @property
    def mfu(self) -> float:
        """The GPU's measured GEMM rate over its peak: the compute rate the planner assumes (a result is
        ``Layout.mfu``)."""
        return self.gpu.gemm_fraction


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
    vp: int = 1
    micro_batch: int = 1
    micro_batches: int = 1
    global_batch_tokens: int = 0
    tflops_per_gpu: float = 0.0
    hardware_tflops_per_gpu: float = 0.0
    """TFLOPs per GPU counting recomputation (Megatron-LM's and MT-NLG's convention)."""
    cp_kind: str = "ring"
    terms_s: dict = field(default_factory=dict, repr=False)
    """Seconds per step: "compute", "bubble" and each exposed communication term."""

    @property
    def comm_s(self) -> float:
        """Every collective's time per step, before any overlap."""
        return sum(p.time_s for p in self.placed)

    def comm_by_collective_s(self) -> dict[str, float]:
        """Seconds per step, before overlap, per collective: keys "<strategy> <primitive>"."""
        out: dict[str, float] = {}
        for p in self.placed:
            key = f"{p.strategy} {p.primitive}"
            out[key] = out.get(key, 0.0) + p.time_s
        return out

    @property
    def key(self) -> tuple:
        return (self.tp, self.cp, self.pp, self.dp, self.zero, self.vp, self.cp_kind)

    @property
    def name(self) -> str:
        cp = f" x CP {self.cp}{' Ulysses' if self.cp_kind == 'ulysses' else ''}" if self.cp > 1 else ""
        vp = f" (v {self.vp})" if self.vp > 1 else ""
        return f"TP {self.tp}{cp} x PP {self.pp}{vp} x DP {self.dp}, ZeRO-{self.zero}"

    def deciding_term(self) -> str:
        """The largest of bubble and exposed communication terms, in words."""
        if not self.terms_s:
            return "none"
        losses = {k: v for k, v in self.terms_s.items() if k != "compute"}
        name = max(losses, key=lambda k: losses[k])
        words = {"bubble": "bubble", "optimizer": "optimizer step",
                 "NCCL SMs": "the SMs overlapped collectives take from compute"}
        return words.get(name, f"exposed {name}")


@dataclass(frozen=True)
class Plan:
    config: PlanConfig
    ranked: tuple[Layout, ...]
    rejected: tuple[Layout, ...]

    @property
    def best(self) -> Layout:
        if not self.ranked:
            raise CommlabError(no_fit_message(self))
        return self.ranked[0]

    def rank_of(self, layout: Layout) -> int | None:
        """1-based rank of a layout with ``layout``'s degrees, None when it is not ranked."""
        for i, x in enumerate(self.ranked, start=1):
            if x.key == layout.key:
                return i
        return None


def no_fit_message(result: Plan) -> str:
    c = result.config
    head = f"{c.model.name} does not fit on {c.n_gpus} {c.gpu.name} GPUs at seq {c.seq_len}"
    over = [x for x in result.rejected if x.reason and x.reason.startswith("needs")]
    if not over:
        reasons = sorted({x.reason for x in result.rejected if x.reason})
        return f"{head} with any layout: {reasons[0] if reasons else 'no layout'}"
    closest = min(over, key=lambda x: x.memory.total)
    parts = {k: v for k, v in closest.memory.as_GB().items() if k != "total"}
    term = max(parts, key=lambda k: parts[k])
    return (f"{head} with any layout: the closest, {closest.name}, needs {closest.memory.total / 1e9:.1f} GB, "
            f"{(closest.memory.total - c.usable_bytes) / 1e9:.1f} GB over the {c.usable_bytes / 1e9:.1f} GB usable; "
            f"its largest term is {term.replace('_', ' ')} ({parts[term]:.1f} GB): add GPUs, use full "
            f"recomputation, or shorten the sequence")


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
        if zero >= 1:
            optim /= group
        if zero >= 2:
            grads /= group
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


def _sig(x: float, digits: int = 4) -> float:
    if x <= 0:
        return 0.0
    return round(x, -int(math.floor(math.log10(x))) + digits - 1)


def rank(layouts) -> tuple[tuple[Layout, ...], tuple[Layout, ...]]:
    ranked = sorted((x for x in layouts if x.reason is None),
                    key=lambda x: (-_sig(x.tokens_per_s), x.memory.total, x.comm_s))
    return tuple(ranked), tuple(x for x in layouts if x.reason is not None)


def network_for(cfg: PlanConfig) -> Network:
    return Network(cfg.gpu, cfg.n_gpus, cfg.gpus_per_node, cfg.nics_per_node, cfg.nic_Gbps)


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


def parse_layout(text: str, n_gpus: int) -> dict:
    """``tp=8,pp=16[,vp=V][,cp=C][,zero=Z][,dp=D][,cp_kind=ring|ulysses][,mb=B]`` as keyword arguments of
    :func:`evaluate`; dp defaults to what the GPUs leave."""
    values: dict[str, object] = {}
    for part in (p.strip() for p in str(text).split(",") if p.strip()):
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in LAYOUT_KEYS:
            raise CommlabError(f"--layout {text!r}: unknown key {key!r}; the keys are {', '.join(LAYOUT_KEYS)}")
        if key == "cp_kind":
            if value.strip() not in CP_KINDS:
                raise CommlabError(f"--layout {text!r}: cp_kind must be one of {', '.join(CP_KINDS)}, got {value!r}")
            values[key] = value.strip()
            continue
        try:
            number = int(value)
        except ValueError:
            number = -1
        if number < (0 if key == "zero" else 1) or (key == "zero" and number > 3):
            expected = "0, 1, 2 or 3" if key == "zero" else "a whole number >= 1"
            raise CommlabError(f"--layout {text!r}: {key} must be {expected}, got {value!r}")
        values[key] = number
    tp, pp, cp = (int(values.get(k, 1)) for k in ("tp", "pp", "cp"))  # type: ignore[call-overload]
    if n_gpus % (tp * pp * cp):
        raise CommlabError(f"--layout {text!r}: tp x pp x cp = {tp * pp * cp} does not divide {n_gpus} GPUs")
    dp = n_gpus // (tp * pp * cp)
    if "dp" in values and values["dp"] != dp:
        raise CommlabError(f"--layout {text!r}: dp={values['dp']} but {n_gpus} GPUs / (tp x pp x cp) = {dp}")
    zero = int(values.get("zero", 1 if dp * cp > 1 else 0))  # type: ignore[call-overload]
    return {"tp": tp, "cp": cp, "pp": pp, "dp": dp, "zero": zero, "vp": int(values.get("vp", 1)),  # type: ignore
            "cp_kind": str(values.get("cp_kind", "ring")), "micro_batch": values.get("mb")}


def score_layout(result: Plan, layout: str | dict) -> tuple[Layout, int | None]:
    """One layout of ``result``'s job, scored as the planner scores its own, and its rank in ``result``."""
    cfg = result.config
    kwargs = parse_layout(layout, cfg.n_gpus) if isinstance(layout, str) else dict(layout)
    mine = evaluate(cfg, network_for(cfg), **kwargs)
    if mine.reason is not None:
        return mine, None
    faster = sum(1 for x in result.ranked if _sig(x.tokens_per_s) > _sig(mine.tokens_per_s))
    return mine, faster + 1
