"""Chapter 8, NCCL and nccl-tests: algbw, busbw, and judging a measurement against the link."""
from __future__ import annotations

from commlab import collectives, cost, hardware, units
from commlab.exercises.bank.common import draw_ranks, draw_round, duration, num, pick, rate, size
from commlab.exercises.model import Exercise, Mistake, Worked

_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
_MACHINES = (("nvswitch2", "A100 SXM4 GPUs on NVSwitch"), ("nvswitch3", "H100 SXM GPUs on NVSwitch"),
             ("nvswitch4", "B200 GPUs on NVSwitch"), ("pcie4", "GPUs on PCIe 4.0 x16"),
             ("pcie5", "GPUs on PCIe 5.0 x16"))


#: Sizes drawn for rows "at 50-95 % of the link": 256 MiB to 8 GiB, where nccl-tests curves on 4-8 GPUs of one
#: node have reached their plateau (in the shipped single-node logs busbw is at least 85 % of the run's peak
#: from 256 MiB up; at 1 MiB it is far below: 8x H100, fixture 07, takes 28.6 us there, not the 3.4 us that
#: 95 % of a B200's NVLink would give).
PLATEAU_SIZES = tuple(2**k for k in range(28, 34))


def _row(rng):
    """One nccl-tests row: collective, ranks, size (power of two bytes), time in us (as printed, 2 decimals)."""
    op = pick(rng, _OPS)
    n = draw_ranks(rng, (4, 8))
    machine, gpu = pick(rng, _MACHINES)
    link = hardware.link(machine)
    nbytes = int(pick(rng, PLATEAU_SIZES))
    health = draw_round(rng, 0.5, 0.95, 0.05)
    busbw_Bps = health * link.unidir_Bps
    t_us = round(nbytes * collectives.busbw_factor(op, n) / busbw_Bps * 1e6, 2)
    return op, n, link, gpu, nbytes, t_us


def _algbw(rng) -> Worked:
    op, n, link, gpu, nbytes, t_us = _row(rng)
    algbw = float(cost.algbw_GBps(nbytes, t_us * 1e-6))
    question = (f"nccl-tests' {op}_perf on {n} GPUs prints a row with size {nbytes} (B) and time {t_us:.2f} (us). "
                "What algbw (GB/s) does it print?")
    solution = (f"algbw = size / time = {nbytes} B / {t_us:.2f} us = {num(algbw)} GB/s (GB = 1e9 bytes, as "
                "nccl-tests uses).")
    mistakes = (Mistake(units.GB / units.GiB, "GiB/s instead of GB/s", "nccl-tests divides by 1e9, not 2^30"),)
    return Worked(question, algbw, solution, mistakes, n_ranks=n, params={"op": op, "n_ranks": n})


def _busbw(rng) -> Worked:
    op, n, link, gpu, nbytes, t_us = _row(rng)
    algbw = float(cost.algbw_GBps(nbytes, t_us * 1e-6))
    busbw = float(cost.busbw_GBps(op, nbytes, t_us * 1e-6, n))
    factor = collectives.busbw_factor(op, n)
    question = (f"nccl-tests' {op}_perf on {n} GPUs: size {nbytes} (B), time {t_us:.2f} (us), algbw "
                f"{algbw:.2f} (GB/s). What busbw (GB/s) does it print?")
    solution = (f"busbw = algbw x F(N); for {op}, F({n}) = {num(factor)}: {algbw:.2f} x {num(factor)} = "
                f"{num(busbw)} GB/s.")
    mistakes = (Mistake(1 / factor, "factor F(N) left out", "busbw = algbw x F(N)"),
                Mistake(1 / factor**2, "divided by F(N)", "busbw = algbw x F(N), not algbw / F(N)"))
    return Worked(question, busbw, solution, mistakes, n_ranks=n, params={"op": op, "n_ranks": n})


def _percent_of_link(rng) -> Worked:
    op, n, link, gpu, nbytes, t_us = _row(rng)
    busbw = round(float(cost.busbw_GBps(op, nbytes, t_us * 1e-6, n)), 1)
    percent = 100 * busbw / link.unidir_GBps
    question = (f"On {n} {gpu} (printed as {rate(link.bidir_GBps * units.GB)} per GPU, both directions), "
                f"{op}_perf peaks at busbw {busbw:.1f} GB/s. What percentage of the link's usable bandwidth is "
                "that?")
    solution = (f"Hold busbw against one direction: {rate(link.unidir_Bps)}. {busbw:.1f} / "
                f"{num(link.unidir_GBps)} = {num(percent)}%. Around 80% or more is healthy; far below points at "
                "the topology or NCCL's settings.")
    mistakes = (Mistake(0.5, "held against both directions", "busbw compares with the one-direction bandwidth"),)
    return Worked(question, percent, solution, params={"op": op, "n_ranks": n, "link": link.name},
                  mistakes=mistakes)


def _time_from_busbw(rng) -> Worked:
    op, n, link, gpu, nbytes, _ = _row(rng)
    busbw = draw_round(rng, 0.6, 0.95, 0.05) * link.unidir_GBps
    factor = collectives.busbw_factor(op, n)
    t_s = nbytes * factor / (busbw * units.GB)
    assert abs(float(cost.busbw_GBps(op, nbytes, t_s, n)) - busbw) <= 1e-9 * busbw
    question = (f"A healthy {op} on {n} {gpu} reaches busbw {num(busbw)} GB/s at size {size(nbytes)} "
                f"({nbytes} B). What time (us) would nccl-tests print for that row?")
    solution = (f"algbw = busbw / F(N) = {num(busbw)} / {num(factor)} = {num(busbw / factor)} GB/s; "
                f"time = size / algbw = {duration(t_s)}.")
    mistakes = (Mistake(1 / factor, "factor F(N) left out", "the time follows from algbw = busbw / F(N)"),)
    return Worked(question, t_s * 1e6, solution, mistakes, n_ranks=n, params={"op": op, "n_ranks": n})


def _log_excerpt(text: str, limit: int = 10) -> str:
    """The NCCL INFO lines about channels, as a reader would grep them (`grep Channel`)."""
    lines = [line for line in text.splitlines() if "NCCL INFO" in line and "hannel" in line]
    return "\n".join(lines[:limit])


def _debug_log(rng) -> Worked:
    """A question on one of the real NCCL_DEBUG=INFO excerpts shipped with commlab (read with commlab.nccl)."""
    from commlab import nccl

    paths = sorted(nccl.debug_logs(), key=lambda p: p.name)
    path = paths[int(rng.integers(len(paths)))]
    log = nccl.read_debug_log(path.read_text())
    slow = sorted({c.src for c in log.connections if c.transport.startswith("SHM") and c.direction is None})
    excerpt = _log_excerpt(path.read_text())
    if slow and rng.integers(2):
        question = (f"These lines come from a real NCCL_DEBUG=INFO log ({path.name}):<pre>{excerpt}</pre>"
                    "One hop of ring channel 0 does not use a direct GPU-to-GPU path. From which rank does it "
                    "leave?")
        solution = (f"Every hop reads 'via P2P/...' except rank {slow[0]}'s, which goes 'via SHM': through host "
                    "memory, the slowest hop of the ring, and a ring runs at the pace of its slowest hop.")
        mistakes = (Mistake((slow[0] + 1) / slow[0], "named the receiver", "the hop is written 'src -> dst'"),
                    ) if slow[0] > 0 else ()
        return Worked(question, float(slow[0]), solution, mistakes, n_ranks=log.n_ranks,
                      params={"log": path.name, "kind": "slow hop"})
    question = (f"These lines come from a real NCCL_DEBUG=INFO log ({path.name}):<pre>{excerpt}</pre>"
                "How many channels (for collectives) did NCCL set up?")
    solution = (f"{log.n_channels}: NCCL numbers channels from 00 and prints either 'Channel 00/{log.n_channels:02d}' "
                f"(index/count) or a line '{log.n_channels} coll channels'. More channels spread the traffic over "
                "more SMs and links.")
    mistakes = (Mistake((log.n_channels - 1) / log.n_channels, "gave the last channel index",
                        "channels are numbered from 00"),) if log.n_channels > 1 else ()
    return Worked(question, float(log.n_channels), solution, mistakes, n_ranks=log.n_ranks,
                  params={"log": path.name, "kind": "channels"})


EXERCISES = (
    Exercise("ch08.algbw", "algbw of an nccl-tests row", "GB/s", 0.02,
             "algbw = size / time, with GB = 1e9 bytes (chapter 8, nccl-tests).", _algbw),
    Exercise("ch08.busbw", "busbw of an nccl-tests row", "GB/s", 0.02,
             "busbw = algbw x F(N): 2(N-1)/N for all_reduce, (N-1)/N for all_gather and friends, 1 for "
             "broadcast (chapter 8).", _busbw),
    Exercise("ch08.percent-of-link", "busbw against the link", "%", 0.02,
             "Compare busbw with the link's one-direction bandwidth (chapter 8, is my cluster healthy?).",
             _percent_of_link),
    Exercise("ch08.time-from-busbw", "Expected time of an nccl-tests row", "us", 0.02,
             "algbw = busbw / F(N), then time = size / algbw (chapter 8).", _time_from_busbw),
    Exercise("ch08.debug-log", "Reading a real NCCL_DEBUG=INFO log", "", 0,
             "Look at the 'Channel' lines: 'Channel 00/02' is channel 0 of 2, and each hop says 'via' its "
             "transport (chapter 8, reading NCCL_DEBUG=INFO).", _debug_log),
)
