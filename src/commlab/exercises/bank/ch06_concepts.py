"""Chapter 6, understanding: which curve is the ring, the tree and NVLS; ring and tree when N doubles; trees."""
from __future__ import annotations

import math

import numpy as np

from commlab import cost, hardware
from commlab.tuner.machine import Machine, parse_machine
from commlab.tuner.predict import predict
from commlab.exercises.bank.common import duration, num, pick, rate, ring_link_Bps, ring_where
from commlab.exercises.bank.concepts import wrong_sentence
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked

#: the curves' sizes, 8 KiB to 1 GiB; the question's text quotes three of them (SHOWN)
SIZES = tuple(2**k for k in range(13, 31))
SHOWN = {2**13: "8 KiB", 2**20: "1 MiB", 2**30: "1 GiB"}
_NAMES = {"Ring": "the ring", "Tree": "the tree", "NVLSTree": "NVLS (NVLSTree)"}


def algorithm_times_us(machine: Machine) -> dict[str, np.ndarray]:
    """Each algorithm's predicted all-reduce time at SIZES, its best protocol, (commlab.tuner.predict)."""
    p = predict("all_reduce", np.array(SIZES), machine)
    best: dict[str, np.ndarray] = {}
    for (algo, _proto), t_us in p.table.items():
        best[algo] = np.minimum(best.get(algo, np.inf), np.asarray(t_us, dtype=float))
    return best


def _curves(rng) -> Worked:
    nodes = int(pick(rng, (16, 32)))
    gpu = pick(rng, ("h100", "b200"))
    machine = parse_machine(f"gpu={gpu},gpus_per_node=8,nodes={nodes},nics_per_node=8,nic_Gbps=400")
    times = algorithm_times_us(machine)
    algos = ("Ring", "Tree", "NVLSTree")
    small = {a: float(times[a][0]) for a in algos}
    large = {a: float(times[a][-1]) for a in algos}
    assert min(algos, key=lambda a: small[a]) == "Tree" and max(algos, key=lambda a: small[a]) == "Ring", small
    assert min(algos, key=lambda a: large[a]) == "NVLSTree", large
    labels = ("P", "Q", "R")
    order = [algos[int(i)] for i in rng.permutation(3)]          # label k is algorithm order[k]
    at = [SIZES.index(nbytes) for nbytes in SHOWN]
    rows = "\n".join(f"    {label}: " + ", ".join(f"{w} {duration(times[a][i] * 1e-6)}"
                                                for w, i in zip(SHOWN.values(), at))
                     for label, a in zip(labels, order))
    n = machine.n_ranks
    stem = (f"NCCL's cost model (chapter 6) predicts three all-reduce algorithms on {nodes} nodes of 8 {gpu.upper()} "
            f"({n} GPUs, NVSwitch inside a node, 8 x 400 Gb/s InfiniBand per node). Their times (chapter 6 draws "
            f"the three curves):\n\n{rows}\n\nWhich is which?")

    def mapping(assign: dict[str, str]) -> str:
        return ", ".join(f"{label} = {_NAMES[assign[label]]}" for label in labels)

    truth = dict(zip(labels, order))
    right = Choice(mapping(truth), f"the tree pays about 2 log2 N latency terms, the fewest at 8 KiB; the ring "
                   f"2(N-1) = {2 * (n - 1)}, the most; at 1 GiB NVLS is fastest because the NVSwitch adds inside "
                   "each node.")
    swaps = {("Ring", "Tree"): "the ring's latency grows with N (2(N-1) steps), the tree's with log2 N: at 8 KiB on "
                               f"{n} GPUs the slowest is the ring, the fastest the tree",
             ("Tree", "NVLSTree"): "NVLS is fastest for a large buffer (the switch does the adding), not for a small "
                                   "one, where its setup costs more than a tree's few steps",
             ("Ring", "NVLSTree"): "at 1 GiB the fastest is the one whose switches add (NVLS); the ring is the "
                                   "slowest at 8 KiB"}
    wrong = []
    for (a, b), why in swaps.items():
        inverse = {algo: label for label, algo in truth.items()}
        swapped = dict(truth)
        swapped[inverse[a]], swapped[inverse[b]] = b, a
        wrong.append(Choice(mapping(swapped), why + "."))
    solution = (f"Smallest time at 8 KiB: the tree ({duration(small['Tree'] * 1e-6)}); largest: the ring "
                f"({duration(small['Ring'] * 1e-6)}); smallest at 1 GiB: NVLS ({duration(large['NVLSTree'] * 1e-6)}).")
    curves = {label: [float(t) for t in times[a]] for label, a in zip(labels, order)}
    return choice_worked(rng, stem, right, wrong, solution,
                         params={"nodes": nodes, "gpu": gpu, "sizes": list(SIZES), "curves_us": curves})


def _latency_doubles(rng) -> Worked:
    link = hardware.link(pick(rng, ("nvlink4", "ib-ndr", "roce-400")))
    n = int(pick(rng, (8, 16, 32, 64)))
    nbytes = 8
    bw = {k: ring_link_Bps(link, k) for k in (n, 2 * n)}       # across servers: the card as NCCL drives it
    ring = [float(cost.ring_all_reduce_time_s(nbytes, k, link.latency_s, bw[k])) for k in (n, 2 * n)]
    tree = [float(cost.tree_all_reduce_time_s(nbytes, k, link.latency_s, bw[k])) for k in (n, 2 * n)]
    depth = math.ceil(math.log2(n))
    stem = (f"An 8-byte all-reduce (pure latency) on {ring_where(link, n)} (alpha = {num(link.latency_s * 1e6)} "
            f"us). By chapter 6's models, ring {duration(ring[0])} and binary tree {duration(tree[0])}. On {2 * n} "
            "ranks?")

    def text(r: float, t: float) -> str:
        return f"ring {duration(r)}, tree {duration(t)}"

    right = Choice(text(ring[1], tree[1]), f"the ring's 2(N-1) steps almost double; the tree gets one level deeper: "
                   f"2 ceil(log2 N) = {2 * depth} -> {2 * (depth + 1)} latency terms.")
    wrong = [Choice(text(2 * ring[0], 2 * tree[0]), "the tree's depth is log2 N: doubling N adds one level (two "
                    "latency terms, up and down), it does not double its time."),
             Choice(text(ring[0] + 2 * link.latency_s, tree[0] + 2 * link.latency_s),
                    "adding one level is the tree's rule; the ring adds N steps each way, its time nearly doubles."),
             Choice(text(ring[0], tree[0]), "both pay latency terms that grow with N: the ring's linearly, the "
                    "tree's logarithmically.")]
    return choice_worked(rng, stem, right, wrong, right.feedback, params={"n": n, "link": link.name})


def _tree_paragraph(rng) -> Worked:
    n = int(pick(rng, (16, 64, 256)))
    depth = math.ceil(math.log2(n))
    link = hardware.link(pick(rng, ("ib-ndr", "roce-400")))
    claims = [
        (f"A binary tree all-reduce on {n} ranks pays about 2 log2 N = {2 * depth} latency terms, the ring "
         f"2(N-1) = {2 * (n - 1)}.", "up the tree and down again, one level per step.", None, None),
        ("Without pipelining, a plain tree is slow for a large buffer: each inner rank receives the whole buffer "
         "from each child and sends it on.",
         "every level moves the whole buffer, and an inner node has two children to hear from.",
         "For a large buffer a plain tree sends fewer bytes per rank than the ring.",
         "a plain tree's inner ranks move the whole buffer up and down, more than the ring's 2(N-1)/N of it; "
         "pipelining and the double tree fix the time, not by sending less."),
        ("NCCL's double binary tree uses two trees in which most ranks are a leaf in one and an inner node in the "
         "other, so each carries half the data.",
         "NVIDIA's 2019 description of NCCL 2.4's trees: the two trees split the work and the links' load.",
         "NCCL's double binary tree sends every byte twice, once in each tree, for safety.",
         "each tree carries half of the buffer; together they move it once."),
        (f"Across {ring_where(link, n)} (B = {rate(ring_link_Bps(link, n))}) the tree wins for small messages "
         "on many ranks and the ring "
         "for large ones: the crossover of chapter 6.", "latency favours the tree, bandwidth the ring.",
         "The tree wins at every size once there are enough ranks.",
         "the plain tree's bandwidth term does not shrink with N; for large buffers the ring (or a pipelined tree) "
         "wins."),
    ]
    return wrong_sentence(rng, "Trees against rings.", claims, params={"n": n})


EXERCISES = (
    Exercise("ch06.which-curve", "Which curve is the ring, the tree, NVLS", "", 0,
             "Look at the smallest size (latency terms: 2(N-1) or about 2 log2 N) and the largest (who adds?) "
             "(chapter 6).", _curves, kind="choice"),
    Exercise("ch06.latency-doubles", "Ring and tree latency when N doubles", "", 0,
             "The ring pays 2(N-1) latency terms, a binary tree 2 ceil(log2 N) (chapter 6).", _latency_doubles,
             kind="choice"),
    Exercise("ch06.wrong-sentence", "Trees and rings: the wrong sentence", "", 0,
             "Latency terms, bytes per rank, and what the double tree splits (chapter 6).", _tree_paragraph,
             kind="choice"),
)
