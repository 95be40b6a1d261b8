"""``commlab plan --model SIZE|layers=L,hidden=H,heads=A[,...] --gpus N --gpu NAME [--global-batch-tokens T]
[--seq S] [--micro-batches M] [--recompute none|selective|full] [--grad-reduce fp32|bf16] [--gpus-per-node G]
[--nics-per-node K] [--nic-gbps R] [--layout tp=8,pp=16[,vp=V][,cp=C][,zero=Z]] [--json]``, and
``commlab plan --published [--json]``: rank the parallel layouts of a training job (chapter 09).

Every TP x CP x PP (x interleaved chunks) x DP layout and ZeRO stage of N GPUs is costed in memory per GPU and in
step time: compute at the GPU's measured GEMM rate, every collective on the cluster model (the node's NICs,
NCCL's algorithm), the pipeline bubble. The global batch is the user's (the model's own by default, printed);
each layout derives its micro-batch size and count from it. Layouts that do not fit, or cannot run, are listed
with the reason instead of being ranked. ``--json`` prints ``layouts`` (ranked, best first), each with ``tp``,
``cp``, ``pp``, ``vp``, ``dp``, ``zero``, ``micro_batch``, ``micro_batches``, ``global_batch_tokens``,
``memory_GB`` (``parameters``, ``gradients``, ``optimizer_states``, ``activations``, ``total``),
``communication_s`` (seconds per step per collective, before overlap), ``communication`` (each item),
``exposed_communication_s``, ``terms_s``, ``step_s``, ``tokens_per_s``, ``mfu`` and ``tflops_per_gpu``; and
``rejected``, each with its ``reason``. The top-level ``micro_batches`` is ``--micro-batches`` when given, else the
best layout's (``micro_batches_fixed`` says which). ``--published`` holds the planner against published runs.
"""
from __future__ import annotations

from commlab.cli._common import print_json

SHOWN = 10


def add_parser(sub):
    p = sub.add_parser("plan", help="rank TP/CP/PP/DP/ZeRO layouts by memory and step time",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--model", metavar="SIZE", help="a preset (1.3B, 7B, 13B, 70B, 175B, 405B) or "
                   "layers=L,hidden=H,heads=A[,kv_heads=K][,ffn=F][,gated=0|1][,vocab=V]")
    p.add_argument("--gpus", metavar="N", help="number of GPUs")
    p.add_argument("--gpu", metavar="NAME", help="GPU: a100-40gb, a100-80gb (a100), h100, h800, h200, b200")
    p.add_argument("--gpus-per-node", default=None, metavar="G", help="GPUs per node on NVSwitch (default: the GPU's "
                   "node, 8)")
    p.add_argument("--nics-per-node", default=None, metavar="K", help="NICs per node (default: the GPU's node)")
    p.add_argument("--nic-gbps", default=None, metavar="R", help="Gb/s per NIC (default: the GPU's node)")
    p.add_argument("--seq", default=None, metavar="S", help="sequence length in tokens (default: the model's)")
    p.add_argument("--global-batch-tokens", default=None, metavar="T",
                   help="tokens per optimizer step (default: the model's, printed)")
    p.add_argument("--micro-batches", default=None, metavar="M",
                   help="fix the micro-batches per replica (default: each layout picks its micro-batch size)")
    p.add_argument("--recompute", default=None, choices=("none", "selective", "full"),
                   help="activation recomputation (default selective; with --layout, the faster of selective and "
                        "full that fits the layout, and the planner's best under the same)")
    p.add_argument("--grad-reduce", default="fp32", choices=("fp32", "bf16"),
                   help="gradient precision in memory and on the wires (default fp32, Megatron-LM's)")
    p.add_argument("--layout", default=None, metavar="SPEC",
                   help="score one layout: tp=8,pp=16[,vp=V][,cp=C][,zero=Z][,cp_kind=ring|ulysses][,mb=B]")
    p.add_argument("--published", action="store_true", help="hold the planner against published training runs")
    p.add_argument("--json", action="store_true", help="print JSON to stdout")
    return p


def _whole(flag: str, text: str | None) -> int | None:
    from commlab.errors import CommlabError

    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise CommlabError(f"{flag} must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise CommlabError(f"{flag} must be a whole number >= 1, got {text!r}")
    return value


def _rate(text: str | None) -> float | None:
    from commlab.errors import CommlabError

    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise CommlabError(f"--nic-gbps must be a rate in Gb/s > 0, got {text!r}")
    return value


def _layout_json(layout, rank: int | None) -> dict:
    out = {"tp": layout.tp, "cp": layout.cp, "pp": layout.pp, "vp": layout.vp, "dp": layout.dp, "zero": layout.zero,
           "cp_kind": layout.cp_kind, "micro_batch": layout.micro_batch, "micro_batches": layout.micro_batches,
           "global_batch_tokens": layout.global_batch_tokens, "memory_GB": layout.memory.as_GB()}
    if rank is None or layout.reason is not None:
        return out | {"reason": layout.reason}
    by_collective = {k: round(v, 6) for k, v in layout.comm_by_collective_s().items()}
    items = [{"strategy": p.strategy, "primitive": p.primitive, "what": p.what, "when": p.when, "link": p.link,
              "n_ranks": p.n_ranks, "calls_per_step": p.calls_per_step, "nbytes_per_call": p.nbytes_per_call,
              "time_s": round(p.time_s, 6)} for p in layout.placed]
    return {"rank": rank} | out | {"communication_s": by_collective, "communication": items,
                                   "exposed_communication_s": round(layout.exposed_comm_s, 6),
                                   "terms_s": {k: round(v, 6) for k, v in layout.terms_s.items()},
                                   "step_s": round(layout.step_s, 6), "tokens_per_s": round(layout.tokens_per_s, 1),
                                   "mfu": round(layout.mfu, 4), "tflops_per_gpu": round(layout.tflops_per_gpu, 1),
                                   "hardware_tflops_per_gpu": round(layout.hardware_tflops_per_gpu, 1)}


def plan_json(result) -> dict:
    c = result.config
    return {
        "model": {"name": c.model.name, "title": c.model.title, "n_params": c.model.n_params, "hidden": c.model.hidden,
                  "n_layers": c.model.n_layers, "n_heads": c.model.n_heads, "n_kv_heads": c.model.n_kv_heads,
                  "ffn": c.model.ffn_width, "gated": c.model.gated, "vocab": c.model.vocab},
        "gpu": {"name": c.gpu.name, "title": c.gpu.title, "memory_GiB": c.gpu.memory_GiB,
                "usable_GB": round(c.usable_bytes / 1e9, 2), "peak_bf16_TFLOPS": c.gpu.peak_bf16_TFLOPS,
                "gemm_TFLOPS": c.gpu.gemm_TFLOPS, "gemm_source": c.gpu.gemm_source, "hbm_TBps": c.gpu.hbm_TBps,
                "intra_node_link": c.gpu.intra, "inter_node_link": c.gpu.inter},
        "gpus": c.n_gpus, "gpus_per_node": c.gpus_per_node, "nics_per_node": c.nics_per_node,
        "nic_Gbps": c.nic_Gbps, "seq": c.seq_len, "global_batch_tokens": c.global_batch_tokens,
        "micro_batches": (c.n_micro_batches if c.n_micro_batches or not result.ranked
                          else result.ranked[0].micro_batches),
        "micro_batches_fixed": c.n_micro_batches is not None, "recompute": c.recompute, "grad_reduce": c.grad_reduce,
        "assumed_mfu": round(c.mfu, 4),
        "layouts": [_layout_json(x, i) for i, x in enumerate(result.ranked, start=1)],
        "rejected": [_layout_json(x, None) for x in result.rejected],
    }


def _line(i, x) -> str:
    from commlab.units import format_time

    return (f"{i:>3}. {x.name:40s} b {x.micro_batch:<2d} m {x.micro_batches:<4d} {x.memory.total / 1e9:5.1f} GB/GPU  "
            f"step {format_time(x.step_s):>9s}  {x.tflops_per_gpu:5.0f} TFLOPs/GPU  MFU {100 * x.mfu:4.1f}%  "
            f"exposed comm {format_time(x.exposed_comm_s)}")


def _print_text(result) -> None:
    c = result.config
    print(f"{c.model.title} ({c.model.name}) on {c.n_gpus} x {c.gpu.title}, {c.gpus_per_node} per node; "
          f"seq {c.seq_len}, global batch {c.global_batch_tokens:,} tokens ({c.sequences:,} sequences), "
          f"{c.recompute} recomputation, {c.grad_reduce} gradients; {c.usable_bytes / 1e9:.1f} GB usable per GPU; "
          f"compute at {c.gpu.gemm_TFLOPS:g} TFLOPs (measured GEMM rate)")
    if not result.ranked:
        from commlab.parallelism.planner import no_fit_message

        print(no_fit_message(result))
    for i, x in enumerate(result.ranked[:SHOWN], start=1):
        print(_line(i, x))
    if len(result.ranked) > SHOWN:
        print(f"     ... {len(result.ranked) - SHOWN} more layouts (--json lists them all)")
    kinds: dict[str, int] = {}
    for x in result.rejected:
        kind = next((k for prefix, k in _KINDS if x.reason.startswith(prefix)), "other")
        kinds[kind] = kinds.get(kind, 0) + 1
    if kinds:
        print(f"refused: {len(result.rejected)} layouts (" + ", ".join(f"{n} {k}" for k, n in kinds.items())
              + "); --json gives each one's reason")


_KINDS = (("needs", "over memory"), ("TP", "TP not dividing the heads"), ("CP", "CP not splitting the sequence"),
          ("the global batch", "batch not splitting over DP"), ("vp", "interleaving"),
          ("Ulysses", "Ulysses not splitting the heads"))


def _published(as_json: bool) -> int:
    from commlab.parallelism.published import compare_all

    rows = compare_all()
    if as_json:
        print_json({"runs": [r.as_json() for r in rows]})
        return 0
    for r in rows:
        print(r.line())
    return 0


def run(args) -> int:
    from commlab.errors import CommlabError
    from commlab.parallelism.planner import plan, score_layout

    if args.published:
        return _published(args.json)
    missing = [f for f, v in (("--model", args.model), ("--gpus", args.gpus), ("--gpu", args.gpu)) if v is None]
    if missing:
        raise CommlabError(f"commlab plan needs {', '.join(missing)} (or --published)")
    n_gpus = _whole("--gpus", args.gpus) or 0
    per_node = _whole("--gpus-per-node", args.gpus_per_node)
    if per_node is not None and n_gpus > per_node and n_gpus % per_node:
        raise CommlabError(f"--gpus {n_gpus} is not a whole number of {per_node}-GPU nodes (--gpus-per-node)")
    if per_node is None and n_gpus > 8 and n_gpus % 8:
        raise CommlabError(f"--gpus {n_gpus} is not a whole number of 8-GPU nodes (--gpus-per-node)")
    def planned(recompute: str):
        return plan(args.model, n_gpus, args.gpu, gpus_per_node=per_node or 0, seq_len=_whole("--seq", args.seq) or 0,
                    global_batch_tokens=_whole("--global-batch-tokens", args.global_batch_tokens) or 0,
                    n_micro_batches=_whole("--micro-batches", args.micro_batches), recompute=recompute,
                    grad_reduce=args.grad_reduce, nics_per_node=_whole("--nics-per-node", args.nics_per_node) or 0,
                    nic_Gbps=_rate(args.nic_gbps) or 0.0)

    if args.layout is not None:
        # a layout scored under the recomputation given, or else under the faster of selective and full that
        # fits it (as a published layout whose source does not say is scored), against the best under the same
        options = (args.recompute,) if args.recompute else ("selective", "full")
        scored = []
        for recompute in options:
            result = planned(recompute)
            scored.append((result, *score_layout(result, args.layout)))
        result, mine, rank = max(scored, key=lambda x: (x[1].reason is None, x[1].tokens_per_s))
        if len(options) > 1 and not args.json:
            print(f"recomputation: {result.config.recompute} (the faster of selective and full for this layout; "
                  f"--recompute chooses)")
        if args.json:
            best = result.ranked[0] if result.ranked else None
            print_json({"layout": _layout_json(mine, rank), "rank": rank, "of": len(result.ranked),
                        "recompute": result.config.recompute,
                        "best": None if best is None else _layout_json(best, 1)})
        elif mine.reason is not None:
            print(f"{mine.name} does not run: {mine.reason}")
        else:
            print(_line(rank, mine) + f"   (rank {rank} of {len(result.ranked)})")
            if result.ranked:
                best = result.ranked[0]
                print(_line(1, best) + f"   (the planner's best; yours is {mine.tokens_per_s / best.tokens_per_s:.0%} "
                      f"of its throughput)")
        return 0
    result = planned(args.recompute or "selective")
    if args.json:
        print_json(plan_json(result))
    else:
        _print_text(result)
    return 0
