"""The planner's estimate of one training step for a layout (chapter 09, ``commlab plan``).

**Compute.** A token costs 6 N FLOPs for the weights (forward 2, backward 4) plus 12 s h L for attention's
scores and their use: the model FLOPs 72 b s h^2 L (1 + s/(6h)) of Korthikanti et al. 2022 (sec. 6) for
N = 12 h^2 L, and PaLM's 6N + 12 L h s (Chowdhery et al. 2022, appendix B), the standard count of MFU.
Selective recomputation adds attention's core forward again (4 s h L per token); full recomputation the whole
forward (2 N + 4 s h L): Narayanan et al. SC21, eq. 3, counts 96 b s h^2 L because it recomputes. A GPU does
1/(t c) of a stage's work at ``gpu.gemm_TFLOPS``, the rate measured for large BF16 GEMMs on that GPU
(:mod:`commlab.parallelism.catalogue`), each GEMM slowed by its shape's wave and tile quantization on the GPU's
SMs (:mod:`commlab.parallelism.gemm`: the forward's, the data gradient's and the weight gradient's outputs).
Attention's core (QK^T and PV, 4 s h FLOPs per token and layer forward, counted in full for MFU): FlashAttention
computes only the unmasked half of a causal attention, at its own measured rate
(``GpuSpec.attention_fraction`` of the peak: 35 % on an H100, FlashAttention-3's paper; 50 % on an A100,
FlashAttention-2's); with the scores materialised (``attention="softmax"``) the batched GEMMs compute them all at
the GEMM rate and the mask applies after.

**The roofline.** A GEMM of n tokens, M = n rows against a K x N slice of a layer's weights, does 2 n K N FLOPs
and moves at least 2 (n K + K N + n N) bytes in BF16 (NVIDIA's matrix multiplication guide, 'Math And Memory
Bounds'); the weight gradient reads the two activations and reads and writes its accumulated gradient (2 x 4 bytes
per weight in FP32). Each GEMM takes the longer of its compute and its memory time (Williams, Waterman and
Patterson, "Roofline", CACM 2009): below n of about rate / HBM bandwidth (300 tokens on an H100, 130 on an A100)
it waits on HBM, not on the tensor cores, which is what makes tiny micro-batches and deep context parallelism slow.

**Memory-bound kernels.** Norms, residual adds and the MLP's activation read and write their tensors from HBM
(at ``gpu.hbm_TBps``, the datasheet's): per token of a layer's forward about 20 h bytes (two norms, read and
write, and two residual adds: 2 x 4h + 2 x 6h; split over TP only with sequence parallelism), 4 f (GeLU: read
and write f) or 6 f (SwiGLU: read 2f, write f) split over TP, and, where attention materialises its scores
(``attention="softmax"``: Megatron-LM's fused softmax before FlashAttention), 13 a s / t more (the scores
written, softmax read and written, dropout read, written and its mask, read by the second matmul, 2 bytes each
but the 1-byte mask). The backward moves about twice the forward's bytes, recomputation the forward's again.

**Communication, placed.** Megatron-LM's rank order puts TP innermost, then CP, then DP, then PP; every
collective is timed by :class:`commlab.parallelism.network.Network` on the cluster model (NCCL's algorithm,
the node's NICs shared by the groups beside it). Per micro-batch on the busiest stage:

| term | when | hidden behind |
| --- | --- | --- |
| TP with SP: 2 all-gathers + 2 reduce-scatters of b (s/c) h | each layer, both passes | nothing (Megatron's default) |
| CP ring: c-1 sends of K and V (2 b (s/c) h_kv/t); across nodes, one NIC share | each layer | the block's attention |
| CP Ulysses: all-to-alls of Q, K, V and the output | each layer | nothing |
| PP: a send of b (s/c) h/t each way per chunk (across nodes once a stage boundary is) | each micro-batch | nothing |
| ZeRO-3: all-gather of a layer's BF16 weights, reduce-scatter of its gradients | each layer | its compute (prefetch) |
| ZeRO-2: reduce-scatter of the stage's gradients | each micro-batch | its backward |

Once per step: DDP's all-reduce (or ZeRO-1's reduce-scatter) of the gradients overlaps the last micro-batch's
backward, the all-gather of updated parameters the next step's first forward; with ``overlap_grad_reduce=False``
(Megatron-LM of 2021-22 reduced after ``forward_backward``; DeepSpeed's pipeline schedule appends
``ReduceGrads`` after the last backward, deepspeed/runtime/pipe/schedule.py) they run after it, in full. The
optimizer (FP32 Adam) reads and writes about 30 bytes per parameter of its shard at HBM speed. Gradients travel
in FP32 (4 bytes, Megatron-LM's default ``--grad-reduce-in-fp32`` / ``accumulate_allreduce_grads_in_fp32`` for
BF16) or BF16.

**NCCL's SMs.** A collective hidden behind compute still occupies one SM per NCCL channel while it runs
(:meth:`commlab.parallelism.network.Network.channels`), so the compute it overlaps slows by channels / SMs for
the overlapped time: the "NCCL SMs" term, apart from the exposed communication. Point-to-point sends (PP, the CP
ring) hold a channel or two and are left out.

**The pipeline.** With p stages, v model chunks each (interleaved 1F1B) and m micro-batches, a step is
(m + (p-1)/v) slots of the busiest stage (the bubble (p-1)/(v m), Narayanan et al. SC21 sec. 2.2), plus the
exposed once-per-step terms.
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.calibration import value
from commlab.cluster.groups import group_span
from commlab.parallelism.catalogue import GpuSpec, ModelSpec
from commlab.parallelism.gemm import layer_gemm_s
from commlab.parallelism.network import Network
from commlab.parallelism.stages import stage_layers

HBM_ACHIEVED_FRACTION = value("HBM_ACHIEVED_FRACTION")
"""The share of the datasheet's HBM bandwidth a streaming kernel reaches: the memory-bound kernels, the roofline's
weight reads and the optimizer run at it. Its value, the A100 measurement it comes from and what it was checked on
are in commlab/data/calibration.csv."""

ADAM_BYTES_PER_PARAM = 30
"""FP32 Adam's HBM traffic per parameter: master weight, momentum, variance read and written (24), the FP32
gradient read (4), the BF16 weight written (2)."""


@dataclass(frozen=True)
class Placed:
    """One collective of a step on the cluster: per call and per step before any overlap."""

    strategy: str
    primitive: str
    what: str
    when: str
    link: str
    """"<algorithm>, <bottleneck level>" from the cluster model (``ring, nic``, ``nvls-tree, nvlink``, ...)."""
    n_ranks: int
    calls_per_step: int
    nbytes_per_call: int
    time_s: float


@dataclass(frozen=True)
class Shape:
    """One layout's degrees and batch split."""

    tp: int
    cp: int
    pp: int
    dp: int
    zero: int
    vp: int
    micro_batch: int
    micro_batches: int
    cp_kind: str = "ring"


@dataclass(frozen=True)
class StepEstimate:
    step_s: float
    compute_s: float
    """Busiest stage's forward and backward of all micro-batches, recomputation included."""
    bubble_s: float
    terms_s: dict
    """Seconds per step of each exposed term: "TP", "CP", "PP", "ZeRO-3", "DP", "optimizer"."""
    placed: tuple[Placed, ...]
    model_flops: float
    hardware_flops: float


def flops_per_token(spec: ModelSpec, seq_len: int, recompute: str) -> tuple[float, float]:
    """(model FLOPs, FLOPs done with recomputation) per token over the whole model (module docstring)."""
    model = 6 * spec.n_params + 12 * seq_len * spec.hidden * spec.n_layers
    core = 4 * seq_len * spec.hidden * spec.n_layers
    extra = {"none": 0.0, "selective": core, "full": 2 * spec.n_params + core}[recompute]
    return model, model + extra


def flops_per_micro_batch(spec: ModelSpec, seq_len: int, micro_batch: int, recompute: str) -> tuple[float, float]:
    """(forward, backward) FLOPs of one micro-batch over the whole model; the backward carries recomputation."""
    weights = 2 * spec.n_params * micro_batch * seq_len
    scores = 4 * micro_batch * seq_len**2 * spec.hidden * spec.n_layers
    extra = {"none": 0.0, "selective": scores, "full": weights + scores}[recompute]
    return weights + scores, 2 * (weights + scores) + extra


def _stage_params(spec: ModelSpec, layers: int, first: bool, last: bool) -> float:
    return layers * spec.layer_params + spec.embedding_params * (int(first) + int(last))


def elementwise_bytes_per_token(spec: ModelSpec, seq_len: int, tp: int, sp: bool, attention: str) -> float:
    """HBM bytes one GPU's memory-bound kernels move per token of one layer's forward (module docstring)."""
    h, f, t = spec.hidden, spec.ffn_width, tp
    norms_residuals = 20 * h / (t if sp else 1)
    mlp = (6 if spec.gated else 4) * f / t
    scores = 13 * spec.n_heads * seq_len / t if attention == "softmax" else 0.0
    return norms_residuals + mlp + scores


def _hidden(comm_s: float, window_s: float, sm_share: float) -> tuple[float, float]:
    """(exposed, stolen) seconds of a collective of ``comm_s`` run beside ``window_s`` of compute: what the window
    cannot hide, and what the collective's SMs (``sm_share`` of the GPU's) take from the compute it overlaps."""
    return max(0.0, comm_s - window_s), min(comm_s, window_s) * sm_share


def estimate_step(spec: ModelSpec, gpu: GpuSpec, net: Network, x: Shape, seq_len: int, recompute: str,
                  grad_nbytes: int, sp: bool = True, attention: str = "flash",
                  overlap_grad_reduce: bool = True) -> StepEstimate:
    """One optimizer step of ``spec`` laid out as ``x`` (module docstring); ``overlap_grad_reduce=False`` runs the
    data-parallel reduction after the last backward, as frameworks before 2023 did."""
    t, c, p, d, v, b, m = x.tp, x.cp, x.pp, x.dp, x.vp, x.micro_batch, x.micro_batches
    h, s, gpn = spec.hidden, seq_len, net.gpus_per_node
    rate = gpu.gemm_TFLOPS * 1e12
    tokens_mb = b * s
    share = t * c
    layer_core = 4 * s * h * tokens_mb / share
    hbm = gpu.hbm_TBps * 1e12 * HBM_ACHIEVED_FRACTION
    # each GEMM at its shape's wave efficiency, and on its roofline: no faster than moving its operands
    gemm_s, dgrad_s, wgrad_s = layer_gemm_s(tokens_mb // c, h, spec.kv_hidden, spec.ffn_width, spec.gated, t,
                                            gpu.sms, rate, hbm, grad_nbytes)
    if attention == "flash":           # the unmasked half of causal attention at FlashAttention-2's measured rate
        attn_rate = gpu.attention_fraction * gpu.peak_bf16_TFLOPS * 1e12
        core_s = layer_core / 2 / attn_rate
    else:                              # the scores materialised: full batched GEMMs, the mask applied after
        attn_rate = rate
        core_s = layer_core / rate
    fwd_bytes = elementwise_bytes_per_token(spec, s, t, sp and t > 1, attention) * tokens_mb / c
    score_bytes = (13 * spec.n_heads * s / t if attention == "softmax" else 0.0) * tokens_mb / c
    extra_s = {"none": 0.0, "selective": core_s + score_bytes / hbm, "full": gemm_s + core_s + fwd_bytes / hbm}[
        recompute]
    layer_fwd_s = gemm_s + core_s + fwd_bytes / hbm
    layer_bwd_s = dgrad_s + wgrad_s + 2 * core_s + 2 * fwd_bytes / hbm + extra_s
    out_fwd_s = 2 * spec.embedding_params * tokens_mb / share / rate       # the output layer (logits)
    counts = stage_layers(spec.n_layers, p)
    placed: list[Placed] = []

    def add(strategy, primitive, what, when, link, n, calls, nbytes, per_call_s):
        placed.append(Placed(strategy, primitive, what, when, link, n, calls, int(nbytes), calls * per_call_s))

    # TP with sequence parallelism: 2 all-gathers + 2 reduce-scatters per layer and pass
    act = b * (s / c) * h * 2
    passes = 3 if recompute == "full" else 2
    tp_layer_s = 0.0
    if t > 1:
        for op in (("all_gather", "reduce_scatter") if sp else ("all_reduce",)):
            one, link = net.collective_s(op, act, t, 1)
            tp_layer_s += 2 * passes * one
            add("SP" if sp else "TP", op, "activations", f"2 per layer, {passes} passes", link, t,
                2 * passes * max(counts) * m, act, one)
    # CP
    cp_layer_s = 0.0
    if c > 1:
        kv_width = spec.kv_hidden / t
        if x.cp_kind == "ring":
            block = 2 * b * (s / c) * kv_width * 2
            # a ring step waits on its slowest send: across nodes, over the sender's share of its node's NICs
            # (the same model as commlab.parallelism.placement's)
            _, nodes = group_span(c, t, gpn)
            one, link = net.p2p_s(block, gpn if nodes > 1 else t)
            attn = 4 * b * (s / c) ** 2 * h / t / rate if attention == "softmax" else \
                2 * b * (s / c) ** 2 * h / t / attn_rate                # a block's causal half at FA-2's rate
            steps = c - 1
            cp_layer_s = steps * (max(0.0, one - attn) + max(0.0, 2 * one - 2 * attn))
            if recompute == "full":
                cp_layer_s += steps * max(0.0, one - attn)
            add("CP", "sendrecv", "K and V blocks (and their gradients)", "per layer, c-1 ring steps", link, c,
                3 * steps * max(counts) * m, block, one)
        else:
            qkv = b * (s / c) * (h + 2 * spec.kv_hidden) / t * 2
            out = b * (s / c) * h / t * 2
            one_qkv, link = net.collective_s("all_to_all", qkv, c, t)
            one_out, _ = net.collective_s("all_to_all", out, c, t)
            cp_layer_s = (2 + (1 if recompute == "full" else 0)) * (one_qkv + one_out)
            add("CP", "all_to_all", "Q, K, V and attention output", "per layer, forward and backward", link, c,
                4 * max(counts) * m, qkv, (one_qkv + one_out) / 2)
    # ZeRO-3: a layer's parameters gathered before its forward and backward, its gradients reduce-scattered
    dp_group, dp_stride = d * c, t
    dp_share = net.channels(group_span(dp_group, dp_stride, gpn)[1] > 1) / gpu.sms if dp_group > 1 else 0.0
    z3_fwd = z3_bwd = z3_sms = 0.0
    if x.zero == 3 and dp_group > 1:
        layer_w = spec.layer_params / t
        ag, link = net.collective_s("all_gather", layer_w * 2, dp_group, dp_stride)
        rs, _ = net.collective_s("reduce_scatter", layer_w * grad_nbytes, dp_group, dp_stride)
        (z3_fwd, fwd_sms), (z3_bwd, bwd_sms) = (_hidden(ag, layer_fwd_s, dp_share),
                                                _hidden(ag + rs, layer_bwd_s, dp_share))
        z3_sms = fwd_sms + bwd_sms
        add("ZeRO-3", "all_gather", "parameters", "per layer, before its forward and its backward", link, dp_group,
            2 * max(counts) * m, layer_w * 2, ag)
        add("ZeRO-3", "reduce_scatter", "gradients", "per layer, after its backward", link, dp_group,
            max(counts) * m, layer_w * grad_nbytes, rs)
    # PP: one send each way per model chunk and micro-batch
    pp_mb_s = 0.0
    if p > 1:
        send = b * (s / c) * h / (t if sp else 1) * 2
        # stages sit t c d ranks apart; once the pipeline leaves a node, some stage boundary crosses the network
        # and the pipeline runs at that boundary's pace (every micro-batch passes every boundary)
        stride = t * c * d
        one, link = net.p2p_s(send, max(stride, gpn) if p * stride > gpn else stride)
        pp_mb_s = 2 * v * one
        add("PP", "sendrecv", "activations and their gradients", "per micro-batch and model chunk, each way", link,
            2, 2 * v * m, send, one)

    # the busiest stage's slot: compute plus what it cannot hide
    slot_s, slot_compute_s, slot_terms = 0.0, 0.0, {}
    for i in sorted({0, min(1, p - 1), p - 1}):          # the ends and one middle stage (the middles are alike)
        n, last = counts[i], i == p - 1
        compute = n * (layer_fwd_s + layer_bwd_s) + (3 * out_fwd_s if last else 0.0)
        terms = {"TP": n * tp_layer_s, "CP": n * cp_layer_s, "ZeRO-3": n * (z3_fwd + z3_bwd), "PP": pp_mb_s,
                 "NCCL SMs": n * z3_sms}
        total = compute + sum(terms.values())
        if total > slot_s:
            slot_s, slot_compute_s, slot_terms = total, compute, terms
    stage_p = max(_stage_params(spec, counts[i], i == 0, i == p - 1) for i in {0, min(1, p - 1), p - 1}) / t
    stage_bwd_s = max(counts) * layer_bwd_s
    stage_fwd_s = max(counts) * layer_fwd_s

    # once per step, DDP's all-reduce or ZeRO-1's reduce-scatter during the last backward and the all-gather of
    # the updated parameters during the next forward; ZeRO-2 reduce-scatters after every micro-batch's backward.
    # Without overlap (frameworks before 2023) each runs after the last backward, exposed in full.
    def beside(comm_s: float, window_s: float) -> tuple[float, float]:
        return _hidden(comm_s, window_s, dp_share) if overlap_grad_reduce else (comm_s, 0.0)

    dp_exposed, dp_sms, z2_slot, z2_sms = 0.0, 0.0, 0.0, 0.0
    if dp_group > 1:
        when = "during the last backward" if overlap_grad_reduce else "after the last backward"
        if x.zero == 0:
            ar, link = net.collective_s("all_reduce", stage_p * grad_nbytes, dp_group, dp_stride)
            dp_exposed, dp_sms = beside(ar, stage_bwd_s)
            add("DP", "all_reduce", "gradients", f"once per step, {when}", link, dp_group, 1,
                stage_p * grad_nbytes, ar)
        elif x.zero in (1, 2):
            name = f"ZeRO-{x.zero}"
            rs, link = net.collective_s("reduce_scatter", stage_p * grad_nbytes, dp_group, dp_stride)
            ag, _ = net.collective_s("all_gather", stage_p * 2, dp_group, dp_stride)
            ag_exposed, ag_sms = beside(ag, stage_fwd_s)
            if x.zero == 1:
                rs_exposed, rs_sms = beside(rs, stage_bwd_s)
                dp_exposed, dp_sms = rs_exposed + ag_exposed, rs_sms + ag_sms
            else:
                z2_slot, z2_sms = beside(rs, stage_bwd_s)
                dp_exposed, dp_sms = ag_exposed, ag_sms
            add(name, "reduce_scatter", "gradients", f"once per step, {when}" if x.zero == 1 else
                "every micro-batch", link, dp_group, 1 if x.zero == 1 else m, stage_p * grad_nbytes, rs)
            add(name, "all_gather", "parameters", "after the optimizer step", link, dp_group, 1, stage_p * 2, ag)
    slot_s += z2_slot + z2_sms
    slot_terms["ZeRO-2"] = z2_slot
    slot_terms["NCCL SMs"] = slot_terms.get("NCCL SMs", 0.0) + z2_sms
    optim_params = stage_p / (dp_group if x.zero >= 1 else 1)
    optimizer_s = optim_params * ADAM_BYTES_PER_PARAM / hbm

    slots = m + (p - 1) / v
    step = slots * slot_s + dp_exposed + dp_sms + optimizer_s
    terms_s = {k: slots * val for k, val in slot_terms.items()}
    terms_s["NCCL SMs"] += dp_sms
    terms_s.update({"DP": dp_exposed, "optimizer": optimizer_s})
    model_tok, hw_tok = flops_per_token(spec, s, recompute)
    tokens = d * m * tokens_mb
    return StepEstimate(step, m * slot_compute_s, (p - 1) / v * slot_s, terms_s, tuple(placed),
                        model_tok * tokens, hw_tok * tokens)
