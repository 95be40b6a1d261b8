"""Chapter 4, collective primitives: bytes each rank sends, output sizes, nccl-tests' busbw factor."""
from __future__ import annotations

from commlab import collectives, units
from commlab.exercises.bank.common import draw_ranks, draw_round, num, pick, size
from commlab.exercises.model import Exercise, Mistake, Worked

_DTYPES = (("fp16", 2), ("bf16", 2), ("fp32", 4))


def _all_gather_sent(rng) -> Worked:
    n = draw_ranks(rng)
    shard = draw_round(rng, 0.5, 8, 0.5) * units.GB
    gathered = collectives.spec("all_gather").output_count(int(shard), n)  # bytes: 1-byte elements
    sent = float(collectives.spec("all_gather").bytes_sent_per_rank(gathered, n)[0])
    question = (f"{n} ranks each hold a {size(shard)} shard of the parameters and run a ring all_gather, so "
                f"every rank ends with all {size(gathered)}. How many GB does each rank send?")
    solution = (f"The gathered buffer is S = {n} x {size(shard)} = {size(gathered)}. In a ring all-gather each "
                f"rank forwards every shard but the last it receives: N-1 = {n - 1} shards, (N-1)/N * S = "
                f"{n - 1}/{n} x {size(gathered)} = {size(sent)}.")
    mistakes = (Mistake(n / (n - 1), "the whole gathered buffer", "a rank never sends back what it receives last"),
                Mistake(1 / (n - 1), "one shard only", f"each shard has to reach {n - 1} other ranks"))
    return Worked(question, sent / units.GB, solution, mistakes, n_ranks=n, params={"n_ranks": n, "shard": shard})


def _reduce_scatter_sent(rng) -> Worked:
    n = draw_ranks(rng)
    nbytes = draw_round(rng, 1, 64, 1) * units.GB
    sent = float(collectives.spec("reduce_scatter").bytes_sent_per_rank(nbytes, n)[0])
    question = (f"{n} ranks each hold {size(nbytes)} of gradients and run a ring reduce_scatter: afterwards "
                f"each rank holds the sum of its own 1/{n} of the buffer. How many GB does each rank send?")
    solution = (f"The buffer is cut into N = {n} chunks of {size(nbytes / n)}. In each of the N-1 = {n - 1} steps "
                f"a rank sends one partial-sum chunk to its neighbour: (N-1)/N * S = {size(sent)}.")
    mistakes = (Mistake(n / (n - 1), "the whole buffer", "each step sends a chunk of S/N, and there are N-1 steps"),
                Mistake(2.0, "all-reduce's volume", "2(N-1)/N is reduce-scatter plus all-gather; here only one"))
    return Worked(question, sent / units.GB, solution, mistakes, n_ranks=n, params={"n_ranks": n, "nbytes": nbytes})


def _broadcast_total(rng) -> Worked:
    n = draw_ranks(rng)
    nbytes = draw_round(rng, 0.5, 16, 0.5) * units.GB
    sent = collectives.spec("broadcast").bytes_sent_per_rank(nbytes, n, root=0)
    total = float(sent.sum())
    root = float(sent[0])
    question = (f"Rank 0 broadcasts {size(nbytes)} of initial weights to the other {n - 1} ranks of a {n}-rank group "
                f"with a pipelined chain (rank 0 -> 1 -> 2 -> ... -> {n - 1}). How many GB cross the links in "
                "total, all ranks together?")
    solution = (f"Every rank but the last forwards the whole buffer once: {n - 1} x {size(nbytes)} = "
                f"{size(total)}. The root sends only {size(root)}, not one copy per rank, so no link is a "
                "bottleneck.")
    mistakes = (Mistake(n / (n - 1), "the last rank counted as sending", "the end of the chain only receives"),)
    return Worked(question, total / units.GB, solution, mistakes, n_ranks=n, params={"n_ranks": n})


def _all_gather_output(rng) -> Worked:
    n = draw_ranks(rng)
    dtype, itemsize = pick(rng, _DTYPES)
    n_elements = int(draw_round(rng, 1, 100, 1)) * 1_000_000
    spec = collectives.spec("all_gather")
    out_bytes = spec.output_count(n_elements, n) * itemsize
    question = (f"Each of {n} ranks holds {num(n_elements / 1e6)} million {dtype} elements and calls all_gather. "
                "How large is each rank's output buffer, in MB?")
    solution = (f"The output is the concatenation of all {n} inputs: {n} x {num(n_elements / 1e6)}e6 elements x "
                f"{itemsize} bytes = {size(out_bytes)}.")
    mistakes = (Mistake(1 / itemsize, "elements counted as bytes", f"each {dtype} element is {itemsize} bytes"),
                Mistake(1 / n, "one rank's input only", "all_gather's output holds every rank's input"))
    return Worked(question, out_bytes / units.MB, solution, mistakes, n_ranks=n, params={"n_ranks": n})


def _busbw_factor(rng) -> Worked:
    n = draw_ranks(rng, (3, 4, 6, 8, 12, 16, 64))
    op = pick(rng, ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"))
    factor = collectives.busbw_factor(op, n)
    question = (f"nccl-tests reports the bus bandwidth busbw = algbw x F(N), where F(N) is the busiest rank's "
                f"traffic divided by the size S (chapter 4's table). What is F(N) for {op} on {n} ranks?")
    solution = (f"F(N) counts how much each rank's link carries per byte of the `size` column: {op}: "
                f"{collectives.spec(op).formula}. F({n}) = {num(factor)}.")
    other = 0.5 if op == "all_reduce" else 2.0
    mistakes = (Mistake(other, "all-reduce's factor vs the others'",
                        "all_reduce is 2(N-1)/N (reduce-scatter then all-gather); the others are (N-1)/N"),)
    return Worked(question, factor, solution, mistakes, n_ranks=n, params={"op": op, "n_ranks": n})


EXERCISES = (
    Exercise("ch04.all-gather-sent", "Bytes each rank sends in all_gather", "GB", 0.02,
             "Ring all-gather: each rank sends (N-1)/N of the gathered buffer S (chapter 4's table).",
             _all_gather_sent),
    Exercise("ch04.reduce-scatter-sent", "Bytes each rank sends in reduce_scatter", "GB", 0.02,
             "Ring reduce-scatter: N-1 steps of one chunk S/N each (chapter 4's table).", _reduce_scatter_sent),
    Exercise("ch04.broadcast-total", "Total bytes of a chain broadcast", "GB", 0.02,
             "In a pipelined chain every rank but the last forwards S once (chapter 4, broadcast).",
             _broadcast_total),
    Exercise("ch04.all-gather-output", "Output size of all_gather", "MB", 0.02,
             "all_gather concatenates every rank's input; multiply elements by bytes per element (chapter 4).",
             _all_gather_output),
    Exercise("ch04.busbw-factor", "busbw factor of a collective", "", 0.01,
             "all_reduce: 2(N-1)/N; all_gather, reduce_scatter, all_to_all: (N-1)/N (chapter 4, nccl-tests).",
             _busbw_factor),
)
