"""Chapter 5, understanding: the ring when N doubles, how switches beat its bound, a paragraph with a wrong sentence."""
from __future__ import annotations

from commlab import cost, hardware
from commlab.exercises.bank.common import duration, num, pick, rate, ring_link_Bps, ring_where, size
from commlab.exercises.bank.concepts import wrong_sentence
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked


def ring_numbers(nbytes: int, n: int, link: hardware.Link) -> tuple[float, float]:
    """(time in s, busbw in GB/s) of a ring all-reduce by chapter 5's model on ``link``: across servers of one GPU
    each, B is the card as the cluster model drives it, not its line rate."""
    t_s = float(cost.ring_all_reduce_time_s(nbytes, n, link.latency_s, ring_link_Bps(link, n)))
    return t_s, float(cost.busbw_GBps("all_reduce", nbytes, t_s, n))


def _n_doubles(rng) -> Worked:
    link = hardware.link(pick(rng, ("nvlink4", "ib-ndr", "roce-400")))
    n = int(pick(rng, (4, 8, 16, 32)))
    large = bool(rng.integers(2))
    nbytes = int(pick(rng, (2**30, 4 * 2**30))) if large else int(pick(rng, (2**10, 4 * 2**10)))
    t1, b1 = ring_numbers(nbytes, n, link)
    t2, b2 = ring_numbers(nbytes, 2 * n, link)
    stem = (f"A ring all-reduce of {size(nbytes)} runs on {ring_where(link, n)} (alpha = "
            f"{num(link.latency_s * 1e6)} us, B = {rate(ring_link_Bps(link, n))}). By chapter 5's model, what happens "
            f"to its time and its busbw on {2 * n} ranks?")

    def text(tr: float, br: float) -> str:
        return f"time x {num(tr, 3)}, busbw x {num(br, 3)}"

    right_text = text(t2 / t1, b2 / b1)
    why = (f"t = 2(N-1)(alpha + S/(N B)): {duration(t1)} -> {duration(t2)}; busbw = algbw x 2(N-1)/N: "
           f"{num(b1, 4)} -> {num(b2, 4)} GB/s. " + (
               "The buffer is large: the bandwidth term 2(N-1)/N S/B hardly grows, so busbw stays near B."
               if large else "The buffer is tiny: 2(N-1) latency terms dominate and nearly double, and busbw falls."))
    lat_t = (2 * n - 1) / (n - 1)                                   # 2(2N-1) alpha over 2(N-1) alpha
    bw_t = ((2 * n - 1) / n) / ((n - 1) / n) / 2                     # 2(2N-1)/(2N) over 2(N-1)/N
    factor_gain = ((2 * n - 1) / n) / (2 * (n - 1) / n)              # busbw's factor, 2N ranks over N
    if large:
        candidates = [
            (text(lat_t, factor_gain / lat_t), "that counts only the latency terms 2(N-1) alpha; for a large buffer "
                                               "the bandwidth term 2(N-1)/N S/B dominates and hardly grows"),
            (text(0.5, 2.0), "more ranks do not split a ring's work: each still sends 2(N-1)/N of the buffer, and "
                             "pays more latency terms"),
            (text(2.0, 1.0), "busbw is algbw x 2(N-1)/N: a time that doubled would halve it; and here the time "
                             "hardly grows"),
        ]
    else:
        candidates = [
            (text(bw_t, 1.0), "that is the bandwidth term alone; for a tiny buffer the 2(N-1) latency terms are "
                              "almost the whole time, and they nearly double"),
            (text(0.5, 2.0), "more ranks do not split a ring's work: each pays 2(N-1) latency terms, more of them"),
            (text(1.0, 1.0), "the latency terms 2(N-1) alpha grow with N, and for a tiny buffer they are almost "
                             "the whole time"),
        ]
    wrong: list[Choice] = []
    for words, feedback in candidates:
        if words != right_text and words not in (w.text for w in wrong):
            wrong.append(Choice(words, feedback))
    return choice_worked(rng, stem, Choice(right_text, why), wrong[:3], why,
                         params={"link": link.name, "n": n, "nbytes": nbytes})


def _beat_the_bound(rng) -> Worked:
    n = int(pick(rng, (4, 8)))
    stem = (f"A ring all-reduce makes each of {n} GPUs send 2(N-1)/N = {num(2 * (n - 1) / n)} times the buffer, and no "
            "algorithm in which the GPUs do the adding can send less. NVLink SHARP (NVLS) on an NVSwitch sends about "
            "once the buffer per GPU. How can it?")
    right = Choice("The switch adds: each GPU sends its buffer to the switch once and reads the sum back once",
                   "the bound holds when the ranks add; with in-network reduction the GPUs no longer exchange "
                   "partial sums (chapter 5, 6: NVLS and SHARP).")
    wrong = [Choice("It compresses the gradients", "NVLS moves the values as they are; the switch reduces them."),
             Choice("It runs a ring in both directions at once",
                    "two directions double the bandwidth used, not the bytes each GPU must send."),
             Choice("It uses a tree, and trees send fewer bytes than rings",
                    "a tree of GPUs that add sends at least as many bytes per GPU as the ring; only a switch that "
                    "adds changes the count.")]
    return choice_worked(rng, stem, right, wrong, "In-network reduction: about S each way per GPU instead of "
                         "2(N-1)/N S.", params={"n": n})


def _ring_paragraph(rng) -> Worked:
    n = int(pick(rng, (4, 8, 16)))
    link = hardware.link(pick(rng, ("nvlink4", "ib-ndr")))
    nbytes = int(pick(rng, (2**30, 14 * 10**9)))
    t_s, _ = ring_numbers(nbytes, n, link)
    per_rank = 2 * (n - 1) / n * nbytes
    claims = [
        (f"On {n} ranks the ring all-reduce takes {2 * (n - 1)} steps: {n - 1} of reduce-scatter, then {n - 1} of "
         "all-gather.", "N-1 steps for each half.",
         f"On {n} ranks the ring all-reduce takes {n - 1} steps.",
         f"the reduce-scatter takes N-1 = {n - 1} steps and the all-gather another {n - 1}: {2 * (n - 1)}."),
        (f"In every step each rank sends one chunk of S/{n} to its right-hand neighbour.",
         "the buffer is cut into N chunks; each step moves one per rank.",
         "In every step the rank that holds the root's chunk sends it to all the others.",
         "a ring has no root: every rank sends one chunk of S/N to its neighbour in every step."),
        (f"For {size(nbytes)} each rank sends {size(per_rank)} in all.", f"2(N-1)/N S = {size(per_rank)}.",
         f"For {size(nbytes)} each rank sends {size(2 * (n - 1) * nbytes)} in all.",
         f"each step carries one chunk of S/N, not the whole buffer: 2(N-1)/N S = {size(per_rank)}."),
        (f"On {ring_where(link, n)}, the model gives {duration(t_s)}.",
         f"2(N-1)(alpha + S/(N B)) = {duration(t_s)}.", None, None),
    ]
    return wrong_sentence(rng, "The ring all-reduce.", claims, params={"n": n, "link": link.name})


EXERCISES = (
    Exercise("ch05.n-doubles", "The ring when N doubles: time and busbw", "", 0,
             "Write t = 2(N-1)(alpha + S/(N B)) for N and 2N; which term dominates for this buffer? (chapter 5)",
             _n_doubles, kind="choice"),
    Exercise("ch05.beat-the-bound", "How a switch beats the ring's bound", "", 0,
             "Who does the adding in a ring, and who in NVLS? (chapter 5, why no algorithm can do better)",
             _beat_the_bound, kind="choice"),
    Exercise("ch05.wrong-sentence", "The ring all-reduce: the wrong sentence", "", 0,
             "Steps, chunks and bytes per rank of a ring (chapter 5).", _ring_paragraph, kind="choice"),
)
