"""Chapter 5, ring all-reduce: per-rank volume 2(N-1)/N * S, its time, its steps, the naive root, and where a
real ring's busbw reaches half the link (with the effective per-step cost, not the wire's latency)."""
from __future__ import annotations

from commlab import collectives, cost, fabric, hardware, schedules, units
from commlab.tuner import nccl_constants
from commlab.exercises.bank.common import (draw_ranks, draw_round, duration, num, pick, rate, ratio_mistake,
                                          ring_link_Bps, ring_where, size)
from commlab.exercises.model import Exercise, Mistake, Worked

#: a ring inside a server, or across single-GPU servers whose card the cluster model knows
_RING_LINKS = ("nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "ib-ndr", "roce-400")


def ring_volume_nbytes(nbytes: float, n_ranks: int) -> float:
    """Bytes each rank sends in a ring all-reduce of S bytes: 2(N-1)/N * S (commlab.collectives)."""
    return float(collectives.spec("all_reduce").bytes_sent_per_rank(nbytes, n_ranks)[0])


def _ring_volume(rng) -> Worked:
    n = draw_ranks(rng)
    nbytes = draw_round(rng, 1, 200, 0.5) * units.GB
    volume = ring_volume_nbytes(nbytes, n)
    question = (f"{n} GPUs run a ring all-reduce over a {size(nbytes)} gradient buffer. How many GB does each "
                "GPU send?")
    solution = (f"Reduce-scatter: N-1 = {n - 1} steps of one chunk S/N = {size(nbytes / n)}; all-gather: "
                f"{n - 1} more. Per GPU: 2(N-1)/N * S = 2 x {n - 1}/{n} x {size(nbytes)} = {size(volume)}.")
    mistakes = (Mistake(n / (2 * (n - 1)), "ring factor 2(N-1)/N forgotten",
                        "S is the buffer, not the traffic: each GPU sends 2(N-1)/N * S"),
                Mistake(0.5, "one phase only", "all-reduce = reduce-scatter + all-gather: (N-1)/N * S each"),
                Mistake(2.0, "sent and received added", "the question asks what each GPU sends"))
    return Worked(question, volume / units.GB, solution, mistakes, n_ranks=n, params={"n_ranks": n, "nbytes": nbytes})


def largest_group(link_name: str) -> int | None:
    """Most GPUs a ring can join over ``link_name`` alone: the largest NVLink domain of that generation in
    commlab.fabric (256 for NVLink 4, 72 for NVLink 5), one 8-GPU server for older NVLink and for PCIe, and no
    limit (None) for a network, which is what a larger ring crosses (chapter 5, a ring that spans servers)."""
    item = hardware.link(link_name)
    if item.kind in ("infiniband", "roce", "ethernet"):
        return None
    sizes = [d.gpus for d in fabric.domains() if d.link == item.name]
    return max(sizes) if sizes else 8


def alpha_step_s(link_name: str) -> float:
    """The book's alpha_step (chapter 5's convention): what NCCL's own model charges for one step of a Ring/Simple
    all-reduce over this kind of link, ``hwLat`` in tuning.cc (commlab.tuner.nccl_constants): 3.4 us per NVLink
    hop, 5.7 us per PCIe hop, 14 us per network hop; against the wire's latency, the catalogue's ``latency_s``.

    >>> round(alpha_step_s("nvlink4") * 1e6, 1), round(alpha_step_s("ib-ndr") * 1e6, 1)
    (3.4, 14.0)
    """
    kind = hardware.link(link_name).kind
    hw = "nvlink" if kind in ("nvlink", "nvswitch") else "pci" if kind == "pcie" else "net"
    return nccl_constants.HW_LAT_US[(hw, "Ring", "Simple")] * 1e-6


def _ring_time(rng) -> Worked:
    link = hardware.link(pick(rng, _RING_LINKS))
    limit = largest_group(link.name)
    n = draw_ranks(rng, tuple(k for k in (4, 6, 8, 12, 16, 32) if limit is None or k <= limit))
    nbytes = draw_round(rng, 0.1, 20, 0.1) * units.GB
    alpha, bw = link.latency_s, ring_link_Bps(link, n)
    t_s = float(cost.ring_all_reduce_time_s(nbytes, n, alpha, bw))
    printed = ("as NCCL drives the card in the book's cluster model" if limit is None
               else f"printed {rate(2 * bw)} both ways")
    question = (f"A ring all-reduce of {size(nbytes)} runs on {ring_where(link, n)}: the wire's "
                f"latency alpha = {num(alpha * 1e6)} us per step, B = {rate(bw)} one way ({printed}). Using the ideal "
                "ring's t = 2(N-1)(alpha + S/(N B)), how long does it take, in ms?")
    solution = (f"2(N-1) = {2 * (n - 1)} steps, each alpha + S/(N B) = {duration(alpha)} + "
                f"{duration(nbytes / (n * bw))}: t = {duration(t_s)}. A real step costs more than the wire's latency "
                f"(NCCL counts {num(alpha_step_s(link.name) * 1e6)} us over this kind of link, chapter 5), which at "
                "this size changes almost nothing: the bandwidth term decides.")
    mistakes = (
        ratio_mistake(cost.ring_all_reduce_time_s(nbytes, n, alpha, 2 * bw), t_s, "used the bidirectional figure",
                      "each step sends one way; use the one-direction bandwidth"),
        ratio_mistake(nbytes / bw + 2 * (n - 1) * alpha, t_s, "ring factor 2(N-1)/N forgotten",
                      "each GPU sends 2(N-1)/N * S, not S"),
        ratio_mistake(cost.ring_all_reduce_time_s(nbytes * 8, n, alpha, bw), t_s, "bits vs bytes",
                      "B is in bytes per second"),
    )
    return Worked(question, t_s * 1e3, solution, mistakes, n_ranks=n, params={"n_ranks": n, "link": link.name})


def _ring_steps(rng) -> Worked:
    n = draw_ranks(rng, (3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 64))
    steps = schedules.build("ring-all-reduce", n).n_steps
    question = f"How many steps does a ring all-reduce over {n} ranks take (each step: every rank sends one chunk)?"
    solution = (f"Reduce-scatter needs N-1 = {n - 1} steps for each chunk to collect all {n} contributions; "
                f"all-gather needs {n - 1} more to deliver it: 2(N-1) = {steps}. Each step costs one alpha, "
                "which is why the ring is not latency-optimal.")
    mistakes = (Mistake(0.5, "one phase only", "all-reduce = reduce-scatter (N-1 steps) + all-gather (N-1 steps)"),
                Mistake(n / (n - 1), "N steps per phase", "a rank already holds its own chunk: N-1 steps per phase"))
    return Worked(question, steps, solution, mistakes, params={"n_ranks": n})


def _naive_root(rng) -> Worked:
    n = draw_ranks(rng)
    nbytes = draw_round(rng, 0.5, 20, 0.5) * units.GB
    schedule = schedules.build("naive-all-reduce", n)
    root_bytes = float(schedules.bytes_sent_per_rank(schedule, nbytes)[0])
    question = (f"A naive all-reduce of {size(nbytes)} on {n} ranks: every rank sends its buffer to rank 0, "
                "which adds them up and sends the sum back to every rank. How many GB does rank 0 send?")
    solution = (f"Rank 0 sends the whole sum to each of the other N-1 = {n - 1} ranks: {n - 1} x {size(nbytes)} = "
                f"{size(root_bytes)} (and receives as much). Every byte goes through rank 0's link.")
    mistakes = (Mistake(n / (n - 1), "rank 0 sends to itself too", "the root already holds the sum"),
                Mistake(2.0, "received counted too", "the question asks what rank 0 sends"))
    return Worked(question, root_bytes / units.GB, solution, mistakes, n_ranks=n, params={"n_ranks": n})


def _naive_vs_ring(rng) -> Worked:
    n = draw_ranks(rng)
    nbytes = units.GB
    naive = float(schedules.bytes_sent_per_rank(schedules.build("naive-all-reduce", n), nbytes)[0])
    ratio = naive / ring_volume_nbytes(nbytes, n)
    question = (f"On {n} ranks, how many times more bytes does the root send in a naive all-reduce (gather to "
                "rank 0, send the sum back) than any rank sends in a ring all-reduce of the same buffer?")
    solution = (f"Naive root: (N-1) S. Ring, per rank: 2(N-1)/N S. Ratio: (N-1) / (2(N-1)/N) = N/2 = {num(ratio)}. "
                "The root's load grows with N; the ring's stays below 2S.")
    mistakes = (ratio_mistake(naive / nbytes, ratio, "ring volume taken as S",
                              "a ring rank sends 2(N-1)/N * S, not S"),
                ratio_mistake(1 / ratio, ratio, "ratio upside down", "divide the root's bytes by the ring's"))
    return Worked(question, ratio, solution, mistakes, n_ranks=n, params={"n_ranks": n})


def _volume_growth(rng) -> Worked:
    small = draw_ranks(rng, (4, 8))
    large = small * int(pick(rng, (4, 8, 16, 64)))
    ratio = ring_volume_nbytes(units.GB, large) / ring_volume_nbytes(units.GB, small)
    question = (f"A cluster grows from {small} to {large} GPUs, same gradient buffer S. By what factor does the "
                "number of bytes each GPU sends in a ring all-reduce grow?")
    solution = (f"Per GPU: 2(N-1)/N * S. 2 x {large - 1}/{large} / (2 x {small - 1}/{small}) = {num(ratio)}: "
                "nearly flat: the per-GPU volume approaches 2S as N grows and never exceeds it.")
    mistakes = (Mistake(large / small, "grows with N", "each rank's volume 2(N-1)/N * S is nearly independent of N"),)
    return Worked(question, ratio, solution, mistakes, params={"small": small, "large": large})


def _mb(nbytes: float) -> str:
    """A size in decimal MB, the unit the answer is asked in ("2.918 MB", never "2.783 MiB" beside "512 KB")."""
    return f"{num(nbytes / units.MB)} MB"


def _half_busbw(rng) -> Worked:
    link = hardware.link(pick(rng, _RING_LINKS))
    limit = largest_group(link.name)
    n = draw_ranks(rng, tuple(k for k in (4, 8, 16, 32) if limit is None or k <= limit))
    a_wire, a_step, bw = link.latency_s, alpha_step_s(link.name), ring_link_Bps(link, n)
    s_half = n * a_step * bw                                           # busbw = B / (1 + N alpha B / S)
    t_s = float(cost.ring_all_reduce_time_s(s_half, n, a_step, bw))
    assert abs(float(cost.busbw_GBps("all_reduce", s_half, t_s, n)) * 1e9 / bw - 0.5) < 1e-9
    printed = ("as NCCL drives the card in the book's cluster model" if limit is None
               else f"printed {rate(2 * bw)} both ways")
    question = (f"A ring all-reduce on {ring_where(link, n)} (B = {rate(bw)} one way, {printed}). "
                f"The wire's latency is {num(a_wire * 1e6)} us, but one step of a real ring costs "
                f"alpha_step = {num(a_step * 1e6)} us "
                "(NCCL's own per-hop cost for Ring/Simple). With t = 2(N-1)(alpha_step + S/(N B)), from what size S "
                "does nccl-tests' busbw reach half of B? Give S in MB.")
    solution = (f"busbw = S/t x 2(N-1)/N = S / (N alpha + S/B) = B / (1 + N alpha B / S): half of B where "
                f"S = N alpha B = {n} x {duration(a_step)} x {rate(bw)} = {_mb(s_half)}. With the wire's latency the "
                f"same formula gives {_mb(n * a_wire * bw)}, {num(a_step / a_wire, 3)} times too early.")
    mistakes = (Mistake(a_wire / a_step, "used the wire's latency", "a step of a real collective costs "
                        "alpha_step (launch, protocol, flags), not the wire's latency"),
                Mistake(1 / n, "N left out", "busbw = B / (1 + N alpha B / S): S_1/2 = N alpha B"),
                Mistake(2 * (n - 1) / n, "2(N-1) steps instead of N",
                        "the 2(N-1) latency terms and the factor 2(N-1)/N of busbw leave N alpha B"))
    return Worked(question, s_half / units.MB, solution, mistakes,
                  params={"n_ranks": n, "link": link.name, "alpha_step_s": a_step})


EXERCISES = (
    Exercise("ch05.ring-volume", "Per-rank volume of a ring all-reduce", "GB", 0.02,
             "Each rank sends 2(N-1)/N * S: N-1 chunks in reduce-scatter, N-1 in all-gather (chapter 5).",
             _ring_volume),
    Exercise("ch05.ring-time", "Time of a ring all-reduce", "ms", 0.02,
             "t = 2(N-1)(alpha + S/(N B)), B the one-direction bandwidth (chapter 5).", _ring_time),
    Exercise("ch05.ring-steps", "Steps of a ring all-reduce", "", 0,
             "Reduce-scatter then all-gather, N-1 steps each (chapter 5).", _ring_steps),
    Exercise("ch05.naive-root", "The naive root's traffic", "GB", 0.02,
             "The root sends one copy of the sum to every other rank (chapter 5, the naive approach).",
             _naive_root),
    Exercise("ch05.naive-vs-ring", "Naive root vs ring rank", "", 0.02,
             "Compare (N-1) S with 2(N-1)/N S (chapter 5).", _naive_vs_ring),
    Exercise("ch05.volume-growth", "Does ring volume grow with N?", "", 0.01,
             "Per-rank volume 2(N-1)/N * S; take the ratio for the two N (chapter 5).", _volume_growth),
    Exercise("ch05.half-busbw", "Where a real ring reaches half the link", "MB", 0.02,
             "busbw = B / (1 + N alpha B / S) with the effective per-step alpha (chapter 5, the ring model against a "
             "real run).", _half_busbw),
)
