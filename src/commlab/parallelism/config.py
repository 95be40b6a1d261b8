"""The model and the parallel layout, as typed configs (chapter 09).

>>> model = ModelConfig(n_params=7 * 10**9, hidden=4096, n_layers=32, seq_len=4096)
>>> model.activation_nbytes                    # b * s * h * 2 bytes for one micro-batch of one sequence
33554432
>>> ParallelConfig(dp=8, tp=8, pp=2).world_size
128
>>> ParallelConfig(dp=2, cp=4, tp=8).world_size, ParallelConfig(dp=2, cp=4, tp=8).grad_group
(64, 8)
>>> ParallelConfig(dp=8, sp=True)
Traceback (most recent call last):
...
commlab.errors.CommlabError: sp=True (sequence parallelism) works inside a tensor-parallel group: needs tp > 1, got tp=1
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from commlab.errors import CommlabError

CP_KINDS = ("ring", "ulysses")
RECOMPUTE = ("none", "selective", "full")


def _check_whole(owner: str, name: str, value: object, low: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise CommlabError(f"{owner}.{name} must be a whole number >= {low}, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """A transformer as the communication sees it."""

    n_params: int
    """Total parameters of the model."""
    hidden: int
    """Hidden size h."""
    n_layers: int
    """Transformer layers."""
    seq_len: int
    """Sequence length s, tokens."""
    micro_batch: int = 1
    """Sequences per micro-batch on one data-parallel rank, b."""
    n_micro_batches: int = 1
    """Micro-batches per optimizer step, m (pipeline micro-batches or gradient accumulation)."""
    dtype_nbytes: int = 2
    """Bytes per element of what is communicated (2: FP16/BF16 parameters, gradients and activations)."""
    n_moe_layers: int = 0
    """Layers whose MLP is a mixture of experts (0: a dense model)."""
    top_k: int = 1
    """Experts each token is routed to in a MoE layer."""
    kv_hidden: int | None = None
    """Width of the keys (and of the values) per token: h with multi-head attention (None), h x kv_heads / heads
    with grouped-query attention. Context parallelism passes K and V around, so its traffic follows this."""

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name == "kv_hidden" and self.kv_hidden is None:
                continue
            _check_whole("ModelConfig", f.name, getattr(self, f.name), low=0 if f.name == "n_moe_layers" else 1)
        if self.n_moe_layers > self.n_layers:
            raise CommlabError(f"ModelConfig.n_moe_layers={self.n_moe_layers} cannot exceed "
                               f"n_layers={self.n_layers}")

    @property
    def params_nbytes(self) -> int:
        """Parameters (= gradients) in bytes: n_params * dtype_nbytes."""
        return self.n_params * self.dtype_nbytes

    @property
    def activation_nbytes(self) -> int:
        """One micro-batch's hidden states between layers: b * s * h * dtype_nbytes."""
        return self.micro_batch * self.seq_len * self.hidden * self.dtype_nbytes

    @property
    def kv_width(self) -> int:
        """Elements of K (or V) per token: ``kv_hidden``, or h when it is None (multi-head attention)."""
        return self.hidden if self.kv_hidden is None else self.kv_hidden


@dataclass(frozen=True, kw_only=True)
class ParallelConfig:
    """How the ranks are split: world size = dp * cp * tp * pp; expert parallelism inside data parallelism."""

    dp: int = 1
    """Data-parallel ranks (model replicas or ZeRO shards)."""
    tp: int = 1
    """Tensor-parallel ranks (Megatron-LM)."""
    pp: int = 1
    """Pipeline stages."""
    ep: int = 1
    """Expert-parallel ranks; formed inside the data-parallel group, so ep divides dp."""
    zero: int = 0
    """ZeRO stage for the data-parallel group: 0 (plain DDP), 1, 2, or 3 (FSDP's full sharding)."""
    sp: bool = False
    """Sequence parallelism with TP (Korthikanti et al. 2022): all-gather + reduce-scatter replace all-reduce."""
    pp_virtual: int = 1
    """Model chunks per pipeline stage (interleaved 1F1B schedule), v."""
    cp: int = 1
    """Context-parallel ranks: each holds s/cp tokens of every sequence (ring attention or Ulysses)."""
    cp_kind: str = "ring"
    """How context parallelism moves attention's inputs: "ring" (K and V blocks passed round a ring by send/recv,
    Liu et al. 2023) or "ulysses" (all-to-alls that swap the sequence split for a head split, Jacobs et al. 2023)."""
    recompute: str = "selective"
    """Activation recomputation (Korthikanti et al. 2022): "none", "selective" (attention's core only, no extra
    communication) or "full" (each layer's forward again in the backward, its TP collectives included)."""

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp", "ep", "pp_virtual", "cp"):
            _check_whole("ParallelConfig", name, getattr(self, name))
        if self.cp_kind not in CP_KINDS:
            raise CommlabError(f"ParallelConfig.cp_kind must be one of {', '.join(CP_KINDS)}, got {self.cp_kind!r}")
        if self.recompute not in RECOMPUTE:
            raise CommlabError(f"ParallelConfig.recompute must be one of {', '.join(RECOMPUTE)}, "
                               f"got {self.recompute!r}")
        if self.zero not in (0, 1, 2, 3) or isinstance(self.zero, bool):
            raise CommlabError(f"ParallelConfig.zero must be 0, 1, 2 or 3, got {self.zero!r}")
        if not isinstance(self.sp, bool):
            raise CommlabError(f"ParallelConfig.sp must be True or False, got {self.sp!r}")
        if self.sp and self.tp == 1:
            raise CommlabError(f"sp=True (sequence parallelism) works inside a tensor-parallel group: "
                               f"needs tp > 1, got tp={self.tp}")
        if self.dp % self.ep:
            raise CommlabError(f"ep must divide dp (expert-parallel groups are formed inside the data-parallel "
                               f"group), got ep={self.ep}, dp={self.dp}")
        if self.pp_virtual > 1 and self.pp == 1:
            raise CommlabError(f"pp_virtual={self.pp_virtual} needs pipeline parallelism, got pp=1")

    @property
    def world_size(self) -> int:
        return self.dp * self.cp * self.tp * self.pp

    @property
    def grad_group(self) -> int:
        """Ranks that share (and reduce) the same gradients: dp x cp (context-parallel ranks hold the same
        weights, like data-parallel ones; Megatron-LM reduces gradients over both)."""
        return self.dp * self.cp
