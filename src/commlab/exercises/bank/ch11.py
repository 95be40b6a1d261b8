"""Chapter 11, at scale: a ring's latency across nodes, all-to-all on an oversubscribed fabric, what in-network
reduction saves, one slow NIC, and failures at scale. Expected answers come from :mod:`commlab.cluster`."""
from __future__ import annotations

import dataclasses

from commlab.cluster import Fabric, Shape, preset
from commlab.cluster import straggler
from commlab.cluster.levels import all_to_all_pattern, ring_pattern
from commlab.tuner import nccl_constants as K
from commlab.exercises.bank.common import duration, num, pick
from commlab.exercises.model import Exercise, Mistake, Worked


def _ring_latency(rng) -> Worked:
    nodes = int(pick(rng, (16, 32, 64, 128, 256)))
    shape = Shape.of(preset("dgx-h100-ndr"), nodes)
    net_us, nvl_us = shape.net_latency_us("LL"), shape.intra_latency_us("LL")
    n = shape.gpus
    inter = 2 * (nodes - 1)
    intra = 2 * (n - 1) - inter
    overhead = K.NET_OVERHEAD_US["intel"]                       # NCCL's post overhead on Intel hosts, us
    t_s = (inter * net_us + intra * max(nvl_us, overhead)) * 1e-6
    question = (f"NCCL's ring all-reduce over {nodes} DGX H100 nodes ({n} GPUs) with the LL protocol: of its "
                f"2(N-1) steps, 2(D-1) cross the network at {num(net_us)} us each and the others stay on NVLink, "
                f"where NCCL charges each step at least its network post overhead of {num(overhead)} us (not "
                f"NVLink's {num(nvl_us)} us) once the ring spans nodes. What is the ring's latency term (no base "
                "latency)?")
    solution = (f"2(N-1) = {2 * (n - 1)} steps: {inter} network steps x {num(net_us)} us = "
                f"{duration(inter * net_us * 1e-6)}, {intra} NVLink steps x {num(overhead)} us = "
                f"{duration(intra * overhead * 1e-6)}; total {duration(t_s)}. This is why NCCL picks trees (2 log2 D "
                "network hops) for small messages across many nodes.")
    mistakes = (Mistake(inter * net_us * 1e-6 / t_s, "network steps only",
                        "the ring still takes its N-1 steps per pass inside every node, each at least the post "
                        "overhead"),
                Mistake((2 * (n - 1) * net_us * 1e-6) / t_s, "every step at the network's latency",
                        "only 2(D-1) of the 2(N-1) steps leave a node"),
                Mistake(0.5, "one pass only", "an all-reduce is a reduce-scatter and an all-gather: 2(N-1) steps"))
    return Worked(question, t_s, solution, mistakes, params={"nodes": nodes})


def _tor(ratio: float, rail: bool):
    base = preset("h100-1k-superpod")
    fabric = Fabric(levels=2, leaf_nics=32, pod_leaves=32, oversubscription=(ratio,), rail_optimised=rail,
                    sharp=False, radix=64)
    return dataclasses.replace(base, name="exercise", fabric=fabric)


def _oversubscribed(rng) -> Worked:
    ratio = float(pick(rng, (2.0, 3.0, 4.0)))
    nodes = int(pick(rng, (16, 32, 64, 128)))
    rail = bool(pick(rng, (False, True)))
    shape = Shape.of(_tor(ratio, rail), nodes)
    pattern = all_to_all_pattern(shape)
    g = shape.groups[0].domains
    factor = max(1.0, pattern.up[0] * ratio / pattern.out)
    wiring = (f"rail-optimised: a leaf takes NIC i of {g} nodes, and PXN moves each message to the right rail over "
              "NVLink first" if rail else f"top-of-rack: a leaf takes all 8 NICs of {g} nodes")
    question = (f"An all-to-all of a large buffer over {nodes} DGX H100 nodes on a two-level fat tree, {wiring}, "
                f"with {ratio:g}:1 oversubscription above the leaves. How many times slower is its network part than "
                "on a non-blocking fabric (1 if the uplinks are not the bottleneck)?")
    share = (nodes - g) / (nodes - 1) if nodes > g else 0.0
    solution = (f"Each node spreads its traffic evenly over the other {nodes - 1} nodes; a share (D-g)/(D-1) = "
                f"{num(share)} goes to nodes outside its leaf group of g = {min(g, nodes)} and must fit through 1/"
                f"{ratio:g} of the bandwidth: {ratio:g} x {num(share)} = {num(ratio * share)}; the factor is "
                f"max(1, that) = {num(factor)}.")
    mistakes = (Mistake(ratio / factor, "all of it goes up", f"only the share (D-g)/(D-1) = {num(share)} leaves the "
                        "leaf group"),
                Mistake(1 / factor, "oversubscription ignored", f"the uplinks carry 1/{ratio:g} of what the NICs below "
                        "them can send"))
    return Worked(question, factor, solution, mistakes, params={"ratio": ratio, "nodes": nodes, "rail": rail})


def _sharp_saving(rng) -> Worked:
    nodes = int(pick(rng, (2, 4, 16, 64, 256)))
    n = 8 * nodes
    ring = ring_pattern(Shape.of(preset("dgx-h100-ndr"), nodes), 2 * (n - 1) / n).out
    question = (f"An all-reduce over {nodes} nodes of 8 GPUs ({n} ranks). A ring sends 2(N-1)/N x S out of each "
                "node; with the switches adding (SHARP), each node sends S up once. How many times more bytes leave "
                "each node with the ring?")
    solution = (f"2(N-1)/N = 2 x {n - 1}/{n} = {num(ring)}: in-network reduction almost halves what the NICs "
                "carry, which is why its busbw can pass the link's.")
    mistakes = (Mistake(2.0 / ring, "2 instead of 2(N-1)/N", f"with N = {n} the ring sends 2(N-1)/N, not 2"),
                Mistake(2.0 * (n - 1) / ring, "2(N-1) without the /N", "each of the 2(N-1) steps carries S/N"),
                Mistake(1.0 / ring**2, "turned upside down", "the ring sends more than the switch path, not less"))
    return Worked(question, ring, solution, mistakes, n_ranks=n, params={"nodes": nodes})


def _slow_nic(rng) -> Worked:
    fraction = float(pick(rng, (0.25, 0.5, 0.75)))
    t_ms = float(pick(rng, (4.0, 6.0, 12.0, 25.0)))
    lat_ms = float(pick(rng, (0.1, 0.3, 0.6)))
    t_s = (lat_ms + (t_ms - lat_ms) / fraction) * 1e-3
    question = (f"A bandwidth-bound all-reduce takes {num(t_ms)} ms on 1,024 GPUs, {num(lat_ms)} ms of it latency. "
                f"One NIC of one node trains down to {fraction:.0%} of its speed. NCCL splits the bytes evenly over "
                "its channels, and channel c crosses the network on NIC c of every node. How long does the "
                "all-reduce take now?")
    solution = (f"Every channel that crosses the slow NIC runs at {fraction:.0%}, and the collective ends with its "
                f"slowest channel: latency + bandwidth part / {fraction:g} = {num(lat_ms)} + "
                f"{num(t_ms - lat_ms)} / {fraction:g} = {duration(t_s)}, whether the job has 16 nodes or 2,048.")
    mistakes = (Mistake((lat_ms + (t_ms - lat_ms) * (1 + (1 / fraction - 1) / 128)) * 1e-3 / t_s,
                        "averaged over the NICs", "the collective waits for its slowest channel, not the average"),
                Mistake(t_ms / fraction * 1e-3 / t_s, "latency slowed too", "only the bandwidth part waits on the NIC"))
    return Worked(question, t_s, solution, mistakes, params={"fraction": fraction, "t_ms": t_ms})


def _interruptions(rng) -> Worked:
    gpus = int(pick(rng, (512, 1024, 2048, 4096, 8192, 32768)))
    hours = straggler.hours_between_interruptions(gpus)
    question = (f"Meta's Llama 3 405B run saw {straggler.LLAMA3_UNEXPECTED} unexpected interruptions in "
                f"{straggler.LLAMA3_DAYS} days on {straggler.LLAMA3_GPUS:,} GPUs. If failures scale with the number "
                f"of GPUs, how many hours pass between interruptions of a job on {gpus:,} GPUs, on average (a plain "
                "number of hours)?")
    per = straggler.LLAMA3_DAYS * 24 / straggler.LLAMA3_UNEXPECTED
    solution = (f"{straggler.LLAMA3_DAYS} x 24 h / {straggler.LLAMA3_UNEXPECTED} = {num(per)} h at "
                f"{straggler.LLAMA3_GPUS:,} GPUs; x {straggler.LLAMA3_GPUS:,} / {gpus:,} = {num(hours)} h.")
    mistakes = (Mistake(per / hours, "the 16K-GPU figure", "fewer GPUs fail less often: scale by 16,384 / N"),
                Mistake(per * gpus / straggler.LLAMA3_GPUS / hours, "scaled the wrong way",
                        "more GPUs means more failures, so less time between them"))
    return Worked(question, hours, solution, mistakes, params={"gpus": gpus})


EXERCISES = (
    Exercise("ch11.ring-latency", "A ring's latency across nodes", "s", 0.02,
             "2(D-1) network steps at NCCL's net latency, the other 2(N-1) - 2(D-1) at least its post overhead "
             "(chapter 11, all-reduce on 64 nodes).", _ring_latency),
    Exercise("ch11.oversubscribed-all-to-all", "All-to-all above an oversubscribed leaf", "", 0.02,
             "max(1, r (D-g)/(D-1)): the share of traffic that leaves a leaf group of g nodes over 1/r of the "
             "bandwidth (chapter 11, rail-optimised wiring).", _oversubscribed),
    Exercise("ch11.sharp-saving", "What in-network reduction saves", "", 0.02,
             "A ring sends 2(N-1)/N S out of each node, in-network reduction S (chapter 11, NVLS + SHARP).",
             _sharp_saving),
    Exercise("ch11.slow-nic", "One slow NIC", "s", 0.02,
             "latency + bandwidth part / f: every channel through the slow NIC runs at f (chapter 11, stragglers).",
             _slow_nic),
    Exercise("ch11.interruptions", "Hours between failures", "", 0.02,
             "54 days x 24 h / 419 interruptions x 16,384 / N (chapter 11, failures).", _interruptions),
)
