"""Chapter 8, NCCL and nccl-tests: algbw, busbw, judging a measurement against the link, NVLS's busbw above the
link, and what a fitted regime of a real curve says."""
from __future__ import annotations

from commlab import collectives, cost, hardware, units
from commlab.errors import CommlabError
from commlab.exercises.bank.common import draw_ranks, draw_round, duration, num, pick, rate, size
from commlab.exercises.model import Exercise, Mistake, Worked

_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
_MACHINES = (("nvswitch2", "A100 SXM4 GPUs on NVSwitch"), ("nvswitch3", "H100 SXM GPUs on NVSwitch"),
             ("nvswitch4", "B200 GPUs on NVSwitch"), ("pcie4", "GPUs on PCIe 4.0 x16"),
             ("pcie5", "GPUs on PCIe 5.0 x16"))


#: Sizes drawn for rows "at 50-95 % of the link": 256 MiB to 8 GiB, where nccl-tests curves on 4-8 GPUs of one
#: node have reached their plateau (in the shipped single-node logs busbw is at least 85 % of the run's peak
#: from 256 MiB up; at 1 MiB it is far below: 8x H100, log 07, takes 28.6 us there, not the 3.4 us that
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
    n = log.n_channels
    if n is None:
        raise CommlabError(f"{path.name}: the log does not say how many channels NCCL set up")
    question = (f"These lines come from a real NCCL_DEBUG=INFO log ({path.name}):<pre>{excerpt}</pre>"
                "How many channels (for collectives) did NCCL set up?")
    solution = (f"{n}: NCCL numbers channels from 00 and prints either 'Channel 00/{n:02d}' "
                f"(index/count) or a line '{n} coll channels'. More channels spread the traffic over "
                "more SMs and links.")
    mistakes = (Mistake((n - 1) / n, "gave the last channel index",
                        "channels are numbered from 00"),) if n > 1 else ()
    return Worked(question, float(n), solution, mistakes, n_ranks=log.n_ranks,
                  params={"log": path.name, "kind": "channels"})


_NVLS_MACHINES = (("nvswitch3", "H100 SXM GPUs on NVSwitch"), ("nvswitch4", "B200 GPUs on NVSwitch"))


def _nvls_busbw(rng) -> Worked:
    machine, gpu = pick(rng, _NVLS_MACHINES)
    link = hardware.link(machine)
    n = draw_ranks(rng, (4, 8))
    share = draw_round(rng, 0.7, 0.95, 0.05)                # above 2/3: busbw passes the link even for N = 4
    algbw = share * link.unidir_GBps                  # each GPU sends S once and receives the sum once
    factor = collectives.busbw_factor("all_reduce", n)
    busbw = algbw * factor
    question = (f"An NVLS all-reduce on {n} {gpu} ({rate(link.unidir_Bps)} per GPU, one way): the NVSwitch adds the "
                f"data, so each GPU sends its S bytes once and receives the sum once, both at {num(100 * share)}% of "
                "that rate. What busbw (GB/s) does nccl-tests print?")
    solution = (f"One call takes t = S / ({num(share)} x {num(link.unidir_GBps)} GB/s), so algbw = S/t = "
                f"{num(algbw)} GB/s. nccl-tests multiplies every all-reduce by the ring's factor 2(N-1)/N = "
                f"{num(factor)}: busbw = {num(busbw)} GB/s, {'above' if busbw > link.unidir_GBps else 'below'} "
                f"the link's {num(link.unidir_GBps)}. The switch did the adding a ring does on the GPUs (chapter 8, "
                "why NVLS passes the link).")
    mistakes = (Mistake(1 / factor, "factor F(N) left out", "nccl-tests' busbw is algbw x 2(N-1)/N for every "
                        "all-reduce, NVLS included"),
                Mistake(link.unidir_GBps / busbw, "capped at the link", "a ring's busbw is at most the link; NVLS "
                        "moves S each way, not 2(N-1)/N S, so its busbw can exceed it"))
    return Worked(question, busbw, solution, mistakes, n_ranks=n, params={"link": link.name, "n_ranks": n})


def regime_half_size_logs() -> tuple:
    """The shipped nccl-tests logs with at least 8 rows, where the protocol-aware fit's goals apply."""
    from commlab import nccl

    return tuple(p for p in sorted(nccl.nccl_tests_logs(), key=lambda p: p.name)
                 if sum(r.size_bytes > 0 for r in nccl.parse_log(p.read_text()).rows) >= 8)


def _regime_half_size(rng) -> Worked:
    from commlab import nccl
    from commlab.scorecard.scorecard import measured_points

    paths = regime_half_size_logs()
    path = paths[int(rng.integers(len(paths)))]
    s, t_us = measured_points(nccl.parse_log(path.read_text()))
    last = cost.fit_protocol_model(s, t_us * 1e-6).regimes[-1]
    alpha_us, bw_GBps = float(num(last.alpha_s * 1e6)), float(num(last.bw_GBps))   # as the question shows them
    half_nbytes = alpha_us * 1e-6 * bw_GBps * 1e9                   # S / (alpha + S/B) = B / 2 at S = alpha B
    question = (f"The protocol-aware fit of the real log {path.name} gives its last regime ({last.label}) a fixed "
                f"cost alpha = {num(alpha_us)} us and a bandwidth B = {num(bw_GBps)} GB/s of algbw "
                "(t = alpha + S/B). From what size S does that regime's algbw reach half of B? Give S in MB.")
    solution = (f"algbw = S / (alpha + S/B) = B / 2 when S/B = alpha, so S = alpha x B = {num(alpha_us)} us x "
                f"{num(bw_GBps)} GB/s = {size(half_nbytes)} (Hockney's n_1/2). Below it the fixed cost dominates, "
                "above it the bandwidth.")
    mistakes = (Mistake(1e3, "us x GB/s read as MB", "1e-6 s x 1e9 B/s = 1e3 bytes: us x GB/s is kilobytes"),
                Mistake(0.5, "halved again", "half of B is reached where S/B equals alpha, at S = alpha B"),
                Mistake(9.0, "the 90% point", "90% of B needs S = 9 alpha B; half needs alpha B"))
    return Worked(question, half_nbytes / units.MB, solution, mistakes,
                  params={"log": path.name, "alpha_us": alpha_us, "bw_GBps": bw_GBps})


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
    Exercise("ch08.nvls-busbw", "NVLS's busbw above the link", "GB/s", 0.02,
             "Each GPU moves S each way; nccl-tests still multiplies algbw by 2(N-1)/N (chapter 8, why NVLS passes "
             "the link).", _nvls_busbw),
    Exercise("ch08.regime-half-size", "Where a fitted regime reaches half its bandwidth", "MB", 0.02,
             "For t = alpha + S/B, algbw = S/t is half of B where S/B = alpha (chapter 8, the protocol-aware fit).",
             _regime_half_size),
    Exercise("ch08.debug-log", "Reading a real NCCL_DEBUG=INFO log", "", 0,
             "Look at the 'Channel' lines: 'Channel 00/02' is channel 0 of 2, and each hop says 'via' its "
             "transport (chapter 8, reading NCCL_DEBUG=INFO).", _debug_log),
)
