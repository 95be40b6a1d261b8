"""Chapter 7, understanding: which bucket goes first, the tail no bucket hides, a handle never waited."""
from __future__ import annotations

from commlab import hardware, overlap, units
from commlab.exercises.bank.ch05 import alpha_step_s
from commlab.exercises.bank.common import duration, num, pick, ring_link_Bps, ring_where
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked


def _first_bucket(rng) -> Worked:
    n_layers = int(pick(rng, (12, 24, 48)))
    cap = int(pick(rng, (4, 25)))
    stem = (f"A model is a stack of {n_layers} linear layers, layer 0 first in forward. DDP runs with "
            f"bucket_cap_mb={cap}. During backward, whose gradients does the first bucket's all-reduce carry?")
    right = Choice(f"The last layers' (layer {n_layers - 1} and its neighbours)",
                   "backward starts at the output: the last layer's gradients are ready first, and DDP fills buckets "
                   "in that order (the reverse of model.parameters()).")
    wrong = [Choice("Layer 0's and its neighbours'",
                    "that is forward order; gradients are produced from the output back to the input."),
             Choice("The largest layers'", "buckets are filled in the order gradients become ready, not by size."),
             Choice("Whichever layers' gradients are smallest, so the first all-reduce starts soonest",
                    "DDP does not sort by size; it follows the order of the backward pass.")]
    return choice_worked(rng, stem, right, wrong, right.feedback, params={"n_layers": n_layers})


def _tail(rng) -> Worked:
    link = hardware.link(pick(rng, ("nvlink4", "ib-ndr", "roce-400")))   # chapter 7's hardware
    n = int(pick(rng, (4, 8) if link.name == "nvlink4" else (8, 16)))    # one NVLink server, or single-GPU servers
    alpha_s, bw_GBps = alpha_step_s(link.name), ring_link_Bps(link, n) / 1e9   # chapter 7's alpha_step and B
    per_bucket = int(pick(rng, (1, 2, 4)))
    n_buckets = int(pick(rng, (3, 4, 6)))
    layer_mib = float(pick(rng, (4, 8, 16)))
    probe = overlap.DDPConfig(layers=overlap.uniform_layers(1, int(layer_mib * units.MiB), 1e-3), n_ranks=n,
                              alpha_s=alpha_s, bw_GBps=bw_GBps, bucket_cap_mb=layer_mib)
    bucket_s = overlap.ddp.all_reduce_time_s(probe, int(per_bucket * layer_mib * units.MiB))
    slack = float(pick(rng, (2, 3, 4)))
    backward_s = slack * bucket_s / per_bucket                 # the communication keeps up with the backward
    cfg = overlap.DDPConfig(layers=overlap.uniform_layers(per_bucket * n_buckets, int(layer_mib * units.MiB),
                                                          backward_s),
                            n_ranks=n, alpha_s=alpha_s, bw_GBps=bw_GBps,
                            bucket_cap_mb=per_bucket * layer_mib)
    timeline = overlap.simulate(cfg)
    serial = overlap.no_overlap(cfg)
    exposed = timeline.exposed_comm_s
    assert abs(exposed - bucket_s) <= 1e-9 * max(1.0, bucket_s), (exposed, bucket_s)
    stem = (f"DDP on {ring_where(link, n)}: {n_buckets} buckets of {num(per_bucket * layer_mib)} MiB, each "
            f"all-reduced in {duration(bucket_s)}; the backward takes {duration(timeline.compute_s)} and makes a "
            f"bucket ready every {duration(per_bucket * backward_s)}. By chapter 7's simulator, how much "
            "communication is left after the backward, and why?")
    right = Choice(f"{duration(exposed)}: the last bucket's all-reduce, which can start only when the backward ends",
                   "the other buckets overlap the rest of the backward (they finish before the next one is ready); "
                   "the last one holds the first layers' gradients, ready at the very end.")
    wrong = [Choice(f"{duration(serial.exposed_comm_s)}: every bucket's all-reduce",
                    "that is DDP without overlap; with it, every bucket but the last runs during the backward."),
             Choice("Nothing: overlap hides all communication",
                    "the last bucket becomes ready when the backward ends, so nothing is left to hide it behind."),
             Choice(f"{duration(per_bucket * backward_s)}: the time the first bucket waits to fill, added once",
                    "filling a bucket is the backward itself, not communication; the first bucket's all-reduce starts "
                    "early, while most of the backward is still to come, and it is the last one that is exposed.")]
    return choice_worked(rng, stem, right, wrong, f"Exposed = step - backward = {duration(exposed)}, one bucket's "
                         "all-reduce.", params={"link": link.name, "n": n})


def _unwaited(rng) -> Worked:
    which = pick(rng, ("the last", "every other"))
    stem = (f"In a hand-written overlapped DDP, finish() forgets to call .wait() on {which} handle(s) returned by "
            "dist.all_reduce(p.grad, async_op=True) before optimizer.step(). On a quiet test machine the loss curve "
            "looks fine. What is wrong?")
    right = Choice("A race: the step may read a gradient before its all-reduce has finished, so the ranks can step "
                   "with different gradients and drift apart silently",
                   "an async handle's wait() is what guarantees the result is in the tensor (and, on NCCL, orders the "
                   "optimizer's stream after the collective).")
    wrong = [Choice("Nothing: the all-reduce finishes anyway, so wait() is only for timing",
                    "it may finish in time on a quiet machine; nothing makes it do so under load or on NCCL."),
             Choice("The next step deadlocks", "nothing waits for the forgotten handle, so nothing blocks; the "
                    "collectives still match across ranks."),
             Choice("The gradients are summed but not averaged",
                    "the averaging is a separate division; a missing wait leaves the sum itself unfinished.")]
    return choice_worked(rng, stem, right, wrong, right.feedback, params={"which": which})


EXERCISES = (
    Exercise("ch07.first-bucket", "Which gradients go first", "", 0,
             "In which order does backward produce the gradients? (chapter 7, DDP's buckets)", _first_bucket,
             kind="choice"),
    Exercise("ch07.exposed-tail", "The tail no bucket can hide", "", 0,
             "Draw the two streams: when does the last bucket become ready? (chapter 7's simulator)", _tail,
             kind="choice"),
    Exercise("ch07.unwaited-handle", "A handle never waited", "", 0,
             "What does an asynchronous collective's wait() guarantee? (chapter 7, the DDP-and-ZeRO lab)", _unwaited,
             kind="choice"),
)
