"""Chapter 3, point-to-point: ping-pong latency and bandwidth, and counting the messages of a ring."""
from __future__ import annotations

from commlab import cost, hardware, schedules, units
from commlab.exercises.bank.ch02 import alpha_s, message_time_s
from commlab.exercises.bank.common import as_shown_s, draw_ranks, duration, num, pick, ratio_mistake, size
from commlab.exercises.model import Exercise, Mistake, Worked

_LINKS = ("nvlink4", "pcie4", "pcie5", "ib-hdr", "ib-ndr", "roce-100", "roce-200")


def _one_way(rng) -> Worked:
    link = hardware.link(pick(rng, _LINKS))
    nbytes = float(pick(rng, (8, 1024, 65536, 1 << 20)))
    n_round_trips = int(pick(rng, (10, 20, 50, 100, 1000)))
    total_s = as_shown_s(2 * n_round_trips * message_time_s(nbytes, link))
    one_way_s = total_s / (2 * n_round_trips)
    question = (f"A ping-pong test sends a {size(nbytes)} message from rank 0 to rank 1 and back, "
                f"{n_round_trips} times. The whole loop took {duration(total_s)}. What is the one-way time of "
                "one message, in us?")
    solution = (f"Each round trip is two messages: {n_round_trips} round trips = {2 * n_round_trips} messages. "
                f"One way = {duration(total_s)} / {2 * n_round_trips} = {duration(one_way_s)}.")
    mistakes = (Mistake(2.0, "round trip taken as one way", "a round trip is two messages: divide by 2 as well"),
                Mistake(2.0 * n_round_trips, "total not divided", "divide the loop's time by 2 x round trips"))
    return Worked(question, one_way_s * 1e6, solution, mistakes, params={"link": link.name, "nbytes": nbytes})


def _two_points(rng, small_fractions=(0.0,)):
    """Two ping-pong points (sizes, one-way times as printed) from a link's alpha-beta model.

    The small size is a fraction of alpha * B (at least 8 bytes), the large one 2-16 times alpha * B.
    """
    link = hardware.link(pick(rng, _LINKS))
    half = alpha_s(link) * link.unidir_Bps
    small = max(8.0, float(round(half * float(pick(rng, small_fractions)), -2)))
    large = float(round(half * float(pick(rng, (2, 4, 8, 16))), -3))
    times = [as_shown_s(message_time_s(small, link)), as_shown_s(message_time_s(large, link))]
    return link, (small, large), times


def _points_text(sizes, times) -> str:
    return " and ".join(f"{size(s)} in {duration(t)}" for s, t in zip(sizes, times))


def _pingpong_bandwidth(rng) -> Worked:
    link, sizes, times = _two_points(rng, (0.0, 0.001, 0.002))
    fit = cost.fit_alpha_beta(sizes, times)
    question = (f"Half of a ping-pong round trip (one way) measured {_points_text(sizes, times)}. Fit "
                "t = alpha + S/B through the two points: what is the bandwidth B, in GB/s?")
    slope = (times[1] - times[0]) / (sizes[1] - sizes[0])
    solution = (f"The slope between the points is 1/B = ({duration(times[1])} - {duration(times[0])}) / "
                f"({size(sizes[1])} - {size(sizes[0])}) = {slope:.4g} s/byte, so B = {num(fit.bw_GBps)} GB/s. "
                f"(alpha = {duration(fit.alpha_s)}.)")
    naive_GBps = sizes[1] / times[1] / units.GB
    mistakes = (ratio_mistake(naive_GBps, fit.bw_GBps, "latency not taken out",
                              "S/t at one size still contains alpha: use the slope between the two points"),
                Mistake(0.5, "round trip taken as one way", "the times given are already one way"))
    return Worked(question, fit.bw_GBps, solution, mistakes, params={"link": link.name})


def _pingpong_latency(rng) -> Worked:
    link, sizes, times = _two_points(rng, (0.125, 0.25, 0.5))
    fit = cost.fit_alpha_beta(sizes, times)
    question = (f"One-way ping-pong times: {_points_text(sizes, times)}. Fit t = alpha + S/B through the two "
                "points: what is the latency alpha, in us?")
    solution = (f"B from the slope: {num(fit.bw_GBps)} GB/s. alpha = t1 - S1/B = {duration(times[0])} - "
                f"{duration(sizes[0] / (fit.bw_GBps * units.GB))} = {duration(fit.alpha_s)}.")
    mistakes = (ratio_mistake(times[0], fit.alpha_s, "small message's time taken as alpha",
                              "even a small message has a bandwidth term S/B: subtract it"),)
    return Worked(question, fit.alpha_s * 1e6, solution, mistakes, params={"link": link.name})


def _ring_messages(rng) -> Worked:
    n = draw_ranks(rng, (3, 4, 5, 6, 8, 12, 16))
    schedule = schedules.build("ring-all-gather", n)
    n_messages = sum(len(step) for step in schedule.steps)
    question = (f"An all-gather over {n} ranks is written with send/recv on a ring: in each step every rank "
                "sends one chunk to its right neighbour and receives one from its left, until every rank holds "
                "every chunk. How many point-to-point messages are sent in total?")
    solution = (f"Each rank starts with 1 of the {n} chunks and needs the other {n - 1}: {n - 1} steps. In each "
                f"step all {n} ranks send one message: {n} x {n - 1} = {n_messages} messages.")
    mistakes = (Mistake(1 / n, "counted steps, not messages", f"each step has {n} messages, one per rank"),
                Mistake(1 / (n - 1), "counted one step only", f"the chunks need {n - 1} steps to go round"),
                Mistake(n / (n - 1), "N steps instead of N-1", "a rank already holds its own chunk"))
    return Worked(question, n_messages, solution, mistakes, n_ranks=None, params={"n_ranks": n})


EXERCISES = (
    Exercise("ch03.one-way", "One-way time from a ping-pong", "us", 0.02,
             "A round trip is two messages; divide the loop's time by the number of messages (chapter 3).",
             _one_way),
    Exercise("ch03.pingpong-bandwidth", "Bandwidth from two ping-pong sizes", "GB/s", 0.03,
             "The slope of t against S is 1/B; two points give it (chapter 3, ping-pong).", _pingpong_bandwidth),
    Exercise("ch03.pingpong-latency", "Latency from two ping-pong sizes", "us", 0.03,
             "Find B from the slope, then alpha = t - S/B at either point (chapter 3, ping-pong).",
             _pingpong_latency),
    Exercise("ch03.ring-messages", "Messages of a ring all-gather", "", 0,
             "Count steps (N-1) times messages per step (N) (chapter 3, a ring pass).", _ring_messages),
)
