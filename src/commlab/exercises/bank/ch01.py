"""Chapter 1, NVLink and NVSwitch: link bandwidths, one vs both directions, meshes vs switches."""
from __future__ import annotations

import itertools

from commlab import hardware, units
from commlab.exercises.bank.common import (draw_round, duration, num, nvlink_figures, pick, rate, size,
                                           used_bidirectional)
from commlab.exercises.model import Exercise, Mistake, Worked

_FAST = ("nvlink3", "nvlink4", "nvlink5")
_PCIE = ("pcie4", "pcie5", "pcie6")


def transfer_time_s(nbytes: float, link: hardware.Link) -> float:
    """Bandwidth term of moving ``nbytes`` one way over ``link``: t = S / B_unidir (chapter 1)."""
    return nbytes / link.unidir_Bps


def _move_time(rng) -> Worked:
    link = hardware.link(pick(rng, _FAST + _PCIE))
    binary = bool(rng.integers(2))
    amount = draw_round(rng, 2, 64, 1)
    nbytes = amount * (units.GiB if binary else units.GB)
    t_s = transfer_time_s(nbytes, link)
    shown = f"{num(amount)} {'GiB' if binary else 'GB'}"
    mistakes = [used_bidirectional()]
    if binary:
        mistakes.append(Mistake(units.GB / units.GiB, "GiB read as GB",
                                "1 GiB is 1024^3 = 1.074e9 bytes, not 1e9"))
    question = (f"How long does it take to move a {shown} tensor from one GPU to another over {link.title}, "
                f"counting the bandwidth term only? Give the time in ms.")
    solution = (f"One transfer runs in one direction: B = {rate(link.unidir_Bps)} ({link.title}, one way; "
                f"{rate(2 * link.unidir_Bps)} is both directions added).\n"
                f"S = {shown} = {nbytes:.6g} bytes.\n"
                f"t = S / B = {nbytes:.6g} / {link.unidir_Bps:.6g} = {duration(t_s)}.")
    return Worked(question, t_s * 1e3, solution, tuple(mistakes), params={"link": link.name, "nbytes": nbytes})


def _link_ratio(rng) -> Worked:
    fast = hardware.link(pick(rng, _FAST))
    slow = hardware.link(pick(rng, _PCIE))
    ratio = fast.unidir_GBps / slow.unidir_GBps
    question = (f"{fast.title} is printed as {rate(fast.bidir_GBps * units.GB)} per GPU and {slow.title} as "
                f"{rate(slow.unidir_GBps * units.GB)} per direction. How many times faster is {fast.title} than "
                f"{slow.title} for a transfer in one direction?")
    solution = (f"Compare like with like: one direction each. {fast.title}: {rate(fast.unidir_Bps)} one way "
                f"(half of {rate(fast.bidir_GBps * units.GB)}); {slow.title}: {rate(slow.unidir_Bps)} one way.\n"
                f"ratio = {num(fast.unidir_GBps)} / {num(slow.unidir_GBps)} = {num(ratio)}.")
    mistakes = (Mistake(2.0, "bidirectional vs unidirectional",
                        "the NVLink figure adds both directions; the PCIe one is one direction"),)
    return Worked(question, ratio, solution, mistakes, params={"fast": fast.name, "slow": slow.name})


def _exchange_time(rng) -> Worked:
    link = hardware.link(pick(rng, _FAST + _PCIE))
    nbytes = draw_round(rng, 1, 40, 1) * units.GB
    t_s = transfer_time_s(nbytes, link)
    question = (f"Two GPUs joined by {link.title} swap tensors: each sends {size(nbytes)} to the other, both at "
                f"the same time. How long does the swap take (bandwidth term only)? Give the time in ms.")
    solution = (f"The link carries both directions at once, each at the one-direction rate "
                f"{rate(link.unidir_Bps)}. Each GPU's {size(nbytes)} takes S / B = {duration(t_s)}, and the two "
                f"transfers overlap, so the swap takes {duration(t_s)}.")
    mistakes = (Mistake(2.0, "directions taken in turn",
                        "a full-duplex link runs both directions at once; the swap is not two transfers in a row"),
                used_bidirectional())
    return Worked(question, t_s * 1e3, solution, mistakes, params={"link": link.name, "nbytes": nbytes})


def mesh_links(n_gpus: int) -> int:
    """Links of a direct full mesh: one per unordered pair of GPUs, N(N-1)/2 (chapter 1)."""
    return sum(1 for _ in itertools.combinations(range(n_gpus), 2))


def _mesh_links(rng) -> Worked:
    n = int(rng.integers(3, 17))
    links = mesh_links(n)
    question = (f"Wire {n} GPUs as a direct mesh: a dedicated NVLink connection between every pair of GPUs. "
                f"How many connections are needed? (An NVSwitch instead needs one connection per GPU: {n}.)")
    solution = (f"Each of the {n} GPUs connects to the {n - 1} others; each connection joins two GPUs, so it is "
                f"counted twice: N(N-1)/2 = {n}*{n - 1}/2 = {links}. It grows as N^2, which is why 8-GPU "
                "servers use NVSwitch.")
    mistakes = (Mistake(2.0, "each pair counted twice", "a link between GPU a and GPU b is the same as b-a"),
                Mistake(n / (n - 1), "a GPU counted as its own neighbour", "each GPU has N-1 partners, not N"))
    return Worked(question, links, solution, mistakes, params={"n_gpus": n})


def _nvlink_per_gpu(rng) -> Worked:
    link = hardware.link(pick(rng, ("nvlink2", "nvlink3", "nvlink4", "nvlink5")))
    per_link, n_links = nvlink_figures(link)
    question = (f"{link.title} gives each GPU {n_links} links of {num(per_link)} GB/s each, counting both "
                f"directions. What is a GPU's total NVLink bandwidth in one direction, in GB/s?")
    solution = (f"Total, both directions: {n_links} x {num(per_link)} = {num(link.bidir_GBps)} GB/s. One "
                f"direction is half: {num(link.unidir_GBps)} GB/s (the figure busbw is held against).")
    mistakes = (Mistake(2.0, "gave both directions", "the question asks for one direction: half the total"),)
    return Worked(question, link.unidir_GBps, solution, mistakes, params={"link": link.name})


EXERCISES = (
    Exercise("ch01.move-time", "Time to move a tensor over a link", "ms", 0.02,
             "t = S / B with B the one-direction bandwidth of the link (chapter 1's tables); watch GB vs GiB.",
             _move_time),
    Exercise("ch01.link-ratio", "NVLink vs PCIe, one direction", "", 0.02,
             "Put both links in the same terms (one direction) before dividing (chapter 1, NVLink vs PCIe).",
             _link_ratio),
    Exercise("ch01.exchange-time", "Two GPUs swap tensors", "ms", 0.02,
             "Links are full duplex: each direction runs at the one-direction bandwidth at the same time "
             "(chapter 1).", _exchange_time),
    Exercise("ch01.mesh-links", "Links of a direct mesh", "", 0,
             "Count unordered pairs of GPUs: N(N-1)/2 (chapter 1, NVSwitch).", _mesh_links),
    Exercise("ch01.nvlink-per-gpu", "NVLink bandwidth per GPU", "GB/s", 0.02,
             "Per-GPU = per-link x links; vendors quote both directions, one direction is half (chapter 1).",
             _nvlink_per_gpu),
)
