"""The DDP overlap lab as a script: a small model wrapped in DistributedDataParallel, its backward (with the
gradient all-reduces) timed for several bucket_cap_mb values, the buckets DDP rebuilt compared with your
ddp_buckets, the link measured, and the same sweep run in commlab's DDP simulator with your layers_from_model
(labs/ddp_overlap.ipynb). Your functions come from labs/mine/ddp_overlap.py (else the reference; the first
line says which, ``--reference`` forces it); the exit status is 1 when your buckets differ from DDP's.

On one machine, without a launcher (gloo on CPU; NCCL with a GPU per rank):

    python labs/scripts/ddp_overlap.py --ranks 2
    python labs/scripts/ddp_overlap.py --ranks 2 --caps 0.25,1,4,16 --steps 8 --profile-cap 1

Under torchrun, on one node or several (rank 0 prints):

    torchrun --nproc-per-node 2 labs/scripts/ddp_overlap.py
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
        labs/scripts/ddp_overlap.py --caps 1,5,25,100
"""
from __future__ import annotations

import argparse
import math
import sys

from commlab.labs import script

DEFAULT_RANKS = 2
DEFAULT_CAPS = "0.25,1,2,4,8,32"
#: The lab's model: 8 linear layers, about 1.7 million float32 parameters (6.8 MB of gradients).
WIDTHS = (256, 512, 512, 512, 512, 512, 512, 512, 10)
BATCH = 64
LINK_SIZES = (2**14, 2**18, 2**20, 2**22, 2**23)


def make_model():
    """Linear layers of WIDTHS with ReLUs between them, the same initial weights on every rank."""
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    layers = []
    for i, (n_in, n_out) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:])):
        layers += [nn.Linear(n_in, n_out)] + ([nn.ReLU()] if i < len(WIDTHS) - 2 else [])
    return nn.Sequential(*layers)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--caps", default=DEFAULT_CAPS, help=f"bucket_cap_mb values, MiB (default {DEFAULT_CAPS})")
    p.add_argument("--steps", type=int, default=5, help="timed steps per cap, after 2 warm-up steps (default 5)")
    p.add_argument("--profile-cap", type=float, default=None, metavar="MIB",
                   help="also profile one step at this bucket_cap_mb and summarise its timeline")
    script.add_launch_options(p, DEFAULT_RANKS, default_timeout_s=300.0)
    return p.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple:
    """The worker's arguments (caps, steps, profile cap), checked."""
    from commlab.errors import CommlabError

    caps = parse_caps(args.caps)
    if args.steps < 1:
        raise CommlabError(f"--steps must be at least 1, got {args.steps}")
    if args.profile_cap is not None and not 0 < args.profile_cap <= 1024:
        raise CommlabError(f"--profile-cap must be a number of MiB above 0, up to 1024, got {args.profile_cap}")
    return caps, args.steps, args.profile_cap


def parse_caps(text: str) -> list[float]:
    from commlab.errors import CommlabError

    try:
        caps = sorted({float(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise CommlabError(f"--caps must be numbers of MiB separated by commas, got {text!r}") from None
    if not caps or any(not 0 < c <= 1024 for c in caps):
        raise CommlabError(f"--caps must be numbers of MiB from above 0 to 1024, got {text!r}")
    return caps


def _context():
    import torch
    import torch.distributed as dist

    on_gpu = dist.get_backend() == "nccl"
    return on_gpu, torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")


def _batch(rank: int, device):
    import torch

    gen = torch.Generator().manual_seed(rank)              # each rank its own data, as in data parallelism
    x = torch.randn(BATCH, WIDTHS[0], generator=gen)
    return x.to(device), torch.randint(0, WIDTHS[-1], (BATCH,), generator=gen).to(device)


def _barrier(device) -> None:
    import torch.distributed as dist

    if device.type == "cuda":
        dist.barrier(device_ids=[device.index])
    else:
        dist.barrier()


def backward_time_s(model, x, y, device) -> float:
    """One forward, then the timed backward: with DDP it returns once every bucket is all-reduced."""
    import time

    import torch
    import torch.nn.functional as F

    loss = F.cross_entropy(model(x), y)
    _barrier(device)
    start = time.perf_counter()
    loss.backward()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - start
    model.zero_grad(set_to_none=True)
    return elapsed


def interleaved_medians(models: dict, x, y, device, steps: int) -> dict:
    """Median backward time of each model, the models taking turns step by step (so that a burst of
    background load hits them all alike); two warm-up steps each first (DDP rebuilds its buckets after one)."""
    import statistics

    times: dict = {key: [] for key in models}
    for step in range(steps + 2):
        for key, model in models.items():
            elapsed = backward_time_s(model, x, y, device)
            if step >= 2:
                times[key].append(elapsed)
    return {key: statistics.median(values) for key, values in times.items()}


def profile_step(model, x, y, device) -> list[tuple]:
    """One backward under torch.profiler: (kind, name, start_us, end_us, thread) of the compute and the
    communication events (CPU: autograd functions and gloo's all-reduces; GPU: kernels, NCCL's as comm)."""
    import os

    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    loss = F.cross_entropy(model(x), y)
    saved, quiet = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)                       # the profiler's C++ side prints status lines on stderr
    try:
        with profile(activities=activities) as prof:
            loss.backward()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(quiet)
    model.zero_grad(set_to_none=True)
    return [event for e in prof.events() if (event := _classify(e, device.type == "cuda")) is not None]


def _classify(e, on_gpu: bool):
    from torch.autograd import DeviceType

    name = e.name
    if on_gpu:
        if e.device_type != DeviceType.CUDA:
            return None
        kind = "comm" if "nccl" in name.lower() else "compute"
    elif name.startswith("autograd::engine::evaluate_function: "):
        kind, name = "compute", name.split(": ", 1)[1]
    elif name.startswith("gloo:"):
        kind = "comm"
    else:
        return None
    return kind, name, e.time_range.start, e.time_range.end, e.thread


def link_points(device) -> list[tuple[int, float]]:
    """(nbytes, seconds) of dist.all_reduce at LINK_SIZES, the median of 5 calls: the simulator's link."""
    import statistics
    import time

    import torch
    import torch.distributed as dist

    points = []
    for nbytes in LINK_SIZES:
        t = torch.zeros(nbytes // 4, device=device)
        dist.all_reduce(t)
        times = []
        for _ in range(5):
            _barrier(device)
            start = time.perf_counter()
            dist.all_reduce(t)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - start)
        points.append((nbytes, statistics.median(times)))
    return points


def bucket_problems(models: dict, code) -> list[str]:
    """For each DDP model (by cap), the learner's ddp_buckets against the buckets DDP rebuilt, in the words of
    the lab's check (commlab.labs.checks.ddp_overlap)."""
    from commlab.labs.checks.ddp_overlap import bucket_difference, param_nbytes

    found = []
    for cap, model in models.items():
        text = str(model._get_ddp_logging_data().get("rebuilt_per_bucket_param_indices", ""))
        rebuilt = [[int(i) for i in b.split()] for b in text.split(",") if b.strip()]
        nbytes = param_nbytes(model.module)
        order = [i for bucket in rebuilt for i in bucket]
        try:
            got = code.function("ddp_buckets")(list(nbytes), cap, order)
        except NotImplementedError as exc:
            return [f"ddp_buckets is not written yet ({exc})"]
        problem = bucket_difference(got, rebuilt, nbytes, "the lab's model under DDP (the buckets it rebuilt)",
                                    cap, order)
        if problem:
            found.append(problem)
    return found


def worker(rank: int, n_ranks: int, code, caps: list[float], steps: int, profile_cap: float | None = None):
    """Every rank: backward without DDP and with DDP at each cap, taking turns; the buckets DDP rebuilt
    against ``code``'s ddp_buckets; the link; optionally one profiled step. Rank 0 returns the numbers."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    on_gpu, device = _context()
    x, y = _batch(rank, device)
    ids = [device.index] if on_gpu else None
    models = {"compute only": make_model().to(device)}
    models.update({cap: DDP(make_model().to(device), device_ids=ids, bucket_cap_mb=cap) for cap in caps})
    medians = interleaved_medians(models, x, y, device, steps)
    buckets = bucket_problems({cap: m for cap, m in models.items() if cap != "compute only"}, code)
    points = link_points(device)
    events = None
    if profile_cap is not None:
        model = DDP(make_model().to(device), device_ids=ids, bucket_cap_mb=profile_cap)
        for _ in range(2):
            backward_time_s(model, x, y, device)
        events = profile_step(model, x, y, device)
    if rank != 0:
        return None
    return {"backend": str(dist.get_backend()), "n_ranks": n_ranks, "compute_s": medians.pop("compute only"),
            "measured_s": medians, "link": points, "events": events, "profile_cap": profile_cap,
            "bucket_problems": buckets}


def fitted_link(points, n_ranks: int) -> tuple[float, float]:
    """(alpha_s, bw_GBps) per hop from all-reduce times: t = 2(N-1) alpha + 2(N-1)/N S/B (a ring)."""
    from commlab.cost import fit_alpha_beta

    fit = fit_alpha_beta([s for s, _ in points], [t for _, t in points])
    steps = 2 * (n_ranks - 1)
    bw_GBps = math.inf if fit.beta_s_per_byte == 0 else steps / (n_ranks * fit.beta_s_per_byte) / 1e9
    return fit.alpha_s / steps, bw_GBps


def simulate(out: dict, code):
    """The simulator's sweep of the same caps, for the lab's model (``code``'s layers) and the measured link."""
    from commlab import overlap

    alpha_s, bw_GBps = fitted_link(out["link"], out["n_ranks"])
    layers = code.function("layers_from_model")(make_model(), out["compute_s"])
    cfg = overlap.DDPConfig(layers=layers, n_ranks=out["n_ranks"],
                            alpha_s=alpha_s, bw_GBps=bw_GBps)
    return overlap.sweep_bucket_caps(cfg, sorted(out["measured_s"])), alpha_s, bw_GBps


def profile_timeline(events):
    """A commlab.overlap.Timeline of profiled events, in seconds from the first compute event (rank 0's step)."""
    from commlab.overlap import CommInterval, ComputeInterval, Timeline

    compute = sorted((start, end, name) for kind, name, start, end, _ in events if kind == "compute")
    comm = sorted((start, end, name) for kind, name, start, end, _ in events if kind == "comm")
    t0_us = compute[0][0]
    return Timeline(tuple(ComputeInterval(i, (s - t0_us) / 1e6, (e - t0_us) / 1e6, n)
                          for i, (s, e, n) in enumerate(compute)),
                    tuple(CommInterval(i, max(s - t0_us, 0) / 1e6, (e - t0_us) / 1e6, 0, ())
                          for i, (s, e, _) in enumerate(comm)), "profiled step")


def profile_lines(out: dict) -> list[str]:
    from commlab.units import format_time

    if not out.get("events"):
        return []
    t = profile_timeline(out["events"])
    spans = ", ".join(f"{format_time(iv.start_s)}-{format_time(iv.end_s)}" for iv in t.comm)
    exposed_s = sum(end - start for start, end in t.exposed_intervals())
    return [f"profiled step at bucket_cap_mb={out['profile_cap']:g} (rank 0): {len(t.compute)} compute events "
            f"over {format_time(max(iv.end_s for iv in t.compute))}; {len(t.comm)} all-reduces at {spans}; "
            f"communication with no compute beside it: {format_time(exposed_s)}"]


def report(out: dict, code) -> str:
    from commlab.units import format_time

    sweep, alpha_s, bw_GBps = simulate(out, code)
    measured = out["measured_s"]
    lines = [f"DDP on {out['n_ranks']} ranks ({out['backend']}): backward with the gradient all-reduces, median step",
             f"compute only (no DDP): {format_time(out['compute_s'])}; link: alpha = {format_time(alpha_s)} per "
             f"step, B = {bw_GBps:.3g} GB/s",
             f"{'bucket_cap_mb':>14s}{'measured':>12s}{'simulated':>12s}{'exposed (sim)':>15s}{'buckets':>9s}"]
    for i, cap in enumerate(sweep.caps_mb):
        lines.append(f"{cap:>14g}{format_time(measured[float(cap)]):>12s}{format_time(sweep.step_s[i]):>12s}"
                     f"{format_time(sweep.exposed_comm_s[i]):>15s}{int(sweep.n_buckets[i]):>9d}")
    best_measured = min(measured, key=measured.get)
    lines.append(f"best cap: simulated {sweep.best_cap_mb:g} MiB, measured {best_measured:g} MiB")
    if out["backend"] == "gloo":
        lines.append("(gloo on a CPU: the all-reduces share the cores with the backward, which the simulator does not "
                     "model; the two need not agree, and agreement here would not confirm the simulator)")
    problems = out.get("bucket_problems") or []
    lines.append("ddp_buckets: the same buckets as DDP rebuilt at every cap" if not problems else
                 "ddp_buckets differs from DDP: " + problems[0])
    return "\n".join(lines + profile_lines(out))


def buckets_right(values: list) -> bool:
    """The exit status' test: rank 0's value (the others return None) has no bucket problem."""
    return all(not v["bucket_problems"] for v in values if v is not None)


def main(argv=None) -> int:
    return script.run_script("ddp_overlap.py", parse_args(argv), worker, prepare, lab="ddp_overlap",
                             default_n_ranks=DEFAULT_RANKS, report=report, check=buckets_right)


if __name__ == "__main__":
    sys.exit(main())
