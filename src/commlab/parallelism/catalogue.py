"""The GPUs and models the layout planner knows (chapter 09, ``commlab plan``), each figure with its source.

A GPU is its memory, its dense BF16 tensor peak, the rate it reaches on large GEMMs (measured, cited), its HBM
bandwidth, and the node it comes in: GPUs per node on NVSwitch and the NICs of that node to other nodes. A model
is its shape: what the planner's memory and FLOP counts need; any dense decoder can be given as
``layers=L,hidden=H,heads=A[,kv_heads=K][,ffn=F][,gated=0|1][,vocab=V]`` (:func:`model`).

**The achieved GEMM rate.** The planner times the model's FLOPs at ``gemm_TFLOPS``, the Maximum Achievable Matmul
FLOPS (MAMF) that Stas Bekman's ``mamf-finder.py`` measured for BF16 ``matmul`` on each GPU (the comparison table
of ml-engineering's accelerator chapter, :data:`MAMF_SOURCE`): 271.2 of 312 TFLOPS on an A100 SXM (86.9 %), 794.5
of 989 on an H100 SXM (80.3 %; "H200 is the same"), 1745 of 2250 on a B200 (77.6 %). The H800 has the H100's
compute (NVIDIA cut its NVLink, not its SMs) and takes its figure; the A100 40GB the A100's. These are
measurements of single GEMMs, never fitted on a training run.

>>> gpu("H100").memory_GiB, gpu("h100").peak_bf16_TFLOPS, gpu("h100").gemm_TFLOPS, gpu("a100").name
(80.0, 989.0, 794.5, 'a100-80gb')
>>> model("70b").n_heads, model("70B").n_kv_heads, model("layers=2,hidden=1024,heads=8").n_params
(64, 8, 25165824)
>>> gpu("h900")
Traceback (most recent call last):
...
commlab.errors.CommlabError: unknown GPU 'h900'; known GPUs: a100-40gb, a100-80gb (a100), h100, h800, h200, b200
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from commlab.errors import CommlabError
from commlab.fabric.nodes import node as find_node
from commlab.hardware import link
from commlab.hardware.gpus import gpu as gpu_record
from commlab.units import BITS_PER_BYTE

MAMF_SOURCE = ("Stas Bekman, ml-engineering, 'Maximum Achievable Matmul FLOPS comparison table' (BF16 matmul, "
               "mamf-finder.py): https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md"
               "#maximum-achievable-matmul-flops-comparison-table")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model as the planner sees it, in the node it usually comes in."""

    name: str
    title: str
    memory_GiB: float
    """HBM capacity (vendors' "80 GB" of HBM is 80 GiB: nvidia-smi shows about 80 x 1024 MiB)."""
    peak_bf16_TFLOPS: float
    """Dense BF16 tensor-core peak, 1e12 FLOP/s (no sparsity)."""
    intra: str
    """commlab.hardware link between the GPUs of one node."""
    inter: str
    """commlab.hardware link of one NIC to other nodes."""
    gpus_per_node: int
    source: str
    gemm_TFLOPS: float = 0.0
    """Measured BF16 rate of large GEMMs (MAMF, module docstring)."""
    gemm_source: str = MAMF_SOURCE
    hbm_TBps: float = 0.0
    """HBM bandwidth, 1e12 bytes/s (datasheet)."""
    nics_per_node: int = 8
    nic_Gbps: float = 400.0
    net: str = "ib"
    """Network kind for NCCL's model (commlab.tuner.machine.NETS)."""
    cluster_gpu: str = ""
    """The GPU's name in commlab.tuner.machine.GPUS (its NVLink links for NCCL's model)."""
    attention_fraction: float = 0.35
    """FlashAttention-2's share of the dense BF16 peak on this GPU, for the unmasked half of a causal attention:
    35 % on an H100 ("FlashAttention-2 achieves only 35% utilization on the H100 GPU", Shah et al. 2024,
    FlashAttention-3, arXiv 2407.08608, abstract; the H800 and H200 have the same SMs), 50 % on an A100 (the low
    end of "50-73% of the theoretical maximum FLOPs/s on A100" for the forward, Dao 2023, arXiv 2307.08691,
    abstract: the backward is the slower pass); the B200 takes the H100's, no published FlashAttention-2 figure
    being at hand for it."""
    sms: int = 132
    """Streaming multiprocessors: how many GEMM tiles run at once (:mod:`commlab.parallelism.gemm`); A100 108
    (NVIDIA A100 Tensor Core GPU Architecture whitepaper), H100 SXM5, H800 and H200 132 (NVIDIA H100 Tensor Core
    GPU Architecture whitepaper), B200 148 (two dies of 74)."""

    @property
    def gemm_fraction(self) -> float:
        """gemm_TFLOPS / peak_bf16_TFLOPS."""
        return self.gemm_TFLOPS / self.peak_bf16_TFLOPS


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
    ffn: int = 0
    """MLP inner width (0: 4 h)."""
    gated: bool = False
    """A gated MLP (SwiGLU: three matrices h x f) instead of two."""
    global_batch_tokens: int = 4 * 2**20
    """Tokens per optimizer step the model was trained with (the planner's default)."""
    seq_len: int = 4096
    """The sequence length the model was trained with (the planner's default)."""

    @cached_property
    def kv_hidden(self) -> int:
        """Width of K (or V) per token: h x kv_heads / heads."""
        return self.hidden * self.n_kv_heads // self.n_heads

    @property
    def ffn_width(self) -> int:
        return self.ffn or 4 * self.hidden

    @cached_property
    def layer_params(self) -> int:
        """Weights of one layer: Q and O (h x h each), K and V (h x h_kv each), the MLP (2 or 3 x h x f)."""
        h = self.hidden
        return 2 * h * h + 2 * h * self.kv_hidden + (3 if self.gated else 2) * h * self.ffn_width

    @cached_property
    def embedding_params(self) -> int:
        """One vocabulary matrix, V x h (the input embedding; the output layer has another)."""
        return self.vocab * self.hidden


def _preset(name: str, title: str, record: str, server: str, source: str, gemm_TFLOPS: float,
            cluster_gpu: str, sms: int = 132, attention_fraction: float = 0.35) -> GpuSpec:
    """A planner preset: memory, BF16 peak and HBM from the GPU's record (:mod:`commlab.hardware.gpus`), the GPUs,
    NVLink fabric and NICs of a node from its server (:func:`commlab.fabric.nodes.node`); ``sms`` and
    ``attention_fraction``: the planner's own compute fields of :class:`GpuSpec`."""
    r, n = gpu_record(record), find_node(server)
    if r.memory_GiB is None or r.peak_bf16_TFLOPS is None or r.hbm_GBps is None:
        raise CommlabError(f"GPU {record!r} has no memory, BF16 peak or HBM figure for the planner")
    return GpuSpec(name, title, r.memory_GiB, r.peak_bf16_TFLOPS, n.nvlink, n.nic, n.gpus, source, gemm_TFLOPS,
                   hbm_TBps=r.hbm_GBps / 1000, nics_per_node=n.nics,
                   nic_Gbps=link(n.nic).unidir_GBps * BITS_PER_BYTE, cluster_gpu=cluster_gpu, sms=sms,
                   attention_fraction=attention_fraction)


_SXM_A100 = ("NVIDIA A100 datasheet: {mem} HBM2e, 312 TFLOPS BF16 dense, {bw} TB/s; DGX A100: 8 GPUs on NVSwitch gen "
             "2, 8x ConnectX-6 HDR 200 Gb/s for the compute fabric (DGX A100 user guide): "
             "https://www.nvidia.com/en-us/data-center/a100/")
_GPUS = (
    _preset("a100-40gb", "A100 SXM4 40GB", "a100-40gb", "dgx-a100",
            _SXM_A100.format(mem="40 GB", bw="1.555"), 271.2, cluster_gpu="a100", sms=108,
            attention_fraction=0.50),
    _preset("a100-80gb", "A100 SXM4 80GB", "a100", "dgx-a100",
            _SXM_A100.format(mem="80 GB", bw="2.039"), 271.2, cluster_gpu="a100", sms=108,
            attention_fraction=0.50),
    _preset("h100", "H100 SXM5 80GB", "h100", "dgx-h100",
            "NVIDIA H100 datasheet: 80 GB HBM3, 3.35 TB/s, 989 TFLOPS BF16 dense; DGX H100 user guide: NVSwitch "
            "gen 3 (NVLink 4, 900 GB/s), 8x ConnectX-7 NDR 400 Gb/s, one per GPU: "
            "https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html", 794.5,
            cluster_gpu="h100"),
    _preset("h800", "H800 SXM5 80GB", "h800", "dgx-h100",
            "NVIDIA H800: the H100 SXM5 with NVLink cut to 400 GB/s (8 links) for export, 80 GB HBM3; DeepSeek-V3 "
            "(arXiv 2412.19437, sec. 3.1): 2048 H800, 8 per node on NVLink/NVSwitch, InfiniBand between nodes; "
            "8 x 400 Gb/s per node assumed as on DGX H100", 794.5, cluster_gpu="h800"),
    _preset("h200", "H200 SXM 141GB", "h200", "dgx-h100",
            "NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s, 989 TFLOPS BF16 dense; DGX H200: NVLink 4 through "
            "NVSwitch, 8x ConnectX-7 400 Gb/s: https://www.nvidia.com/en-us/data-center/h200/", 794.5,
            cluster_gpu="h200"),
    _preset("b200", "B200 180GB", "b200", "dgx-b200",
            "NVIDIA DGX B200 datasheet: 1440 GB for 8 GPUs, 64 TB/s HBM3e (8 TB/s each), 72 PFLOPS FP8 training "
            "(2.25 PFLOPS BF16 dense per GPU); NVLink 5 through NVSwitch; 8x ConnectX-7 400 Gb/s: "
            "https://www.nvidia.com/en-us/data-center/dgx-b200/", 1745.0, cluster_gpu="b200", sms=148),
)
_ALIASES = {"a100": "a100-80gb"}

_M = 2**20
_MODELS = (
    ModelSpec("1.3B", "GPT-3 XL", 1_300_000_000, 2048, 24, 24, 24, 50257,
              "Brown et al. 2020, 'Language Models are Few-Shot Learners', table 2.1 (batch 1M tokens)",
              global_batch_tokens=1 * _M, seq_len=2048),
    ModelSpec("7B", "Llama 2 7B", 6_738_415_616, 4096, 32, 32, 32, 32000,
              "Touvron et al. 2023, 'Llama 2' (arXiv 2307.09288), table 1 and sec. 2.2 (4M-token batches), and the "
              "released config (llama-2-7b)", ffn=11008, gated=True),
    ModelSpec("13B", "Llama 2 13B", 13_015_864_320, 5120, 40, 40, 40, 32000,
              "Touvron et al. 2023, 'Llama 2' (arXiv 2307.09288), and the released config (llama-2-13b)",
              ffn=13824, gated=True),
    ModelSpec("70B", "Llama 2 70B", 68_976_648_192, 8192, 80, 64, 8, 32000,
              "Touvron et al. 2023, 'Llama 2' (arXiv 2307.09288; grouped-query attention, 8 KV heads), released "
              "config (llama-2-70b)", ffn=28672, gated=True),
    ModelSpec("175B", "GPT-3", 175_000_000_000, 12288, 96, 96, 96, 50257,
              "Brown et al. 2020, 'Language Models are Few-Shot Learners', table 2.1 (batch 3.2M tokens)",
              global_batch_tokens=1536 * 2048, seq_len=2048),
    ModelSpec("405B", "Llama 3.1 405B", 405_000_000_000, 16384, 126, 128, 8, 128256,
              "Llama Team 2024, 'The Llama 3 Herd of Models' (arXiv 2407.21783), table 3; 16M-token batches at "
              "8,192 tokens (table 4)", ffn=53248, gated=True, global_batch_tokens=16 * _M, seq_len=8192),
)

MODEL_FIELDS = ("layers", "hidden", "heads", "kv_heads", "ffn", "gated", "vocab")


def gpu_names() -> tuple[str, ...]:
    return tuple(g.name for g in _GPUS)


def model_names() -> tuple[str, ...]:
    return tuple(m.name for m in _MODELS)


def gpu(name: str | GpuSpec) -> GpuSpec:
    """A GPU by name (case ignored; ``a100`` is the 80 GB A100); an unknown name lists the known ones."""
    if isinstance(name, GpuSpec):
        return name
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    for item in _GPUS:
        if item.name == key:
            return item
    known = ", ".join(g.name + "".join(f" ({a})" for a, t in _ALIASES.items() if t == g.name) for g in _GPUS)
    raise CommlabError(f"unknown GPU {name!r}; known GPUs: {known}")


def _whole_field(text: str, key: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    low = 0 if key == "gated" else 1
    if number < low or (key == "gated" and number > 1):
        expected = "0 or 1" if key == "gated" else "a whole number >= 1"
        raise CommlabError(f"--model {text!r}: {key} must be {expected}, got {value!r}")
    return number


def custom_model(text: str) -> ModelSpec:
    """``layers=L,hidden=H,heads=A[,kv_heads=K][,ffn=F][,gated=0|1][,vocab=V]``: parameters from the shape."""
    values: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in MODEL_FIELDS:
            raise CommlabError(f"--model {text!r}: unknown field {key!r}; the fields are {', '.join(MODEL_FIELDS)} "
                               f"(layers, hidden and heads required), or a preset: {', '.join(model_names())}")
        values[key] = _whole_field(text, key, value.strip())
    missing = [k for k in ("layers", "hidden", "heads") if k not in values]
    if missing:
        raise CommlabError(f"--model {text!r}: needs {', '.join(missing)} (fields: {', '.join(MODEL_FIELDS)})")
    h, heads = values["hidden"], values["heads"]
    kv = values.get("kv_heads", heads)
    if h % heads or heads % kv:
        raise CommlabError(f"--model {text!r}: heads={heads} must divide hidden={h} and kv_heads={kv} must divide "
                           f"heads")
    gated = bool(values.get("gated", 0))
    ffn = values.get("ffn", 0)
    shell = ModelSpec("custom", "", 0, h, values["layers"], heads, kv, values.get("vocab", 0), "", ffn=ffn,
                      gated=gated)
    n_params = shell.n_layers * shell.layer_params + 2 * shell.embedding_params
    title = f"{n_params / 1e9:.1f}B ({text})"
    return ModelSpec(text, title, n_params, h, shell.n_layers, heads, kv, shell.vocab,
                     "given on the command line; parameters counted from the shape (untied embeddings)", ffn=ffn,
                     gated=gated)


def model(name: str | ModelSpec) -> ModelSpec:
    """A model by size ("70B", "70b") or by shape (``layers=...``, :func:`custom_model`); an unknown size lists
    the known ones."""
    if isinstance(name, ModelSpec):
        return name
    text = str(name).strip()
    if "=" in text:
        return custom_model(text)
    for item in _MODELS:
        if item.name.lower() == text.lower():
            return item
    raise CommlabError(f"unknown model {name!r}; known models: {', '.join(model_names())}, or "
                       f"layers=L,hidden=H,heads=A[,kv_heads=K][,ffn=F][,gated=0|1][,vocab=V]")
