"""Memory per GPU of a parallel layout: model states (ZeRO) and activations (Korthikanti et al.) (chapter 09).

**Model states**, mixed-precision Adam (Rajbhandari et al., "ZeRO", SC20, sec. 3.1): per parameter 2 bytes of
BF16 weights, 2 of BF16 gradients and K = 12 of FP32 master weights, momentum and variance. A rank holds the
P/(t p) parameters of its tensor and pipeline shard; ZeRO stage 1 shards the optimizer states over the g ranks
that share those weights (g = dp x cp), stage 2 the gradients too, stage 3 the weights too (plus the two
layers FSDP holds gathered at a time: the one running and the one prefetched).

**Activations** per transformer layer, BF16, for one micro-batch of b sequences of s tokens, hidden size h,
a attention heads, t-way tensor parallelism (Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models", MLSys 2023, arXiv 2205.05198, sec. 4 and table 2):

| configuration | bytes per layer |
| --- | --- |
| no parallelism | s b h (34 + 5 a s / h) |
| tensor parallelism | s b h (10 + 24/t + 5 a s / (h t)) |
| tensor + sequence parallelism | s b h (34 + 5 a s / h) / t |
| TP + selective recomputation | s b h (10 + 24/t) |
| TP + SP + selective recomputation | 34 s b h / t |
| full recomputation | 2 s b h (the layer's input only; / t with SP, where that input is sequence-sharded) |

The 5 a s / h term is the attention scores, softmax and its dropout mask (quadratic in s); selective
recomputation drops exactly that term by recomputing attention's core in the backward (no extra
communication); full recomputation reruns each layer's forward, with its TP collectives. With c-way context
parallelism a rank holds s/c tokens, so every term shrinks by c (its scores are (s/c) x s per head).

**Pipelines**: under 1F1B the first stage holds the activations of min(p, m) micro-batches for its L/p layers
(Narayanan et al. SC21, sec. 2.2.1; Korthikanti et al. sec. 4.2.3): p x L/p = L layers' worth, whatever p.

Left out: embeddings' and the output layer's activations, temporary buffers, and the memory the framework
itself takes (CUDA context, NCCL buffers, fragmentation), for which the planner keeps a reserve.

>>> per_layer = activation_bytes_per_layer(seq_len=4096, micro_batch=1, hidden=8192, n_heads=64, tp=8)
>>> per_layer == 34 * 4096 * 8192 // 8                  # TP + SP + selective: 34 s b h / t
True
>>> activation_bytes_per_layer(2048, 1, 12288, 96, recompute="none") / 2**30   # GPT-3, one GPU: 2.67 GiB
2.671875
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from commlab.errors import CommlabError
from commlab.parallelism.config import RECOMPUTE

BYTES_WEIGHTS, BYTES_GRADS, BYTES_OPTIMIZER = 2, 2, 12


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU."""

    parameters: float
    gradients: float
    optimizer_states: float
    activations: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer_states + self.activations

    def as_GB(self) -> dict[str, float]:
        """Each part and the total in GB (1e9 bytes), rounded to 0.01 GB."""
        parts = asdict(self) | {"total": self.total}
        return {k: round(v / 1e9, 2) for k, v in parts.items()}


def activation_bytes_per_layer(seq_len: int, micro_batch: int, hidden: int, n_heads: int, tp: int = 1,
                               sp: bool = True, cp: int = 1, recompute: str = "selective") -> float:
    """One transformer layer's stored activations on one rank (table in the module docstring)."""
    if recompute not in RECOMPUTE:
        raise CommlabError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    s_local, b, h, a, t = seq_len / cp, micro_batch, hidden, n_heads, tp
    sbh = s_local * b * h
    split = sp and t > 1
    if recompute == "full":
        return 2 * sbh / (t if split else 1)
    scores = 0.0 if recompute == "selective" else 5 * a * b * s_local * seq_len / t
    linear = 34 * sbh / t if split else sbh * (10 + 24 / t)
    return linear + scores


def in_flight_micro_batches(pp: int, n_micro_batches: int) -> int:
    """Micro-batches whose activations the first 1F1B stage holds at once: min(p, m)."""
    return min(pp, n_micro_batches)


def model_state_bytes(n_params: float, tp: int, pp: int, shard_group: int, zero: int,
                      n_layers: int, grad_nbytes: int = BYTES_GRADS) -> tuple[float, float, float]:
    """(parameters, gradients, optimizer states) in bytes on one rank (module docstring); ``grad_nbytes`` 4 for
    FP32 gradients (Megatron-LM's ``main_grad`` buffer when it reduces in FP32), 2 for BF16 ones."""
    n = n_params / (tp * pp)
    weights, grads, optim = BYTES_WEIGHTS * n, grad_nbytes * n, BYTES_OPTIMIZER * n
    if zero >= 1:
        optim /= shard_group
    if zero >= 2:
        grads /= shard_group
    if zero >= 3:
        gathered = 2 * BYTES_WEIGHTS * n_params / (tp * n_layers)     # two layers gathered at a time
        weights = weights / shard_group + gathered
    return weights, grads, optim
