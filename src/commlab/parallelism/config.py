"""The model and the parallel layout, as typed configs (chapter 09).

>>> model = ModelConfig(n_params=7 * 10**9, hidden=4096, n_layers=32, seq_len=4096)
>>> model.activation_nbytes                    # b * s * h * 2 bytes for one micro-batch of one sequence
33554432
>>> ParallelConfig(dp=8, tp=8, pp=2).world_size
128
>>> ParallelConfig(dp=8, sp=True)
Traceback (most recent call last):
...
commlab.errors.CommlabError: sp=True (sequence parallelism) works inside a tensor-parallel group: needs tp > 1, got tp=1
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from commlab.errors import CommlabError


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

    def __post_init__(self) -> None:
        for f in fields(self):
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


@dataclass(frozen=True, kw_only=True)
class ParallelConfig:
    """How the ranks are split: world size = dp * tp * pp; expert parallelism inside data parallelism."""

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

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp", "ep", "pp_virtual"):
            _check_whole("ParallelConfig", name, getattr(self, name))
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
        return self.dp * self.tp * self.pp
