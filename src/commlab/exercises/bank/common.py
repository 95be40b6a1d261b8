"""Helpers shared by the chapters' exercise banks: drawing parameters and writing numbers."""
from __future__ import annotations

import numpy as np

from commlab import units
from commlab.errors import CommlabError
from commlab.exercises.model import Mistake
from commlab.hardware import Link


def pick(rng: np.random.Generator, choices):
    """One element of a sequence, drawn with ``rng``."""
    return choices[int(rng.integers(len(choices)))]


def draw_ranks(rng: np.random.Generator, choices=(4, 6, 8, 12, 16, 32)) -> int:
    """A number of ranks; the default choices avoid N = 2, where the ring factor 2(N-1)/N is 1."""
    return int(pick(rng, choices))


def draw_round(rng: np.random.Generator, low: float, high: float, step: float) -> float:
    """A number from low to high (both included) on a grid of ``step``: easy to read in a question."""
    n_steps = int(round((high - low) / step))
    return round(low + step * int(rng.integers(n_steps + 1)), 10)


def size(nbytes: float) -> str:
    """A size as a reader would write it: "24.5 GB" in decimal units, "4 KiB" when it is a whole number of KiB
    and not a round decimal size."""
    whole = float(nbytes).is_integer()
    binary = nbytes >= 1024 and whole and int(nbytes) % 1024 == 0 and int(nbytes) % 1000 != 0
    return units.format_nbytes(nbytes, binary=binary, digits=4)


def rate(bw_Bps: float) -> str:
    """A bandwidth: "450 GB/s"."""
    return units.format_bandwidth(bw_Bps, digits=4)


def duration(t_s: float) -> str:
    """A time: "54.44 ms"."""
    return units.format_time(t_s, digits=4)


def as_shown_s(t_s: float) -> float:
    """A time rounded as :func:`duration` prints it, so that answers follow from the question's own text."""
    return units.parse_time_s(duration(t_s))


def num(value: float, digits: int = 4) -> str:
    """A plain number with ``digits`` significant digits: "1.75"."""
    return f"{value:.{digits}g}"


def used_bidirectional(what: str = "bandwidth") -> Mistake:
    """The answer when the bidirectional figure replaces the one-direction one (a time halves)."""
    return Mistake(0.5, "used the bidirectional figure",
                   f"one transfer runs at the one-direction {what}; the vendor's headline adds both directions")


def ratio_mistake(wrong: float, right: float, name: str, explain: str) -> Mistake:
    """A mistake whose factor is the wrong formula's value over the right one, both computed by commlab."""
    return Mistake(float(wrong) / float(right), name, explain)


def nvlink_figures(link: Link) -> tuple[float, int]:
    """(per_link_bidir_GBps, links_per_gpu) of an NVLink generation; CommlabError for a link without them."""
    if link.per_link_bidir_GBps is None or link.links_per_gpu is None:
        raise CommlabError(f"{link.name} is not an NVLink generation: it has no per-link figures")
    return link.per_link_bidir_GBps, link.links_per_gpu


def lane_figures(link: Link) -> tuple[float, int]:
    """(lane_Gbps, lanes) of a network port or a PCIe slot; CommlabError for a link without them."""
    if link.lane_Gbps is None or link.lanes is None:
        raise CommlabError(f"{link.name} has no lane figures (lane_Gbps, lanes)")
    return link.lane_Gbps, link.lanes


#: networks a ring of single-GPU servers crosses, each GPU on its own card: the cluster preset whose card it is
ONE_GPU_SERVER_PRESETS = {"ib-ndr": "dgx-h100-ndr", "roce-400": "h100-16k-roce"}


def is_network(link: Link) -> bool:
    """InfiniBand, RoCE or Ethernet: a link between servers."""
    return link.kind in ("infiniband", "roce", "ethernet")


def ring_link_Bps(link: Link, n_ranks: int) -> float:
    """A ring rank's one-way B over ``link``: the link itself inside a server; across servers of one GPU each, that
    GPU's card as NCCL drives it in the book's cluster model (:mod:`commlab.cluster`), not the card's line rate
    (chapter 5: never one network link per GPU of a multi-GPU server)."""
    if not is_network(link):
        return link.unidir_Bps
    from commlab.cluster import Shape, preset          # the cluster layer, loaded only for a network
    from commlab.cluster.groups import group_view
    if link.name not in ONE_GPU_SERVER_PRESETS:
        raise CommlabError(f"no single-GPU-server cluster for {link.name!r}; one of {sorted(ONE_GPU_SERVER_PRESETS)}")
    return Shape.of(group_view(preset(ONE_GPU_SERVER_PRESETS[link.name]), 1), n_ranks).network_GBps * 1e9


def ring_where(link: Link, n_ranks: int) -> str:
    """Where a ring of ``n_ranks`` runs, in words: GPUs on a link, or single-GPU servers each on its own card."""
    if is_network(link):
        return f"{n_ranks} servers of one GPU each, each on its own {link.title} card"
    return f"{n_ranks} GPUs connected by {link.title}"
