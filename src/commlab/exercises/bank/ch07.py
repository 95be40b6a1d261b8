"""Chapter 7, overlapping compute and communication: DDP buckets, their all-reduce, the exposed time."""
from __future__ import annotations

import dataclasses
import math

from commlab import hardware, overlap, units
from commlab.exercises.bank.ch05 import alpha_step_s
from commlab.exercises.bank.common import (draw_ranks, duration, num, pick, rate, ratio_mistake, ring_link_Bps,
                                          ring_where)
from commlab.exercises.model import Exercise, Mistake, Worked

#: the hardware chapter 7 describes: the GPUs of one NVLink 4 server (at most 8), or single-GPU servers each on its
#: own 400 Gb/s card, B from the book's cluster model (chapter 7's 64 servers on InfiniBand NDR)
_LINKS = ("nvlink4", "ib-ndr", "roce-400")
#: how many ranks a question draws: one server's 8 GPUs at most over NVLink, up to 64 servers over a network
_RANKS = {"nvlink4": (4, 8), "ib-ndr": (8, 16, 32, 64), "roce-400": (8, 16, 32, 64)}


def _config(link: hardware.Link, n_ranks: int, n_layers: int, layer_mib: float, backward_s: float,
            cap_mb: float) -> overlap.DDPConfig:
    """A DDP step of identical layers; the first bucket has the same cap as the others (bucket_cap_mb passed). Across
    servers the ranks are single-GPU servers and B is each one's card as the cluster model drives it; alpha is
    alpha_step, NCCL's cost of one ring step over that kind of link, as chapter 7 takes it (chapter 5's convention)."""
    layers = overlap.uniform_layers(n_layers, int(layer_mib * units.MiB), backward_s)
    return overlap.DDPConfig(layers=layers, n_ranks=n_ranks, alpha_s=alpha_step_s(link.name),
                             bw_GBps=ring_link_Bps(link, n_ranks) / 1e9, bucket_cap_mb=cap_mb)


def _buckets(rng) -> Worked:
    n_layers = int(pick(rng, (12, 24, 32, 48, 80)))
    layer_mib = float(pick(rng, (3, 4, 6, 7, 10, 12, 16)))
    cap_mb = float(pick(rng, (10, 25, 50, 100)))
    cfg = _config(hardware.link("nvlink4"), 8, n_layers, layer_mib, 1e-3, cap_mb)
    n_buckets = len(overlap.assign_buckets(cfg))
    per_bucket = math.ceil(cap_mb / layer_mib)
    question = (f"A model has {n_layers} layers with {num(layer_mib)} MiB of gradients each. DDP runs with "
                f"bucket_cap_mb={num(cap_mb)} (first bucket included) and, like torch's reducer, closes a bucket as "
                "soon as it holds at least the cap. How many buckets (all-reduce calls) does one backward make?")
    solution = (f"A bucket closes once it reaches {num(cap_mb)} MiB: ceil({num(cap_mb)} / {num(layer_mib)}) = "
                f"{per_bucket} layers per bucket. {n_layers} layers / {per_bucket} per bucket, rounded up: "
                f"{n_buckets} buckets.")
    strict = len(overlap.assign_buckets(dataclasses.replace(cfg, rule="strict")))
    total = math.ceil(n_layers * layer_mib / cap_mb)
    mistakes = (ratio_mistake(strict, n_buckets, "closed before the cap",
                              "torch closes a bucket after the gradient that reaches the cap, not before"),
                ratio_mistake(total, n_buckets, "total size / cap", "buckets hold whole layers"))
    return Worked(question, n_buckets, solution, mistakes, params={"n_layers": n_layers, "layer_mib": layer_mib,
                                                                    "cap_mb": cap_mb})


def _bucket_time(rng) -> Worked:
    link = hardware.link(pick(rng, _LINKS))
    n = draw_ranks(rng, _RANKS[link.name])
    cap_mb = float(pick(rng, (10, 25, 50, 100, 200)))
    cfg = _config(link, n, 4, cap_mb, 1e-3, cap_mb)
    nbytes = int(cap_mb * units.MiB)
    t_s = overlap.ddp.all_reduce_time_s(cfg, nbytes)
    bw, alpha = cfg.bw_GBps * 1e9, cfg.alpha_s
    question = (f"A full DDP bucket of {num(cap_mb)} MiB is all-reduced with a ring over {ring_where(link, n)} "
                f"(B = {rate(bw)} one way; a ring step costs alpha_step = {num(alpha * 1e6)} us, NCCL's own figure, "
                f"though the wire's latency is {num(link.latency_s * 1e6)} us). With t = 2(N-1)(alpha_step + S/(N B)), "
                "how long does it take, in ms?")
    solution = (f"S = {num(cap_mb)} MiB = {nbytes} bytes (bucket_cap_mb counts MiB). "
                f"t = 2(N-1)(alpha_step + S/(N B)) = {2 * (n - 1)} x ({duration(alpha)} + "
                f"{duration(nbytes / (n * bw))}) = {duration(t_s)}.")
    mistakes = (Mistake(units.MB / units.MiB, "MiB read as MB", "bucket_cap_mb is in MiB: 1 MiB = 1,048,576 bytes"),
                ratio_mistake(overlap.ddp.all_reduce_time_s(dataclasses.replace(cfg, alpha_s=link.latency_s), nbytes),
                              t_s, "used the wire's latency",
                              "a step of a real ring costs alpha_step, not the wire's latency (chapter 5)"),
                ratio_mistake(overlap.ddp.all_reduce_time_s(
                    dataclasses.replace(cfg, bw_GBps=2 * cfg.bw_GBps), nbytes), t_s,
                    "used the bidirectional figure", "each ring step sends one way"))
    return Worked(question, t_s * 1e3, solution, mistakes, n_ranks=n, params={"link": link.name, "n_ranks": n})


def _step_setup(rng):
    """Identical layers, k layers per bucket, a link: a timeline small enough to draw by hand."""
    link = hardware.link(pick(rng, _LINKS))
    n = draw_ranks(rng, _RANKS[link.name][:2])
    per_bucket = int(pick(rng, (1, 2, 3)))
    n_buckets = int(pick(rng, (2, 3, 4)))
    layer_mib = float(pick(rng, (4, 8, 16, 32)))
    backward_s = float(pick(rng, (0.5, 1, 2, 4))) * 1e-3
    cfg = _config(link, n, per_bucket * n_buckets, layer_mib, backward_s, per_bucket * layer_mib)
    bucket_s = overlap.ddp.all_reduce_time_s(cfg, int(per_bucket * layer_mib * units.MiB))
    text = (f"A model of {per_bucket * n_buckets} identical layers: each takes {duration(backward_s)} of backward "
            f"and has {num(layer_mib)} MiB of gradients. DDP packs {per_bucket} layer(s) per bucket "
            f"({n_buckets} buckets); each bucket's ring all-reduce on {ring_where(link, n)} takes "
            f"{duration(bucket_s)}.")
    return cfg, text, bucket_s


def _exposed(rng) -> Worked:
    cfg, text, bucket_s = _step_setup(rng)
    timeline = overlap.simulate(cfg)
    serial = overlap.no_overlap(cfg)
    question = text + (" A bucket's all-reduce starts once its last gradient is ready and the previous bucket's "
                       "all-reduce is done. How much communication is exposed (step time minus backward time), "
                       "in ms?")
    solution = (f"Backward: {duration(timeline.compute_s)}. Walk the buckets: each starts at max(its ready time, "
                f"the previous bucket's end) and lasts {duration(bucket_s)}; the last one ends at "
                f"{duration(timeline.step_s)}. Exposed = {duration(timeline.step_s)} - "
                f"{duration(timeline.compute_s)} = {duration(timeline.exposed_comm_s)}.")
    mistakes = (ratio_mistake(serial.exposed_comm_s, timeline.exposed_comm_s, "no overlap assumed",
                              "buckets start during the backward as soon as they are ready"),)
    return Worked(question, timeline.exposed_comm_s * 1e3, solution, mistakes, params={"n_ranks": cfg.n_ranks})


def _no_overlap_step(rng) -> Worked:
    cfg, text, bucket_s = _step_setup(rng)
    serial = overlap.no_overlap(cfg)
    n_buckets = serial.n_collectives
    question = (text + " Without overlap (every all-reduce waits for the whole backward), how long is the "
                "backward-plus-communication step, in ms?")
    solution = (f"Backward {duration(serial.compute_s)}, then {n_buckets} all-reduces of {duration(bucket_s)} one "
                f"after another: {duration(serial.step_s)}.")
    mistakes = (ratio_mistake(overlap.simulate(cfg).step_s, serial.step_s, "overlap assumed",
                              "here every all-reduce waits for the end of the backward"),)
    return Worked(question, serial.step_s * 1e3, solution, mistakes, params={"n_ranks": cfg.n_ranks})


EXERCISES = (
    Exercise("ch07.buckets", "Number of DDP buckets", "", 0,
             "A bucket closes once it reaches bucket_cap_mb (MiB); count whole layers per bucket (chapter 7).",
             _buckets),
    Exercise("ch07.bucket-time", "All-reduce time of one bucket", "ms", 0.02,
             "Ring all-reduce 2(N-1)(alpha_step + S/(N B)) with S in MiB as bucket_cap_mb counts (chapter 7).",
             _bucket_time),
    Exercise("ch07.exposed", "Exposed communication with buckets", "ms", 0.02,
             "Draw the two streams: each bucket starts at max(ready, previous end); exposed = step - backward "
             "(chapter 7's simulator).", _exposed),
    Exercise("ch07.no-overlap", "Step time without overlap", "ms", 0.02,
             "Without overlap the step is the backward plus every all-reduce in a row (chapter 7).",
             _no_overlap_step),
)
