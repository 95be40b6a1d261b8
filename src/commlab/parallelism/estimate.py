"""The planner's estimate of one training step for a layout (chapter 09, ``commlab plan``).

**Compute.** A micro-batch of b sequences of s tokens costs 6 N b s FLOPs for the weights (forward 2, backward
4) plus 12 b s^2 h L for attention's scores and their use: the model FLOPs 72 b s h^2 L (1 + s/(6h)) of
Korthikanti et al. 2022 (sec. 6), whose s-dependent part is 12 b s^2 h L. Selective recomputation adds
attention's core forward again (Q K^T and the scores times V: 4 b s^2 h L); full recomputation the whole
forward, 2 N b s + 4 b s^2 h L: 96 instead of 72 in the same count (Narayanan et al. SC21, eq. 3, counts
96 b s h^2 L because it recomputes). A GPU does 1/(t c p) of it at ``mfu`` x its dense BF16 peak (an assumption:
40 % is typical).

**Communication, placed.** Megatron-LM's rank order puts TP innermost (consecutive GPUs), then CP, then DP,
then PP outermost; a group that fits in one node uses the NVSwitch link, one that spans nodes the network
card of each GPU. Each item of :func:`commlab.parallelism.traffic` is timed with the ring alpha-beta model on
its link.

**Exposure.** TP and PP transfers and Ulysses' all-to-alls sit between computations: fully exposed. Ring
attention hides each K/V step behind the attention of the block at hand (4 b (s/c)^2 h / t FLOPs forward, twice
that backward). Data-parallel collectives hide behind compute, each against the window it can use:

| stage | collective | window |
| --- | --- | --- |
| DDP | all-reduce once per step | the last micro-batch's backward |
| ZeRO-1 | reduce-scatter once; all-gather once | last backward; the next step's first forward |
| ZeRO-2 | reduce-scatter every micro-batch; all-gather once | each backward; the first forward |
| ZeRO-3 | per micro-batch: all-gathers, reduce-scatter | its forward; its backward |

A pipeline step is (m + p - 1) slots of one micro-batch's compute plus its exposed TP, CP and PP time (the
bubble, chapter 9's (p-1)/(m+p-1)); the exposed DP time is added once.
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.hardware import Link, link as find_link
from commlab.parallelism.catalogue import GpuSpec, ModelSpec
from commlab.parallelism.config import ModelConfig, ParallelConfig
from commlab.parallelism.strategies import traffic


@dataclass(frozen=True)
class Placed:
    """One traffic item on the link its group uses."""

    strategy: str
    primitive: str
    what: str
    when: str
    link: str
    n_ranks: int
    calls_per_step: int
    nbytes_per_call: int
    time_s: float


@dataclass(frozen=True)
class StepEstimate:
    forward_s: float
    """One micro-batch's forward on one GPU."""
    backward_s: float
    """Its backward (with any recomputation)."""
    slot_s: float
    """Forward + backward + exposed TP, CP and PP time of one micro-batch."""
    dp_exposed_s: float
    step_s: float
    placed: tuple[Placed, ...]


def flops_per_micro_batch(spec: ModelSpec, seq_len: int, micro_batch: int, recompute: str) -> tuple[float, float]:
    """(forward, backward) FLOPs of one micro-batch over the whole model (module docstring)."""
    weights = 2 * spec.n_params * micro_batch * seq_len
    scores = 4 * micro_batch * seq_len**2 * spec.hidden * spec.n_layers
    extra = {"none": 0.0, "selective": scores, "full": weights + scores}[recompute]
    return weights + scores, 2 * (weights + scores) + extra


def group_link(par: ParallelConfig, strategy: str, gpus_per_node: int, gpu: GpuSpec) -> Link:
    """The link a strategy's group crosses, ranks ordered TP, CP, DP, PP from innermost (Megatron-LM)."""
    span = {"TP": par.tp, "SP": par.tp, "CP": par.tp * par.cp, "PP": par.world_size}.get(
        strategy, par.tp * par.cp * par.dp)                              # DP and ZeRO: the dp x cp group
    return find_link(gpu.intra if span <= gpus_per_node else gpu.inter)


def place(model: ModelConfig, par: ParallelConfig, gpus_per_node: int, gpu: GpuSpec) -> tuple[Placed, ...]:
    out = []
    for item in traffic(model, par):
        on = group_link(par, item.strategy, gpus_per_node, gpu)
        out.append(Placed(item.strategy, item.primitive, item.what, item.when, on.name, item.n_ranks,
                          item.calls_per_step, item.nbytes_per_call, item.time_s(on)))
    return tuple(out)


def _cp_ring_exposed_s(placed, spec: ModelSpec, par: ParallelConfig, model: ModelConfig, flops_s: float) -> float:
    """Per micro-batch: each ring step's K/V transfer beyond the attention it overlaps."""
    ring = [p for p in placed if p.strategy == "CP"]
    if not ring or par.cp_kind != "ring":
        return sum(p.time_s for p in ring) / model.n_micro_batches
    step_s = ring[0].time_s / ring[0].calls_per_step
    s_block = model.micro_batch * (model.seq_len / par.cp) ** 2 * spec.hidden / par.tp
    attention_fwd_s, attention_bwd_s = 4 * s_block / flops_s, 8 * s_block / flops_s
    per_layer = (par.cp - 1) * (max(0.0, step_s - attention_fwd_s) + max(0.0, 2 * step_s - attention_bwd_s))
    if par.recompute == "full":
        per_layer += (par.cp - 1) * max(0.0, step_s - attention_fwd_s)
    return per_layer * model.n_layers / par.pp


def _dp_exposed_s(placed, par: ParallelConfig, m: int, fwd_s: float, bwd_s: float) -> float:
    times = {(p.primitive, p.when.split(",")[0]): p.time_s / p.calls_per_step
             for p in placed if p.strategy in ("DP", "ZeRO-1", "ZeRO-2", "ZeRO-3")}
    if not times:
        return 0.0
    if par.zero == 0:
        return max(0.0, sum(times.values()) - bwd_s)
    if par.zero in (1, 2):
        rs = next(t for (prim, _), t in times.items() if prim == "reduce_scatter")
        ag = next(t for (prim, _), t in times.items() if prim == "all_gather")
        per_rs = max(0.0, rs - bwd_s)
        return (m if par.zero == 2 else 1) * per_rs + max(0.0, ag - fwd_s)
    layers = [p for p in placed if p.strategy == "ZeRO-3"]
    per_mb = {p.when: p.time_s / m for p in layers}
    before_fwd = sum(t for w, t in per_mb.items() if "forward" in w)
    in_bwd = sum(t for w, t in per_mb.items() if "forward" not in w)
    return m * (max(0.0, before_fwd - fwd_s) + max(0.0, in_bwd - bwd_s))


def estimate_step(spec: ModelSpec, model: ModelConfig, par: ParallelConfig, gpu: GpuSpec, gpus_per_node: int,
                  mfu: float) -> StepEstimate:
    """Time of one optimizer step of ``model`` under ``par`` (module docstring)."""
    flops_s = gpu.peak_bf16_TFLOPS * 1e12 * mfu
    share = par.tp * par.cp * par.pp
    f_fwd, f_bwd = flops_per_micro_batch(spec, model.seq_len, model.micro_batch, par.recompute)
    fwd_s, bwd_s = f_fwd / share / flops_s, f_bwd / share / flops_s
    placed = place(model, par, gpus_per_node, gpu)
    m = model.n_micro_batches
    on_path = sum(p.time_s for p in placed if p.strategy in ("TP", "SP", "PP")) / m
    slot = fwd_s + bwd_s + on_path + _cp_ring_exposed_s(placed, spec, par, model, flops_s)
    dp_s = _dp_exposed_s(placed, par, m, fwd_s, bwd_s)
    return StepEstimate(fwd_s, bwd_s, slot, dp_s, (m + par.pp - 1) * slot + dp_s, placed)
