"""The GPUs and models the layout planner knows (chapter 09, ``commlab plan``), each figure with its source.

A GPU is its memory, its dense BF16 tensor throughput, the link between the GPUs of a node (NVSwitch) and the
network card each GPU has to other nodes. A model is its shape: what the planner's memory and FLOP counts need.

>>> gpu("H100").memory_GiB, gpu("h100").peak_bf16_TFLOPS, gpu("h100").intra, gpu("h100").inter
(80.0, 989.0, 'nvswitch3', 'ib-ndr')
>>> model("70b").n_heads, model("70B").n_kv_heads
(64, 8)
>>> gpu("h800")
Traceback (most recent call last):
...
commlab.errors.CommlabError: unknown GPU 'h800'; known GPUs: a100, h100, h200, b200
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.errors import CommlabError


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model as the planner sees it."""

    name: str
    title: str
    memory_GiB: float
    """HBM capacity (vendors' "80 GB" of HBM is 80 GiB: nvidia-smi shows about 80 x 1024 MiB)."""
    peak_bf16_TFLOPS: float
    """Dense BF16 tensor-core peak, 1e12 FLOP/s (no sparsity)."""
    intra: str
    """commlab.hardware link between the GPUs of one node."""
    inter: str
    """commlab.hardware link of the network card each GPU has to other nodes."""
    gpus_per_node: int
    source: str


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer's shape."""

    name: str
    title: str
    n_params: int
    hidden: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    """Key-value heads (grouped-query attention); equal to n_heads for multi-head attention."""
    vocab: int
    source: str

    @property
    def kv_hidden(self) -> int:
        """Width of K (or V) per token: h x kv_heads / heads."""
        return self.hidden * self.n_kv_heads // self.n_heads


_GPUS = (
    GpuSpec("a100", "A100 SXM4 80GB", 80.0, 312.0, "nvswitch2", "ib-hdr", 8,
            "NVIDIA A100 datasheet: 80 GB HBM2e, 312 TFLOPS BF16 dense; DGX A100: NVSwitch gen 2, "
            "8x ConnectX-6 HDR 200 Gb/s, one per GPU"),
    GpuSpec("h100", "H100 SXM5 80GB", 80.0, 989.0, "nvswitch3", "ib-ndr", 8,
            "NVIDIA H100 datasheet: 80 GB HBM3, 989 TFLOPS BF16 dense; DGX H100: NVSwitch gen 3 (NVLink 4), "
            "8x ConnectX-7 NDR 400 Gb/s, one per GPU"),
    GpuSpec("h200", "H200 SXM 141GB", 141.0, 989.0, "nvswitch3", "ib-ndr", 8,
            "NVIDIA H200 datasheet: 141 GB HBM3e, 989 TFLOPS BF16 dense; HGX H200: NVLink 4 through NVSwitch, "
            "ConnectX-7 NDR 400 Gb/s per GPU"),
    GpuSpec("b200", "B200 180GB", 180.0, 2250.0, "nvswitch4", "ib-ndr", 8,
            "NVIDIA DGX B200 datasheet: 1440 GB for 8 GPUs, 72 PFLOPS FP8 training (2.25 PFLOPS BF16 dense per "
            "GPU); NVLink 5 through NVSwitch; 8x ConnectX-7 400 Gb/s"),
)

_MODELS = (
    ModelSpec("1.3B", "GPT-3 XL", 1_300_000_000, 2048, 24, 24, 24, 50257,
              "Brown et al. 2020, 'Language Models are Few-Shot Learners', table 2.1"),
    ModelSpec("7B", "Llama 2 7B", 6_738_415_616, 4096, 32, 32, 32, 32000,
              "Touvron et al. 2023, 'Llama 2', table 1 and the released config (llama-2-7b)"),
    ModelSpec("13B", "Llama 2 13B", 13_015_864_320, 5120, 40, 40, 40, 32000,
              "Touvron et al. 2023, 'Llama 2', and the released config (llama-2-13b)"),
    ModelSpec("70B", "Llama 2 70B", 68_976_648_192, 8192, 80, 64, 8, 32000,
              "Touvron et al. 2023, 'Llama 2' (grouped-query attention, 8 KV heads), released config (llama-2-70b)"),
    ModelSpec("175B", "GPT-3", 175_000_000_000, 12288, 96, 96, 96, 50257,
              "Brown et al. 2020, 'Language Models are Few-Shot Learners', table 2.1"),
    ModelSpec("405B", "Llama 3.1 405B", 405_000_000_000, 16384, 126, 128, 8, 128256,
              "Llama Team 2024, 'The Llama 3 Herd of Models', table 3"),
)


def gpu_names() -> tuple[str, ...]:
    return tuple(g.name for g in _GPUS)


def model_names() -> tuple[str, ...]:
    return tuple(m.name for m in _MODELS)


def gpu(name: str | GpuSpec) -> GpuSpec:
    """A GPU by name (case ignored); an unknown name lists the known ones."""
    if isinstance(name, GpuSpec):
        return name
    for item in _GPUS:
        if item.name == str(name).strip().lower():
            return item
    raise CommlabError(f"unknown GPU {name!r}; known GPUs: {', '.join(gpu_names())}")


def model(name: str | ModelSpec) -> ModelSpec:
    """A model by size ("70B", "70b"); an unknown size lists the known ones."""
    if isinstance(name, ModelSpec):
        return name
    for item in _MODELS:
        if item.name.lower() == str(name).strip().lower():
            return item
    raise CommlabError(f"unknown model {name!r}; known models: {', '.join(model_names())}")
