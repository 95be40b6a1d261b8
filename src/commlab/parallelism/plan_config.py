"""What a plan is asked for: the model, the GPUs, the batch and what the framework offers (``commlab plan``).

:class:`PlanConfig` fills what it is not given from the model's and the GPU's own figures and validates every field
once, each message naming the value (chapter 09, :mod:`commlab.parallelism.planner`).
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.parallelism.catalogue import GpuSpec, ModelSpec, gpu as find_gpu, model as find_model
from commlab.parallelism.config import RECOMPUTE

GRAD_REDUCE = ("fp32", "bf16")
ATTENTION = ("flash", "softmax")
MAX_VP = 8


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
