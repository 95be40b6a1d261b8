"""Published dense training runs, and the planner held against them (``commlab plan --published``, chapter 09).

Each run is the layout its authors published, its model, GPUs and batch, the throughput they measured, and
where it is written. The planner is never fitted on them: the compute rate comes from single-GEMM measurements
(:mod:`commlab.parallelism.catalogue`), the network from the cluster model. For each run,
:func:`compare` plans the same job, scores the published layout (at the interleaving and, where the authors do
not say, the ZeRO stage the planner likes best for it) and reports

* whether the published layout fits in memory, its rank, and its predicted throughput against the planner's
  best layout (goal: within 15 %);
* its predicted TFLOPs per GPU against the published figure (goal: within 25 %), counted the way the source
  counts them: ``model`` FLOPs (6 N + 12 s h L per token, Llama 3's MFU) or ``hardware`` FLOPs with the
  recomputed forward (Megatron-LM's eq. 3, which MT-NLG and BLOOM also use);
* where a goal is missed, the term that decides it: the bubble, an exposed communication, or memory.

The planner's best is sought among the layouts the run's framework could run: its ZeRO stages, whether it had
context parallelism and interleaving (``zeros``, ``context_parallel``, ``max_vp``), facts of the software and
its date, not of the run's result.

Megatron-LM's runs (arXiv 2104.04473, table 1) used full recomputation and do not give the micro-batch; MT-NLG
(arXiv 2201.11990, sec. 2.4) and BLOOM (arXiv 2211.05100, sec. 3.4) the same stack. All three predate sequence
parallelism (arXiv 2205.05198, 2022) and FlashAttention in Megatron-LM: their TP all-reduces and
materialised attention scores are modelled as such (``sequence_parallel=False``, ``attention="softmax"``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from commlab.calibration import value
from commlab.errors import CommlabError
from commlab.parallelism.catalogue import ModelSpec
from commlab.parallelism.planner import Layout, plan, score_layout

GOAL_BEST = 0.15
"""The published layout's predicted throughput within 15 % of the planner's best."""
GOAL_TFLOPS = 0.25
"""Predicted TFLOPs per GPU within 25 % of the published figure."""
DEEPSPEED_PIPELINE_SLOWDOWN = value("DEEPSPEED_PIPELINE_SLOWDOWN")
"""Megatron-LM's measured throughput over DeepSpeed's pipeline engine's on the same job: the 530B model of
TP 8 x PP 35 on 2,240 A100 of the same machine with full recomputation, 175 hardware TFLOPs per GPU (42.1 % MFU,
Korthikanti et al.) against MT-NLG's 126 (Smith et al.). A ratio of two published measurements, not of the
planner; what it was checked on is in commlab/data/calibration.csv."""


@dataclass(frozen=True)
class PublishedRun:
    name: str
    model: ModelSpec
    gpu: str
    n_gpus: int
    tp: int
    pp: int
    cp: int
    seq_len: int
    global_batch_tokens: int
    tflops_per_gpu: float
    flops: str
    """"model" or "hardware" (with the recomputed forward): how the source counts its TFLOPs."""
    recompute: str
    """"none", "selective", "full", or "unknown" where the source does not say (:func:`compare`)."""
    source: str
    zeros: tuple[int, ...] = (0, 1)
    """ZeRO stages the run's framework offers: the published layout is scored at the best of them, and the
    planner's best is sought among layouts that framework could run (no ZeRO in Megatron-LM of 2021, ZeRO-1 with
    DeepSpeed's pipeline engine, FSDP inside PP for Llama 3: :data:`FSDP_INSIDE_PP`)."""
    nics_per_node: int = 0
    nic_Gbps: float = 0.0
    sequence_parallel: bool = True
    """False for runs before Megatron-LM's sequence parallelism (2022)."""
    attention: str = "flash"
    """"softmax" for runs before FlashAttention (scores materialised in HBM)."""
    context_parallel: bool = True
    """False where the run's framework had no context parallelism."""
    max_vp: int = 8
    """1 where the run's framework had no interleaved schedule (DeepSpeed's pipeline engine)."""
    grad_reduce: str = "fp32"
    """"bf16" (16-bit) where the run reduced its gradients in 16 bits: Megatron-LM v2's FP16 runs without
    ``--accumulate-allreduce-grads-in-fp32`` (its default; only BF16 forces FP32 accumulation, arguments.py)."""
    overlap_grad_reduce: bool = True
    """False where the run's framework reduced gradients after the last backward (Megatron-LM of 2021-22,
    DeepSpeed's pipeline engine)."""
    framework_slowdown: float = 1.0
    """How much slower than Megatron-LM's schedule the run's framework was measured running the same job
    (:data:`DEEPSPEED_PIPELINE_SLOWDOWN` for DeepSpeed's pipeline engine). The planner times Megatron-LM's
    schedule, so the run's predicted throughput is the planner's divided by it; its rank and its share of the
    best do not change, since the planner's best runs in the same framework."""


def _gpt(name, title, n_params, hidden, layers, heads, vocab, source):
    return ModelSpec(name, title, n_params, hidden, layers, heads, heads, vocab, source, seq_len=2048)


_LLAMA3 = ("Llama Team 2024, 'The Llama 3 Herd of Models', arXiv 2407.21783, table 4 (scaling configurations: "
           "GPUs, TP, CP, PP, DP, sequence length, batch size/DP, tokens/batch, TFLOPs/GPU, BF16 MFU) and sec. "
           "3.3.2 (FSDP without resharding after the forward inside PP)")
_405B = ModelSpec("405B", "Llama 3.1 405B", 405_000_000_000, 16384, 126, 128, 8, 128256, _LLAMA3, ffn=53248,
                  gated=True, global_batch_tokens=16 * 2**20, seq_len=8192)
_MEGATRON = ("Narayanan et al. 2021, 'Efficient Large-Scale Language Model Training on GPU Clusters Using "
             "Megatron-LM', SC21, arXiv 2104.04473, table 1 (80 GB A100, DGX A100 nodes, 8 x 200 Gb/s HDR; "
             "vocabulary 51,200, sequence 2,048)")
_MTNLG = ("Smith et al. 2022, 'Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B', arXiv 2201.11990, "
          "sec. 2.4: batch 1,920, 280/350/420 DGX A100 (80 GB) nodes, TP 8, PP 35, 126/121/113 TFLOPs per GPU")
_BLOOM = ("BigScience 2022, 'BLOOM: A 176B-Parameter Open-Access Multilingual Language Model', arXiv 2211.05100, "
          "sec. 3.4: 48 nodes of 8 A100 80GB, 4 x 100 Gb/s Omni-Path per node, TP 4 x PP 12 x DP 8 with ZeRO-1, "
          "batch 2,048 x 2,048 tokens; BigScience's training page: 'one copy of the model takes 48 GPUs', 'training "
          "throughput: about 150 TFLOPs': https://bigscience.notion.site/BigScience-176B-Model-ad073ca07cdf479398d5f95d88e218c4")

FSDP_INSIDE_PP = (1, 2)
"""FSDP inside a pipeline, in the planner's stages. Llama 3 shards gradients and optimizer state with FSDP and does
not reshard the parameters after the forward (arXiv 2407.21783, sec. 3.3.2): ZeRO-2's sharding, whose gradients
are reduce-scattered after every micro-batch. PyTorch's own pipeline schedules, on which torchtitan composes FSDP2
with PP, instead turn FSDP's gradient sync off for every micro-batch but the last and reduce-scatter once per step
(``torch/distributed/pipelining/stage.py``: ``backward_maybe_with_nosync`` calls
``set_requires_gradient_sync(False)``, ``perform_reduce_grad`` turns it back on after the last backward): ZeRO-1's
traffic, with the whole gradients held through the step. The paper does not say which its framework does, so
both are offered and the run is scored at the faster that fits."""

_BEFORE_2023: dict[str, Any] = dict(sequence_parallel=False, attention="softmax", context_parallel=False,
                                    overlap_grad_reduce=False)
"""What the A100 runs of 2021-22 ran without: sequence parallelism, FlashAttention, context parallelism, and a
gradient reduction overlapped with the backward (module docstring)."""
_MEGATRON_2021: dict[str, Any] = dict(_BEFORE_2023, grad_reduce="bf16", zeros=(0,))
_DEEPSPEED_PIPE: dict[str, Any] = dict(_BEFORE_2023, max_vp=1, framework_slowdown=DEEPSPEED_PIPELINE_SLOWDOWN)
FRAMEWORKS: dict[str, dict[str, Any]] = {"megatron-2021": _MEGATRON_2021,
                                         "megatron-2022": dict(_BEFORE_2023, zeros=(0,)),
                                         "deepspeed-pipeline": _DEEPSPEED_PIPE}
"""The software facts of a run's framework and date, by name (:func:`run_from_record`)."""

RUNS = (
    PublishedRun("Llama 3 405B, 8K, 8,192 H100", _405B, "h100", 8192, 8, 16, 1, 8192, 16 * 2**20, 430, "model",
                 "unknown", _LLAMA3, zeros=FSDP_INSIDE_PP),
    PublishedRun("Llama 3 405B, 8K, 16,384 H100", _405B, "h100", 16384, 8, 16, 1, 8192, 16 * 2**20, 400, "model",
                 "unknown", _LLAMA3, zeros=FSDP_INSIDE_PP),
    PublishedRun("Llama 3 405B, 128K, 16,384 H100", _405B, "h100", 16384, 8, 16, 16, 131072, 16 * 2**20, 380,
                 "model", "unknown", _LLAMA3, zeros=FSDP_INSIDE_PP),
    PublishedRun("MT-NLG 530B, 2,240 A100", _gpt("530B", "MT-NLG 530B", 530_000_000_000, 20480, 105, 128, 50257,
                                                  _MTNLG),
                 "a100-80gb", 2240, 8, 35, 1, 2048, 1920 * 2048, 126, "hardware", "full", _MTNLG,
                 **_DEEPSPEED_PIPE),
    PublishedRun("MT-NLG 530B, 3,360 A100", _gpt("530B", "MT-NLG 530B", 530_000_000_000, 20480, 105, 128, 50257,
                                                  _MTNLG),
                 "a100-80gb", 3360, 8, 35, 1, 2048, 1920 * 2048, 113, "hardware", "full", _MTNLG,
                 **_DEEPSPEED_PIPE),
    PublishedRun("BLOOM 176B, 384 A100", _gpt("176B", "BLOOM", 176_247_000_000, 14336, 70, 112, 250680, _BLOOM),
                 "a100-80gb", 384, 4, 12, 1, 2048, 2048 * 2048, 150, "hardware", "full", _BLOOM, zeros=(1,),
                 nics_per_node=4, nic_Gbps=100.0, **_DEEPSPEED_PIPE),
    PublishedRun("Megatron-LM 18.4B, 256 A100", _gpt("18.4B", "GPT 18.4B", 18_400_000_000, 6144, 40, 48, 51200,
                                                      _MEGATRON),
                 "a100-80gb", 256, 8, 1, 1, 2048, 1024 * 2048, 135, "hardware", "full", _MEGATRON,
                 **_MEGATRON_2021),
    PublishedRun("Megatron-LM 145.6B, 1,536 A100", _gpt("145.6B", "GPT 145.6B", 145_600_000_000, 12288, 80, 96,
                                                         51200, _MEGATRON),
                 "a100-80gb", 1536, 8, 8, 1, 2048, 2304 * 2048, 148, "hardware", "full", _MEGATRON,
                 **_MEGATRON_2021),
    PublishedRun("Megatron-LM 310.1B, 1,920 A100", _gpt("310.1B", "GPT 310.1B", 310_100_000_000, 16384, 96, 128,
                                                         51200, _MEGATRON),
                 "a100-80gb", 1920, 8, 16, 1, 2048, 2160 * 2048, 155, "hardware", "full", _MEGATRON,
                 **_MEGATRON_2021),
)


@dataclass(frozen=True)
class Comparison:
    run: PublishedRun
    published: Layout
    """The published layout as the planner scores it (``reason`` set when it does not fit)."""
    rank: int | None
    best: Layout | None
    n_ranked: int
    recompute: str = "selective"
    """The recomputation the published layout was scored with (the run's, or the faster where it is unknown)."""

    @property
    def fits(self) -> bool:
        return self.published.reason is None

    @property
    def of_best(self) -> float:
        """Predicted throughput of the published layout over the planner's best."""
        if not self.fits or self.best is None:
            return 0.0
        return self.published.tokens_per_s / self.best.tokens_per_s

    @property
    def predicted_tflops(self) -> float:
        """The published layout's TFLOPs per GPU as the planner times it, over the framework's measured
        slowdown (:attr:`PublishedRun.framework_slowdown`), counted as the source counts them."""
        x = self.published
        rate = x.tflops_per_gpu if self.run.flops == "model" else x.hardware_tflops_per_gpu
        return rate / self.run.framework_slowdown

    @property
    def tflops_ratio(self) -> float:
        return self.predicted_tflops / self.run.tflops_per_gpu

    @property
    def meets_best(self) -> bool:
        return self.fits and self.of_best >= 1 - GOAL_BEST

    @property
    def meets_tflops(self) -> bool:
        return self.fits and abs(self.tflops_ratio - 1) <= GOAL_TFLOPS

    def deciding(self) -> str:
        """What decides a miss: memory, or the largest loss term of the published layout (or of the best)."""
        if not self.fits:
            return "memory"
        if self.meets_best and self.meets_tflops:
            return ""
        if self.meets_best and self.tflops_ratio > 1 + GOAL_TFLOPS:
            return "compute (the run reached less than the measured GEMM rate and HBM bandwidth allow)"
        return self.published.deciding_term()

    def line(self) -> str:
        r, x = self.run, self.published
        lay = f"TP {r.tp} x CP {r.cp} x PP {r.pp} x DP {x.dp}"
        if not self.fits:
            return f"{r.name}: published {lay} does not fit: {x.reason}"
        best = self.best
        assert best is not None
        miss = f"; decided by {self.deciding()}" if self.deciding() else ""
        slow = (f", the planner's rate / {r.framework_slowdown:.2f} for its framework, measured against Megatron-LM"
                if r.framework_slowdown != 1 else "")
        return (f"{r.name}: published {lay} (v {x.vp}, ZeRO-{x.zero}, b {x.micro_batch}, {self.recompute} "
                f"recomputation) rank {self.rank} of "
                f"{self.n_ranked}, {self.of_best:.0%} of the best ({best.name}); predicted {self.predicted_tflops:.0f} "
                f"vs published {r.tflops_per_gpu:g} TFLOPs/GPU ({r.flops} FLOPs, {self.tflops_ratio:.2f}x){slow}{miss}")

    def as_json(self) -> dict:
        r, x, best = self.run, self.published, self.best
        return {"name": r.name, "source": r.source, "gpu": r.gpu, "gpus": r.n_gpus, "seq": r.seq_len,
                "global_batch_tokens": r.global_batch_tokens, "published_layout": {"tp": r.tp, "cp": r.cp, "pp": r.pp,
                                                                                  "dp": x.dp},
                "scored_as": {"vp": x.vp, "zero": x.zero, "micro_batch": x.micro_batch, "recompute": self.recompute},
                "fits": self.fits, "reason": x.reason, "rank": self.rank, "of": self.n_ranked,
                "predicted_tokens_per_s": round(x.tokens_per_s / r.framework_slowdown, 1),
                "framework_slowdown": r.framework_slowdown,
                "best": None if best is None else {"name": best.name, "tokens_per_s": round(best.tokens_per_s, 1)},
                "of_best": round(self.of_best, 4), "published_tflops_per_gpu": r.tflops_per_gpu, "flops": r.flops,
                "predicted_tflops_per_gpu": round(self.predicted_tflops, 1),
                "tflops_ratio": round(self.tflops_ratio, 4),
                "meets_best": self.meets_best, "meets_tflops": self.meets_tflops, "deciding": self.deciding()}


def _score(run: PublishedRun, recompute: str):
    result = plan(run.model, run.n_gpus, run.gpu, seq_len=run.seq_len, global_batch_tokens=run.global_batch_tokens,
                  recompute=recompute, nics_per_node=run.nics_per_node, nic_Gbps=run.nic_Gbps,
                  sequence_parallel=run.sequence_parallel, attention=run.attention, zero_stages=run.zeros,
                  context_parallel=run.context_parallel, max_vp=run.max_vp,
                  overlap_grad_reduce=run.overlap_grad_reduce, grad_reduce=run.grad_reduce)
    dp = run.n_gpus // (run.tp * run.pp * run.cp)
    mine, _ = score_layout(result, {"tp": run.tp, "cp": run.cp, "pp": run.pp, "dp": dp})   # at its best zero and vp
    return result, mine


def compare(run: PublishedRun) -> Comparison:
    """Plan ``run``'s job and score its published layout (module docstring); where the source does not say
    which recomputation it used (``recompute="unknown"``), the one under which the published layout runs fastest,
    selective or full, and the planner's best under the same."""
    options = ("selective", "full") if run.recompute == "unknown" else (run.recompute,)
    scored = [_score(run, r) for r in options]
    result, mine = max(scored, key=lambda pair: (pair[1].reason is None, pair[1].tokens_per_s))
    rank = result.rank_of(mine) if mine.reason is None else None
    best = result.ranked[0] if result.ranked else None
    return Comparison(run, mine, rank, best, len(result.ranked), result.config.recompute)


def run_from_record(record: dict) -> PublishedRun:
    """A published run from a flat record: ``name``, ``source``, the GPT shape (``params``, ``hidden``, ``layers``,
    ``heads``, ``vocab``), ``gpu`` (default ``a100-80gb``), ``gpus``, ``tp``, ``pp``, ``cp``, ``seq``,
    ``batch_sequences``, the throughput as ``tflops_per_gpu`` or ``mfu`` (of the GPU's dense BF16 peak), ``flops``,
    ``recompute``, ``framework`` (:data:`FRAMEWORKS`) and optionally ``sequence_parallel``."""
    from commlab.parallelism.catalogue import gpu as find_gpu

    try:
        gpu = record.get("gpu", "a100-80gb")
        tflops = record["tflops_per_gpu"] if "tflops_per_gpu" in record else \
            record["mfu"] * find_gpu(gpu).peak_bf16_TFLOPS
        facts = dict(FRAMEWORKS[record["framework"]])
        if "sequence_parallel" in record:
            facts["sequence_parallel"] = bool(record["sequence_parallel"])
        model = _gpt(record["name"], record["name"], int(record["params"]), int(record["hidden"]),
                     int(record["layers"]), int(record["heads"]), int(record["vocab"]), record["source"])
        return PublishedRun(record["name"], model, gpu, int(record["gpus"]), int(record["tp"]), int(record["pp"]),
                            int(record.get("cp", 1)), int(record["seq"]),
                            int(record["batch_sequences"]) * int(record["seq"]), round(float(tflops), 1),
                            record["flops"], record["recompute"], record["source"], **facts)
    except KeyError as exc:
        raise CommlabError(f"published run record {record.get('name', record)!r} lacks {exc}; frameworks: "
                           f"{', '.join(FRAMEWORKS)}") from None


def compare_all(runs=RUNS) -> tuple[Comparison, ...]:
    return tuple(compare(r) for r in runs)
