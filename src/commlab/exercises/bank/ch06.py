"""Chapter 6, tree all-reduce: 2 ceil(log2 N) steps, the ring/tree crossover, latency vs bandwidth.

Where the answer depends on alpha (the crossover, a small message's time) the question gives both the wire's
latency and alpha_step, the effective cost of a step (chapter 5's convention), and asks for the latter."""
from __future__ import annotations

from commlab import cost, hardware, units
from commlab.exercises.bank.ch05 import alpha_step_s, largest_group
from commlab.exercises.bank.common import (draw_ranks, duration, num, pick, rate, ratio_mistake, ring_link_Bps,
                                          ring_where, size)
from commlab.exercises.model import Exercise, Mistake, Worked

#: inside a server (as many GPUs as one such group holds), or across single-GPU servers, each on its own card,
#: B from the book's cluster model (chapter 6 costs its ring and tree across servers that way)
_LINKS = ("nvlink4", "pcie5", "ib-ndr", "roce-400")


def _tree_steps(rng) -> Worked:
    n = draw_ranks(rng, (3, 5, 6, 8, 12, 16, 24, 32, 100, 128, 1000, 1024))
    depth = int(cost.tree_depth(n))
    steps = 2 * depth
    question = (f"A binary-tree all-reduce over {n} ranks reduces up to the root, then broadcasts back down. How "
                "many latency terms (alpha) does it pay, one per tree level crossed?")
    solution = (f"The tree has ceil(log2 N) = ceil(log2 {n}) = {depth} levels; up and down: 2 x {depth} = "
                f"{steps}. A ring would pay 2(N-1) = {2 * (n - 1)}.")
    mistakes = (Mistake(0.5, "one direction only", "reduce up, then broadcast down: both cross every level"),
                ratio_mistake(2 * (n - 1), steps, "the ring's count", "2(N-1) is the ring's"))
    return Worked(question, steps, solution, mistakes, params={"n_ranks": n})


def _link_question(rng):
    link = hardware.link(pick(rng, _LINKS))
    limit = largest_group(link.name)
    n = draw_ranks(rng, tuple(k for k in (8, 16, 32, 64, 128, 256) if limit is None or k <= limit))
    return link, n, link.latency_s, ring_link_Bps(link, n)


def _alphas(link) -> str:
    """The two alphas of chapter 5's convention, as a question states them."""
    return (f"the wire's latency {num(link.latency_s * 1e6)} us, alpha_step = {num(alpha_step_s(link.name) * 1e6)} us "
            "(what NCCL's model charges per step over this kind of link)")


def _wire_mistake(wrong: float, right: float) -> Mistake:
    return ratio_mistake(wrong, right, "used the wire's latency",
                         "a step of a real collective costs alpha_step, not the wire's latency (chapter 5)")


def _crossover(rng) -> Worked:
    link, n, wire, bw = _link_question(rng)
    alpha = alpha_step_s(link.name)
    nbytes = cost.crossover_nbytes("ring", "tree", n, alpha, bw)
    depth = int(cost.tree_depth(n))
    question = (f"An all-reduce on {ring_where(link, n)} (B = {rate(bw)} one way; {_alphas(link)}). "
                "Ring: 2(N-1)(alpha + S/(N B)); plain tree at its best (S/B a step, chapter 6): "
                "2 ceil(log2 N)(alpha + S/B), both with alpha = alpha_step. "
                "Above what size S "
                "is the ring faster? Give S in KB.")
    solution = (f"Equal when 2(N-1)(alpha + S/(NB)) = 2D(alpha + S/B) with D = {depth}: "
                f"S = (N-1-D) alpha B / (D - (N-1)/N) = {size(nbytes)}. Below it the tree's fewer latency terms "
                f"win; above it the ring's bandwidth does. S is proportional to alpha: with the wire's latency it "
                f"would be {size(cost.crossover_nbytes('ring', 'tree', n, wire, bw))}.")
    mistakes = (
        _wire_mistake(cost.crossover_nbytes("ring", "tree", n, wire, bw), nbytes),
        ratio_mistake(cost.crossover_nbytes("ring", "tree", n, alpha, 2 * bw), nbytes,
                      "used the bidirectional figure", "use the one-direction bandwidth"),
        ratio_mistake(cost.crossover_nbytes("ring", "tree", n, alpha, bw / 8), nbytes, "bits vs bytes",
                      "B is in bytes per second"),
    )
    return Worked(question, nbytes / units.KB, solution, mistakes,
                  params={"n_ranks": n, "link": link.name, "alpha_step_s": alpha})


def _latency_ratio(rng) -> Worked:
    link, n, alpha, bw = _link_question(rng)
    nbytes = float(pick(rng, (4, 8, 64)))
    ring = float(cost.ring_all_reduce_time_s(nbytes, n, alpha, bw))
    tree = float(cost.tree_all_reduce_time_s(nbytes, n, alpha, bw))
    ratio = ring / tree
    question = (f"Syncing a scalar of {size(nbytes)} on {ring_where(link, n)} (the wire's latency alpha = "
                f"{num(alpha * 1e6)} us, B = {rate(bw)}): how many times longer does a ring all-reduce take than a "
                "tree all-reduce?")
    solution = (f"Ring: 2(N-1) = {2 * (n - 1)} steps, {duration(ring)}; tree: 2 ceil(log2 N) = "
                f"{2 * int(cost.tree_depth(n))} steps, {duration(tree)}. Ratio {num(ratio)}: for tiny messages "
                "only the number of latency terms matters.")
    mistakes = (ratio_mistake(1 / ratio, ratio, "ratio upside down", "divide the ring's time by the tree's"),
                Mistake(0.5, "one phase of the ring only", "the ring pays 2(N-1) latency terms: both phases"))
    return Worked(question, ratio, solution, mistakes, params={"n_ranks": n, "link": link.name})


def _tree_bandwidth(rng) -> Worked:
    link, n, alpha, bw = _link_question(rng)
    nbytes = float(pick(rng, (1, 4, 16))) * units.GB
    ring = float(cost.ring_all_reduce_time_s(nbytes, n, alpha, bw))
    tree = float(cost.tree_all_reduce_time_s(nbytes, n, alpha, bw))
    question = (f"A {size(nbytes)} gradient all-reduce on {ring_where(link, n)} (the wire's latency alpha = "
                f"{num(alpha * 1e6)} us, B = {rate(bw)}): how many times longer does a plain binary tree take "
                "than a ring? (Plain tree at its best: the whole buffer crosses every level, no pipelining, S/B a "
                "step as if each child had a link of its own into its parent.)")
    solution = (f"Tree: 2 ceil(log2 N)(alpha + S/B) = {duration(tree)}; ring: 2(N-1)(alpha + S/(NB)) = "
                f"{duration(ring)}. Ratio {num(tree / ring)}: a plain tree wastes bandwidth, and more under the "
                "one-port model of chapter 6, where an inner rank's two children share its port. NCCL's pipelined "
                "double binary tree splits the buffer so both trees stream at full bandwidth.")
    depth = int(cost.tree_depth(n))
    mistakes = (ratio_mistake(depth / (n - 1), tree / ring, "compared step counts only",
                              "for a large buffer the bandwidth terms decide: S/B per tree level vs S/(NB) per "
                              "ring step"),
                ratio_mistake(ring / tree, tree / ring, "ratio upside down", "divide the tree's time by the ring's"))
    return Worked(question, tree / ring, solution, mistakes, params={"n_ranks": n, "link": link.name})


def _tree_time(rng) -> Worked:
    link, n, wire, bw = _link_question(rng)
    alpha = alpha_step_s(link.name)
    nbytes = float(pick(rng, (4, 8, 256, 4096)))
    t_s = float(cost.tree_all_reduce_time_s(nbytes, n, alpha, bw))
    depth = int(cost.tree_depth(n))
    question = (f"A tree all-reduce of {size(nbytes)} on {ring_where(link, n)} (B = {rate(bw)} one way; "
                f"{_alphas(link)}): with t = 2 ceil(log2 N)(alpha_step + S/B), how long does it take, in us?")
    solution = (f"ceil(log2 {n}) = {depth} levels, crossed up and down: {2 * depth} x ({duration(alpha)} + "
                f"{duration(nbytes / bw)}) = {duration(t_s)}. For a message this small the latency terms are "
                "nearly all of it, which is why the alpha matters.")
    mistakes = (Mistake(0.5, "one direction only", "reduce up and broadcast down: 2 ceil(log2 N) steps"),
                _wire_mistake(cost.tree_all_reduce_time_s(nbytes, n, wire, bw), t_s),
                ratio_mistake(cost.ring_all_reduce_time_s(nbytes, n, alpha, bw), t_s, "the ring's step count",
                              "2(N-1) steps is the ring; the tree has 2 ceil(log2 N)"))
    return Worked(question, t_s * 1e6, solution, mistakes,
                  params={"n_ranks": n, "link": link.name, "alpha_step_s": alpha})


EXERCISES = (
    Exercise("ch06.tree-steps", "Latency terms of a tree all-reduce", "", 0,
             "A binary tree has ceil(log2 N) levels, crossed up and down (chapter 6).", _tree_steps),
    Exercise("ch06.crossover", "Ring vs tree crossover size", "KB", 0.03,
             "Set the ring and tree alpha-beta times equal and solve for S, with alpha_step (chapter 6, the crossover "
             "table).",
             _crossover),
    Exercise("ch06.latency-ratio", "Ring vs tree for a tiny message", "", 0.03,
             "For tiny S only the alpha terms count: 2(N-1) vs 2 ceil(log2 N) (chapter 6).", _latency_ratio),
    Exercise("ch06.tree-bandwidth", "Plain tree vs ring for a large buffer", "", 0.03,
             "For large S the bandwidth terms dominate: 2 ceil(log2 N) S/B vs 2(N-1)/N S/B (chapter 6).",
             _tree_bandwidth),
    Exercise("ch06.tree-time", "Time of a tree all-reduce, small message", "us", 0.02,
             "t = 2 ceil(log2 N)(alpha_step + S/B): one alpha per level, up and down (chapter 6).", _tree_time),
)
