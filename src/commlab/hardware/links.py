"""The catalogue of links the book discusses, each figure with its source (chapters 01 and 02).

Bandwidths are per GPU (NVLink, NVSwitch, PCIe x16) or per port (InfiniBand 4x, RoCE, Ethernet), in GB/s
(1e9 bytes per second). ``unidir_GBps`` is one direction; ``bidir_GBps`` is both directions added, the figure
vendors print. Hold nccl-tests' busbw against ``unidir_GBps`` (nccl-tests' doc/PERFORMANCE.md).

Latencies are typical one-hop figures for an alpha-beta model, not guarantees: for NVLink and PCIe the
per-hop latency NCCL's own tuner assumes (``hwLat``, LL protocol, in NVIDIA/nccl ``src/graph/tuning.cc``); for
RDMA networks chosen values, :data:`IB_LATENCY_US` and :data:`ROCE_LATENCY_US`, which no primary source gives:
they live in the calibration table (``commlab/data/calibration.csv``, :mod:`commlab.calibration`) with what they
were chosen and checked on (NCCL itself charges both networks the same per hop).
The Ethernet TCP entries' 25 us is a labelled assumption, not a published figure: chapter 02 measures the
kernel-stack share of it on the reader's own machine, and chapter 03 gloo's whole cost.

A PCIe slot's quoted figure is lanes x lane rate / 8; what a transfer gets is less: the line code (128b/130b
from PCIe 3.0, 242-byte flits of 256 from PCIe 6.0), then each packet's header and framing
(:func:`tlp_efficiency`), then flow-control and acknowledgement packets (chapter 01, :func:`pcie_payload_GBps`).

>>> link("nvlink4").unidir_GBps, link("nvlink4").bidir_GBps
(450.0, 900.0)
>>> round(link("nvlink4").unidir_GBps / link("pcie5").unidir_GBps, 1)
7.0
>>> link("ib-ndr").unidir_GBps
50.0
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab import calibration
from commlab.errors import CommlabError
from commlab.units import BITS_PER_BYTE, GB

_PCIE_SRC = ("PCI-SIG: {gts} GT/s per lane, x16, {code} line code, about {raw} GB/s per direction after it, "
             "quoted rounded as {uni} GB/s; latency: NCCL tuning.cc hwLat PCI (LL) 1 us")
_NVLINK_SRC = ("NVIDIA {arch} architecture whitepaper: {per_link} GB/s per link (both directions), "
               "{links} links per GPU; latency: NCCL tuning.cc hwLat NVLink (LL) 0.6 us")
_NVSWITCH_SRC = ("NVIDIA {system}: full mesh through NVSwitch gen {gen}, every GPU at its "
                 "full NVLink {nvl} bandwidth to any other")
#: one InfiniBand hop's alpha: a chosen value (commlab/data/calibration.csv says what it was chosen and checked on)
IB_LATENCY_US = calibration.value("IB_LATENCY_US")
#: one RoCE v2 hop's alpha: a chosen value, as IB_LATENCY_US
ROCE_LATENCY_US = calibration.value("ROCE_LATENCY_US")

_IB_SRC = ("InfiniBand Trade Association roadmap: {lane} Gb/s per lane, 4x port {port} Gb/s; "
           "latency: a chosen {lat:g} us for a small RDMA message (commlab.calibration: IB_LATENCY_US)")


@dataclass(frozen=True)
class Link:
    """One kind of link. Figures per GPU (NVLink/NVSwitch/PCIe) or per port (networks)."""

    name: str
    """Short name used everywhere: "pcie5", "nvlink4", "ib-ndr", ..."""
    title: str
    """Name for people: "NVLink 4 (H100)"."""
    kind: str
    """pcie, nvlink, nvswitch, infiniband, roce or ethernet."""
    unidir_GBps: float
    """One direction, 1e9 bytes/s: what busbw is held against."""
    bidir_GBps: float
    """Both directions added: the figure vendors print."""
    latency_s: float
    """Typical one-hop latency (alpha) for the book's alpha-beta models."""
    source: str
    """Where the figures come from."""
    year: int
    """Year the generation shipped."""
    per_link_bidir_GBps: float | None = None
    """NVLink: one link, both directions."""
    links_per_gpu: int | None = None
    """NVLink: links per GPU."""
    lane_Gbps: float | None = None
    """Networks and PCIe: per-lane signalling rate in Gb/s."""
    lanes: int | None = None
    """Lanes per port (4x InfiniBand) or per slot (x16 PCIe)."""
    line_code: str | None = None
    """PCIe: how bits go on the wire ("128b/130b", or flits from PCIe 6.0)."""
    line_code_efficiency: float | None = None
    """PCIe: the share of the line rate the line code leaves for packets (128/130, 242/256)."""

    def __post_init__(self) -> None:
        if self.unidir_GBps <= 0 or abs(self.bidir_GBps - 2 * self.unidir_GBps) > 1e-9:
            raise CommlabError(
                f"link {self.name!r}: bidir_GBps ({self.bidir_GBps}) must be twice unidir_GBps ({self.unidir_GBps})")

    @property
    def unidir_Bps(self) -> float:
        """One direction in bytes per second."""
        return self.unidir_GBps * GB

    @property
    def unidir_Gbps(self) -> float:
        """One direction in gigabits per second (how networks are sold)."""
        return self.unidir_GBps * BITS_PER_BYTE


#: PCIe line codes: 128b/130b from PCIe 3.0 (2 sync bits per 128); PCIe 6.0 sends 256-byte flits of which 242
#: bytes carry packets (236 TLP + 6 DLLP; the rest is CRC and FEC). PCI-SIG base specifications 3.0 and 6.0.
_LINE_CODES = {3: ("128b/130b", 128 / 130), 4: ("128b/130b", 128 / 130), 5: ("128b/130b", 128 / 130),
               6: ("256-byte flits, 242 bytes of packets", 242 / 256)}


def _pcie(gen: int, gts: int, raw: float, uni: float, year: int) -> Link:
    code, efficiency = _LINE_CODES[gen]
    return Link(f"pcie{gen}", f"PCIe {gen}.0 x16", "pcie", uni, 2 * uni, 1.0e-6,
                _PCIE_SRC.format(gts=gts, raw=raw, uni=uni, code=code), year, lane_Gbps=float(gts), lanes=16,
                line_code=code, line_code_efficiency=efficiency)


def _nvlink(gen: int, arch: str, gpu: str, per_link: float, links: int, year: int) -> Link:
    uni = per_link * links / 2
    return Link(f"nvlink{gen}", f"NVLink {gen} ({gpu})", "nvlink", uni, 2 * uni, 0.6e-6,
                _NVLINK_SRC.format(arch=arch, per_link=per_link, links=links), year,
                per_link_bidir_GBps=per_link, links_per_gpu=links)


def _nvswitch(gen: int, nvlink: Link, system: str, year: int) -> Link:
    return Link(f"nvswitch{gen}", f"NVSwitch gen {gen} ({system})", "nvswitch", nvlink.unidir_GBps,
                nvlink.bidir_GBps, nvlink.latency_s,
                _NVSWITCH_SRC.format(system=system, gen=gen, nvl=nvlink.title), year,
                per_link_bidir_GBps=nvlink.per_link_bidir_GBps, links_per_gpu=nvlink.links_per_gpu)


def _ib(name: str, title: str, lane: int, year: int) -> Link:
    uni = 4 * lane / BITS_PER_BYTE
    return Link(name, title, "infiniband", uni, 2 * uni, IB_LATENCY_US * 1e-6,
                _IB_SRC.format(lane=lane, port=4 * lane, lat=IB_LATENCY_US),
                year, lane_Gbps=float(lane), lanes=4)


def _roce(gbps: int, year: int, nic: str) -> Link:
    uni = gbps / BITS_PER_BYTE
    return Link(f"roce-{gbps}", f"RoCE v2 {gbps} Gb/s", "roce", uni, 2 * uni, ROCE_LATENCY_US * 1e-6,
                f"Ethernet {gbps} Gb/s port with RDMA over UDP/IP (e.g. {nic}); latency: a chosen "
                f"{ROCE_LATENCY_US:g} us (commlab.calibration: ROCE_LATENCY_US)", year)


def _eth(gbps: int) -> Link:
    uni = gbps / BITS_PER_BYTE
    return Link(f"eth-{gbps}-tcp", f"Ethernet {gbps} Gb/s, TCP", "ethernet", uni, 2 * uni, 25e-6,
                f"{gbps} Gb/s line rate (protocol overhead lowers what TCP reaches); latency: an assumption of "
                "this book (25 us for a small message through the kernel TCP stacks of two hosts), not a "
                "published figure: chapter 02 measures the kernel-stack share on the reader's machine", 2015)


def _catalogue() -> tuple[Link, ...]:
    nv2 = _nvlink(2, "Volta V100", "V100", 50.0, 6, 2017)
    nv3 = _nvlink(3, "Ampere A100", "A100", 50.0, 12, 2020)
    nv4 = _nvlink(4, "Hopper H100", "H100", 50.0, 18, 2022)
    nv5 = _nvlink(5, "Blackwell B200", "B200", 100.0, 18, 2024)
    return (
        _pcie(3, 8, 15.75, 16.0, 2010), _pcie(4, 16, 31.5, 32.0, 2017),
        _pcie(5, 32, 63.0, 64.0, 2019), _pcie(6, 64, 121.0, 128.0, 2022),
        nv2, nv3, nv4, nv5,
        _nvswitch(1, nv2, "DGX-2, 16x V100", 2018), _nvswitch(2, nv3, "DGX A100, 8x A100", 2020),
        _nvswitch(3, nv4, "DGX H100, 8x H100", 2022), _nvswitch(4, nv5, "DGX B200, 8x B200", 2024),
        _ib("ib-hdr", "InfiniBand HDR 4x", 50, 2018), _ib("ib-ndr", "InfiniBand NDR 4x", 100, 2021),
        _ib("ib-xdr", "InfiniBand XDR 4x", 200, 2024),
        _roce(100, 2016, "ConnectX-4"), _roce(200, 2019, "ConnectX-6"), _roce(400, 2021, "ConnectX-7"),
        _roce(800, 2024, "ConnectX-8 SuperNIC"),
        _eth(25), _eth(100),
    )


def links() -> tuple[Link, ...]:
    """The whole catalogue in book order: PCIe, NVLink, NVSwitch, InfiniBand, RoCE, Ethernet."""
    return _catalogue()


def names() -> tuple[str, ...]:
    """The short names, in book order."""
    return tuple(item.name for item in _catalogue())


def link(name: str | Link) -> Link:
    """Look a link up by its short name (case and spaces ignored); an unknown name lists the known ones.

    >>> link("NVLink4").title
    'NVLink 4 (H100)'
    >>> link("nvlink9")
    Traceback (most recent call last):
    ...
    commlab.errors.CommlabError: unknown link 'nvlink9'; known links: pcie3, pcie4, pcie5, pcie6, nvlink2, \
nvlink3, nvlink4, nvlink5, nvswitch1, nvswitch2, nvswitch3, nvswitch4, ib-hdr, ib-ndr, ib-xdr, roce-100, \
roce-200, roce-400, roce-800, eth-25-tcp, eth-100-tcp
    """
    if isinstance(name, Link):
        return name
    key = str(name).strip().lower().replace(" ", "").replace("_", "-")
    for item in _catalogue():
        if item.name == key:
            return item
    raise CommlabError(f"unknown link {name!r}; known links: {', '.join(names())}")


def bandwidth_ratio(link_a: str | Link, link_b: str | Link) -> float:
    """How many times faster ``link_a`` is than ``link_b``, one direction each (chapter 01's ratio explorer).

    >>> bandwidth_ratio("nvlink4", "pcie5"), bandwidth_ratio("nvlink5", "pcie4")
    (7.03125, 28.125)
    """
    return link(link_a).unidir_GBps / link(link_b).unidir_GBps


def tlp_efficiency(max_payload_nbytes: int = 256, overhead_nbytes: int = 20) -> float:
    """Share of a PCIe link's packet bytes that are data: payload / (payload + per-packet overhead).

    A transaction-layer packet (TLP) carries at most the negotiated maximum payload size (128 to 4096 bytes,
    256 on most hosts) plus 20-24 bytes: a 12- or 16-byte header, a 2-byte sequence number, a 4-byte LCRC
    and framing (Intel, "AN 456: PCI Express High Performance Reference Design", Throughput for Posted
    Writes: 256 / (256 + 20) = 92 %). Flow-control and acknowledgement packets (DLLPs) take a few per cent
    more on a loaded link, which this figure leaves out.

    >>> round(tlp_efficiency(256), 3), round(tlp_efficiency(128, 24), 3)
    (0.928, 0.842)
    """
    if not isinstance(max_payload_nbytes, int) or max_payload_nbytes <= 0:
        raise CommlabError(f"max_payload_nbytes must be a whole number of bytes > 0, got {max_payload_nbytes!r}")
    if not isinstance(overhead_nbytes, int) or overhead_nbytes < 0:
        raise CommlabError(f"overhead_nbytes must be a whole number of bytes >= 0, got {overhead_nbytes!r}")
    return max_payload_nbytes / (max_payload_nbytes + overhead_nbytes)


def pcie_payload_GBps(name: str | Link, max_payload_nbytes: int = 256, overhead_nbytes: int = 20) -> float:
    """Data a PCIe x16 slot can carry per direction, before flow control: lanes x GT/s / 8 x line code x TLP.

    >>> round(pcie_payload_GBps("pcie5"), 1), link("pcie5").unidir_GBps
    (58.4, 64.0)
    """
    item = link(name)
    if item.kind != "pcie" or item.line_code_efficiency is None or item.lane_Gbps is None or item.lanes is None:
        raise CommlabError(f"pcie_payload_GBps needs a PCIe link (pcie3 ... pcie6), got {item.name!r} ({item.kind})")
    raw_GBps = item.lane_Gbps * item.lanes / BITS_PER_BYTE
    return raw_GBps * item.line_code_efficiency * tlp_efficiency(max_payload_nbytes, overhead_nbytes)
