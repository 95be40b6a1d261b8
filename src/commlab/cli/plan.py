"""``commlab plan --model SIZE --gpus N --gpu NAME [--gpus-per-node 8] [--seq S] [--micro-batches M]
[--recompute none|selective|full] [--json]``: rank the parallel layouts of a training job (chapter 09).

Every TP x CP x PP x DP layout and ZeRO stage of N GPUs is costed in memory per GPU (model states and
activations) and in step time (compute plus the communication it cannot hide); layouts that do not fit, or
cannot run, are listed with the reason instead of being ranked. ``--json`` prints ``layouts`` (ranked, best
first), each with ``tp``, ``cp``, ``pp``, ``dp``, ``zero``, ``memory_GB`` (``parameters``, ``gradients``,
``optimizer_states``, ``activations``, ``total``), ``communication_s`` (seconds per step per collective, before
overlap, keyed "<strategy> <primitive>": "SP all_gather", "ZeRO-1 reduce_scatter", ...), ``communication``
(each item: strategy, primitive, link, calls, bytes), ``exposed_communication_s``, ``step_s``,
``tokens_per_s`` and ``mfu``; and ``rejected``, each with its ``reason``.
"""
from __future__ import annotations

from commlab.cli._common import print_json

SHOWN = 10


def add_parser(sub):
    p = sub.add_parser("plan", help="rank TP/CP/PP/DP/ZeRO layouts by memory and step time",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, metavar="SIZE", help="model size: 1.3B, 7B, 13B, 70B, 175B, 405B")
    p.add_argument("--gpus", required=True, metavar="N", help="number of GPUs")
    p.add_argument("--gpu", required=True, metavar="NAME", help="GPU: a100, h100, h200, b200")
    p.add_argument("--gpus-per-node", default="8", metavar="G", help="GPUs per node on NVSwitch (default 8)")
    p.add_argument("--seq", default="4096", metavar="S", help="sequence length in tokens (default 4096)")
    p.add_argument("--micro-batches", default="8", metavar="M",
                   help="micro-batches of one sequence per step on each data-parallel replica (default 8)")
    p.add_argument("--recompute", default="selective", choices=("none", "selective", "full"),
                   help="activation recomputation (default selective)")
    p.add_argument("--json", action="store_true", help="print JSON to stdout")
    return p


def _whole(flag: str, text: str) -> int:
    from commlab.errors import CommlabError

    try:
        value = int(text)
    except ValueError:
        raise CommlabError(f"{flag} must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise CommlabError(f"{flag} must be a whole number >= 1, got {text!r}")
    return value


def _layout_json(layout, rank: int | None) -> dict:
    out = {"tp": layout.tp, "cp": layout.cp, "pp": layout.pp, "dp": layout.dp, "zero": layout.zero,
           "memory_GB": layout.memory.as_GB()}
    if rank is None:
        return out | {"reason": layout.reason}
    by_collective = {k: round(v, 6) for k, v in layout.comm_by_collective_s().items()}
    items = [{"strategy": p.strategy, "primitive": p.primitive, "what": p.what, "when": p.when, "link": p.link,
              "n_ranks": p.n_ranks, "calls_per_step": p.calls_per_step, "nbytes_per_call": p.nbytes_per_call,
              "time_s": round(p.time_s, 6)} for p in layout.placed]
    return {"rank": rank} | out | {"communication_s": by_collective, "communication": items,
                                   "exposed_communication_s": round(layout.exposed_comm_s, 6),
                                   "step_s": round(layout.step_s, 6), "tokens_per_s": round(layout.tokens_per_s, 1),
                                   "mfu": round(layout.mfu, 4)}


def plan_json(result) -> dict:
    c = result.config
    return {
        "model": {"name": c.model.name, "title": c.model.title, "n_params": c.model.n_params, "hidden": c.model.hidden,
                  "n_layers": c.model.n_layers, "n_heads": c.model.n_heads, "n_kv_heads": c.model.n_kv_heads},
        "gpu": {"name": c.gpu.name, "title": c.gpu.title, "memory_GiB": c.gpu.memory_GiB,
                "usable_GB": round(c.usable_bytes / 1e9, 2), "peak_bf16_TFLOPS": c.gpu.peak_bf16_TFLOPS,
                "intra_node_link": c.gpu.intra, "inter_node_link": c.gpu.inter},
        "gpus": c.n_gpus, "gpus_per_node": c.gpus_per_node, "seq": c.seq_len, "micro_batches": c.n_micro_batches,
        "recompute": c.recompute, "assumed_mfu": c.mfu,
        "layouts": [_layout_json(x, i) for i, x in enumerate(result.ranked, start=1)],
        "rejected": [_layout_json(x, None) for x in result.rejected],
    }


def _print_text(result) -> None:
    from commlab.units import format_time

    c = result.config
    print(f"{c.model.title} ({c.model.name}) on {c.n_gpus} x {c.gpu.title}, {c.gpus_per_node} per node; "
          f"seq {c.seq_len}, {c.n_micro_batches} micro-batches per replica, {c.recompute} recomputation; "
          f"{c.usable_bytes / 1e9:.1f} GB usable per GPU")
    if not result.ranked:
        print(f"no layout fits ({len(result.rejected)} refused); add GPUs, use --recompute full or a shorter --seq")
    for i, x in enumerate(result.ranked[:SHOWN], start=1):
        print(f"{i:3d}. {x.name:34s} {x.memory.total / 1e9:5.1f} GB/GPU  step {format_time(x.step_s):>9s}  "
              f"{x.tokens_per_s:9.0f} tokens/s  MFU {100 * x.mfu:4.1f}%  exposed comm {format_time(x.exposed_comm_s)}")
    if len(result.ranked) > SHOWN:
        print(f"     ... {len(result.ranked) - SHOWN} more layouts (--json lists them all)")
    kinds: dict[str, int] = {}
    for x in result.rejected:
        kind = next((k for prefix, k in _KINDS if x.reason.startswith(prefix)), "other")
        kinds[kind] = kinds.get(kind, 0) + 1
    if kinds:
        print(f"refused: {len(result.rejected)} layouts (" + ", ".join(f"{n} {k}" for k, n in kinds.items())
              + "); --json gives each one's reason")


_KINDS = (("needs", "over memory"), ("TP", "TP not dividing the heads"), ("ZeRO", "ZeRO-2/3 with a pipeline"),
          ("CP", "CP not splitting the sequence"))


def run(args) -> int:
    from commlab.errors import CommlabError
    from commlab.parallelism import plan

    n_gpus, per_node = _whole("--gpus", args.gpus), _whole("--gpus-per-node", args.gpus_per_node)
    if n_gpus > per_node and n_gpus % per_node:
        raise CommlabError(f"--gpus {n_gpus} is not a whole number of {per_node}-GPU nodes (--gpus-per-node)")
    result = plan(args.model, n_gpus, args.gpu, gpus_per_node=per_node, seq_len=_whole("--seq", args.seq),
                  n_micro_batches=_whole("--micro-batches", args.micro_batches), recompute=args.recompute)
    if args.json:
        print_json(plan_json(result))
    else:
        _print_text(result)
    return 0
