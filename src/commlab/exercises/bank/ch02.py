"""Chapter 2, InfiniBand and RoCE: bits vs bytes, port generations, the alpha-beta model of one message."""
from __future__ import annotations

from commlab import cost, hardware, units
from commlab.exercises.bank.common import duration, lane_figures, num, pick, rate, ratio_mistake, size
from commlab.exercises.model import Exercise, Mistake, Worked

_NETWORKS = ("ib-hdr", "ib-ndr", "ib-xdr", "roce-100", "roce-200", "roce-400", "eth-25-tcp", "eth-100-tcp")
_ANY = ("nvlink4", "pcie5") + _NETWORKS


def alpha_s(link: hardware.Link) -> float:
    """A link's alpha as chapter 2 takes it: for an RDMA network (InfiniBand, RoCE) NCCL's per-hop network latency
    (tuning.cc hwLat, NET row, Ring/LL), the same for both, since no datasheet gives a message's end-to-end
    latency; for the others the catalogue's (NCCL's NVLink and PCIe hops, the book's TCP assumption)."""
    from commlab.tuner import nccl_constants

    if link.kind in ("infiniband", "roce"):
        return nccl_constants.HW_LAT_US[("net", "Ring", "LL")] * 1e-6
    return link.latency_s


def message_time_s(nbytes: float, link: hardware.Link) -> float:
    """One message on a link: t = alpha + S / B (alpha-beta model, chapter 2), via commlab.cost."""
    return float(cost.p2p_time_s(nbytes, alpha_s(link), link.unidir_Bps))


def _gbit_to_gbyte(rng) -> Worked:
    gbit = float(pick(rng, (25, 50, 100, 200, 400, 800, 1600, 3200)))
    text = f"{num(gbit / 1000)} Tb/s" if gbit >= 1000 else f"{num(gbit)} Gb/s"
    bw_GBps = units.parse_bandwidth_Bps(text) / units.GB
    question = f"A network port is sold as {text}. How many gigabytes per second (GB/s) is that, one direction?"
    in_gbit = f" = {num(gbit)} Gb/s" if gbit >= 1000 else ""
    solution = (f"Networks are sold in bits per second; a byte is 8 bits. {text}{in_gbit}; "
                f"{num(gbit)} / 8 = {num(bw_GBps)} GB/s.")
    mistakes = (Mistake(units.BITS_PER_BYTE, "bits taken as bytes", "divide the Gb/s figure by 8 for GB/s"),)
    return Worked(question, bw_GBps, solution, mistakes, params={"Gbps": gbit})


def _ib_port(rng) -> Worked:
    link = hardware.link(pick(rng, ("ib-hdr", "ib-ndr", "ib-xdr")))
    lane_Gbps, lanes = lane_figures(link)
    question = (f"{link.title}: a 4x port has {lanes} lanes of {num(lane_Gbps)} Gb/s each. What is "
                f"the port's bandwidth in one direction, in GB/s?")
    solution = (f"{lanes} x {num(lane_Gbps)} Gb/s = {num(lanes * lane_Gbps)} Gb/s; divided by "
                f"8 bits per byte: {num(link.unidir_GBps)} GB/s per direction.")
    mistakes = (Mistake(1 / lanes, "one lane instead of the port", f"a 4x port bonds {lanes} lanes"),)
    return Worked(question, link.unidir_GBps, solution, mistakes, params={"link": link.name})


def _alpha_beta(rng) -> Worked:
    link = hardware.link(pick(rng, _ANY))
    half_nbytes = alpha_s(link) * link.unidir_Bps
    nbytes = float(round(half_nbytes * float(pick(rng, (0.25, 0.5, 1, 2, 4, 8))), -2))
    t_s = message_time_s(nbytes, link)
    alpha_us = alpha_s(link) * 1e6
    question = (f"One message of {size(nbytes)} crosses {link.title}: latency alpha = {num(alpha_us)} us, "
                f"bandwidth B = {rate(link.unidir_Bps)} one way. With t = alpha + S/B, how long does it take, "
                "in us?")
    solution = (f"S/B = {nbytes:.6g} / {link.unidir_Bps:.6g} s = {duration(nbytes / link.unidir_Bps)}; "
                f"t = {num(alpha_us)} us + {duration(nbytes / link.unidir_Bps)} = {duration(t_s)}.")
    mistakes = (
        ratio_mistake(nbytes / link.unidir_Bps, t_s, "latency left out", "t = alpha + S/B has two terms"),
        ratio_mistake(alpha_s(link), t_s, "bandwidth term left out", "t = alpha + S/B has two terms"),
        ratio_mistake(message_time_s(nbytes * units.BITS_PER_BYTE, link), t_s, "bits vs bytes",
                      "B is in bytes per second; the size is in bytes"),
    )
    return Worked(question, t_s * 1e6, solution, mistakes, params={"link": link.name, "nbytes": nbytes})


def _half_size(rng) -> Worked:
    link = hardware.link(pick(rng, _ANY))
    alpha_us = alpha_s(link) * 1e6
    nbytes = alpha_s(link) * link.unidir_Bps  # alpha = S/B
    question = (f"On {link.title} (latency alpha = {num(alpha_us)} us, bandwidth B = {rate(link.unidir_Bps)} one "
                "way), at what message size do the latency term and the bandwidth term of t = alpha + S/B take "
                "equal time? Give the size in KB.")
    solution = (f"alpha = S/B gives S = alpha * B = {num(alpha_us)}e-6 s x {link.unidir_Bps:.6g} B/s = "
                f"{size(nbytes)}. Smaller messages are latency-bound, larger ones bandwidth-bound.")
    mistakes = (ratio_mistake(alpha_s(link) * link.bidir_GBps * units.GB, nbytes, "used the bidirectional figure",
                              "one message travels one way: use the one-direction bandwidth"),
                ratio_mistake(alpha_s(link) * link.unidir_Gbps * units.GB, nbytes, "bits vs bytes",
                              "B in bytes per second gives S in bytes"))
    return Worked(question, nbytes / units.KB, solution, mistakes, params={"link": link.name})


def _tcp_vs_rdma(rng) -> Worked:
    tcp = hardware.link(pick(rng, ("eth-25-tcp", "eth-100-tcp")))
    rdma = hardware.link(pick(rng, ("ib-hdr", "ib-ndr", "roce-100", "roce-200")))
    nbytes = float(pick(rng, (8, 64, 256, 1024)))
    ratio = message_time_s(nbytes, tcp) / message_time_s(nbytes, rdma)
    question = (f"A {size(nbytes)} message (a scalar loss, say) goes over {tcp.title} (latency "
                f"{num(alpha_s(tcp) * 1e6)} us, {rate(tcp.unidir_Bps)}) or over {rdma.title} (latency "
                f"{num(alpha_s(rdma) * 1e6)} us, {rate(rdma.unidir_Bps)}). How many times longer does it take "
                "over TCP, with t = alpha + S/B?")
    solution = (f"TCP: {duration(message_time_s(nbytes, tcp))}; RDMA: {duration(message_time_s(nbytes, rdma))}. "
                f"Ratio {num(ratio)}: for small messages latency is everything, and RDMA's kernel bypass removes "
                "most of it.")
    mistakes = (ratio_mistake(1 / ratio, ratio, "ratio upside down", "divide the TCP time by the RDMA time"),)
    return Worked(question, ratio, solution, mistakes, params={"tcp": tcp.name, "rdma": rdma.name, "nbytes": nbytes})


EXERCISES = (
    Exercise("ch02.gbit-to-gbyte", "Gb/s to GB/s", "GB/s", 0.02,
             "Networks are sold in bits per second; 1 byte = 8 bits (chapter 2, Gb/s vs GB/s).", _gbit_to_gbyte),
    Exercise("ch02.ib-port", "InfiniBand port bandwidth", "GB/s", 0.02,
             "Port rate = lanes x lane rate, in bits; then bits to bytes (chapter 2, HDR/NDR/XDR table).", _ib_port),
    Exercise("ch02.alpha-beta", "Time of one message", "us", 0.02,
             "t = alpha + S/B, with B in bytes per second, one direction (chapter 2, the alpha-beta model).",
             _alpha_beta),
    Exercise("ch02.half-size", "Where latency equals bandwidth time", "KB", 0.02,
             "Set alpha = S/B and solve for S (chapter 2, latency-bound vs bandwidth-bound).", _half_size),
    Exercise("ch02.tcp-vs-rdma", "TCP vs RDMA for a small message", "", 0.03,
             "Compute t = alpha + S/B on both links; for tiny messages alpha dominates (chapter 2, RDMA).",
             _tcp_vs_rdma),
)
