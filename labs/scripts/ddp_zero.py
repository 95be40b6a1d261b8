"""The DDP-and-ZeRO lab as a script: your naive, overlapped and bucketed DDP, your gradient accumulation and your
ZeRO-1 run beside torch's DistributedDataParallel (and the unsharded Adam run) on the same model, seed and data,
then one profiled step of the naive and the overlapped version (labs/ddp_zero.ipynb). Your functions come from
labs/mine/ddp_zero.py (else the reference; the first line says which, ``--reference`` forces it); the exit
status is 1 when one of them differs from the reference, with the notebook's sentence.

On one machine, without a launcher (gloo on CPU):

    python labs/scripts/ddp_zero.py --ranks 2
    python labs/scripts/ddp_zero.py --ranks 4 --caps 1024,16384 --no-profile

Under torchrun, on one node or several (rank 0 prints):

    torchrun --nproc-per-node 4 labs/scripts/ddp_zero.py
    torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint HOST:29500 labs/scripts/ddp_zero.py

The lab's checks run on gloo and on the CPU: the model is small and every rank holds a copy of it there.
"""
from __future__ import annotations

import argparse
import sys

from commlab.labs import script

DEFAULT_RANKS = 2
DEFAULT_CAPS = "1024,16384,1048576"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--caps", default=DEFAULT_CAPS,
                   help=f"bucket caps in bytes, comma-separated (default {DEFAULT_CAPS})")
    p.add_argument("--no-profile", action="store_true", help="skip the profiled step of naive and overlapped DDP")
    script.add_launch_options(p, DEFAULT_RANKS, default_timeout_s=240.0)
    return p.parse_args(argv)


def parse_caps(text: str) -> tuple[int, ...]:
    from commlab.errors import CommlabError

    try:
        caps = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise CommlabError(f"--caps must be whole numbers of bytes separated by commas, got {text!r}") from None
    if not caps or any(not 4 <= c <= 2**30 for c in caps):
        raise CommlabError(f"--caps must be numbers of bytes from 4 to 2**30, got {text!r}")
    return caps


def prepare(args: argparse.Namespace) -> tuple:
    return parse_caps(args.caps), not args.no_profile


def worker(rank: int, n_ranks: int, code, caps: tuple[int, ...], profile: bool = True) -> dict:
    """Every rank: each task of the lab beside its reference, judged on this rank's findings (the words of the
    notebook's checks), and optionally the profiled step."""
    import torch.distributed as dist

    from commlab.labs.checks import ddp_zero as checks

    if dist.get_backend() != "gloo":
        raise RuntimeError("this lab's checks run on the CPU with gloo; start it with --backend gloo")
    judged = {task: checks.judge([in_group(rank, n_ranks, code.function(task), checks.Case(n_ranks, caps=caps))])
              for task, in_group in checks.IN_GROUP.items()}
    fn = code.function
    events = (checks.timeline_in_group(rank, n_ranks, fn("allreduce_gradients"), fn("overlapped_ddp"))
              if profile else None)
    return {"rank": rank, "n_ranks": n_ranks, "problems": {k: o.problem for k, o in judged.items()},
            "buckets": judged["bucketed_ddp"].details.get("buckets", []),
            "zero1": judged["zero1"].details, "events": events}


def timeline_lines(events: dict) -> list[str]:
    from commlab.labs.checks import ddp_zero as checks
    from commlab.units import format_time

    lines = []
    for label in ("naive", "overlapped"):
        t = checks.as_timeline(events[label], label)
        end_s = checks.backward_end_s(events[label])
        early = sum(iv.start_s < end_s for iv in t.comm)
        lines.append(f"  {label:>10s}: backward {format_time(end_s)}, {len(t.comm)} gloo collectives, {early} of "
                     f"them started before backward returned; step (to the last one's end) {format_time(t.step_s)}")
    lines.append("  (gloo on a CPU: the all-reduces share the cores with the backward, so an earlier start shows the "
                 "overlap was possible, not that it saves time; on GPUs NCCL runs beside the compute)")
    return lines


def report(out: dict, code) -> str:
    lines = [f"DDP and ZeRO-1 by hand on {out['n_ranks']} gloo ranks (rank {out['rank']}'s view):"]
    for task, problem in out["problems"].items():
        lines.append(f"  {task:>22s}: " + (problem or "the same as the reference"))
    for cap, want, sizes in out["buckets"]:
        lines.append(f"  bucket cap {cap} bytes: {len(want)} all-reduces per step, of {sizes} bytes")
    z = out["zero1"]
    if z:
        lines.append(f"  ZeRO-1: optimizer state {z['state_nbytes'][0]} bytes on this rank, formula 8 x ceil("
                     f"{z['n_params']}/{out['n_ranks']}) = {z['formula_nbytes']}, unsharded {z['unsharded_nbytes']}")
    if out["events"]:
        lines += ["one profiled step of each (torch.profiler, this rank):"] + timeline_lines(out["events"])
    return "\n".join(lines)


def all_right(values: list) -> bool:
    return all(not any(v["problems"].values()) for v in values if v is not None)


def main(argv=None) -> int:
    return script.run_script("ddp_zero.py", parse_args(argv), worker, prepare, lab="ddp_zero",
                             default_n_ranks=DEFAULT_RANKS, report=report, check=all_right)


if __name__ == "__main__":
    sys.exit(main())
