"""NCCL's own cost model, simplified: which (algorithm, protocol) pair NCCL would pick for a size.

NCCL does not measure before it chooses: at start-up ``ncclTopoTuneModel`` (``src/graph/tuning.cc``) fills a
table of latencies (us) and bandwidths (GB/s) per collective, algorithm and protocol, and every call takes the
pair with the least predicted time (chapter 06)::

    time_us(algo, proto) = lat_us * n_ops + nbytes / (1000 * algbw_GBps)

This module writes that model down with one bus bandwidth for every pair: the teaching version of chapter 06.
Its constants are NCCL's, read once in :mod:`commlab.tuner.nccl_constants` (``BASE_LAT_US`` and ``HW_LAT_US``
here are those tables, of which this model reads the Tree and Ring rows); NCCL_ALGO / NCCL_PROTO lists and
collective names are read by :mod:`commlab.tuner.settings`. The complete model, with the channel search, the
Tree factor and per-channel caps, the LL/LL128 caps per architecture, NVLS and the network, is
:func:`commlab.tuner.predict.predict` on a :class:`commlab.tuner.machine.Machine`.

What it keeps:

* base latency per (algorithm, protocol) and hardware latency per hop for NVLink, PCI and the network;
* ring latency ``base + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat`` with
  ``nsteps = 2(n-1)`` for all_reduce and ``n-1`` for all_gather / reduce_scatter, ``inter_steps`` the same
  with the number of nodes;
* tree latency ``base + 2 * ((ranks_per_node - 1) * intra_lat + floor(log2(n_nodes)) * inter_lat)``;
* protocol bandwidth factors LL 0.5 (a flag travels with every 8 bytes), LL128 0.92 (120 of 128 bytes are
  payload), Simple 1;
* bus bandwidth to algorithm bandwidth: Ring ``n / nsteps``, Tree 1/2.

What it leaves out, so read its numbers as "the shape of NCCL's choice", not as NCCL's exact thresholds:
the bus bandwidth NCCL's topology search finds (channels x per-channel speed: here one number, ``bw_GBps``),
the per-architecture caps (LL and LL128 maximum bandwidth per channel, tree bandwidth caps), the tree
correction factors for medium sizes, the ring "plateau" factor across nodes, the 1.8x LL intra-node latency
across nodes, LL128 being enabled only on some GPUs and links, NVLS/CollNet/PAT, and tuner plugins. Only
all_reduce has a Tree algorithm here (NCCL added others later).

>>> round(float(nccl_time_us("all_reduce", "Ring", "Simple", 1_000_000, 8, bw_GBps=100)), 3)
73.5
>>> nccl_choose("all_reduce", 1024, 8).pair, nccl_choose("all_reduce", 2**30, 8).pair
(('Ring', 'LL'), ('Ring', 'Simple'))
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from commlab.hardware.gpus import GPUS
from commlab.errors import CommlabError, check_choice
from commlab.hardware import link
from commlab.tuner import nccl_constants as K
from commlab.tuner.nccl_constants import BASE_LAT_US, HW_LAT_US
from commlab.tuner.settings import canonical_name, enabled_names, log2i, ring_steps, tuned_op

ALGOS = ("Tree", "Ring")          # NCCL's loop order: on a tie the first pair wins
PROTOS = K.PROTO_NAMES
SIMPLIFIED_OPS = ("all_reduce", "all_gather", "reduce_scatter")
TRANSPORTS = ("nvlink", "pci")    # inside a node; between nodes it is always the network ("net")

#: fraction of the bytes on the wire that are payload (tuning.cc:327-337)
PROTO_BW_FACTOR = MappingProxyType({"LL": K.LL_BW_FACTOR, "LL128": K.LL128_BW_FACTOR, "Simple": 1.0})
#: the teaching default: an H100 SXM node (its NVLink links at NCCL's per-link figure) and, across nodes, one
#: 400 Gb/s NIC per GPU (DGX H100 style)
DEFAULT_GPU = "h100"
DEFAULT_NIC = "ib-ndr"


_MODEL = "NCCL's simplified model"


def _check_ranks(n_ranks: int, n_nodes: int) -> None:
    if not isinstance(n_ranks, int) or isinstance(n_ranks, bool) or n_ranks < 2:
        raise CommlabError(f"n_ranks must be a whole number >= 2 for NCCL's model, got {n_ranks!r}")
    if not isinstance(n_nodes, int) or isinstance(n_nodes, bool) or n_nodes < 1 or n_ranks % n_nodes:
        raise CommlabError(f"n_nodes must be a whole number >= 1 that divides n_ranks={n_ranks}, got {n_nodes!r}")


def nccl_latency_us(op: str, algo: str, proto: str, n_ranks: int, n_nodes: int = 1,
                    transport: str = "nvlink") -> float:
    """The latency term NCCL predicts, in us.

    Ring: ``baseLat + (nsteps - inter_steps) * intraLat + inter_steps * interLat`` (nsteps over ranks,
    inter_steps over nodes). Tree: ``baseLat + 2 * ((n_ranks/n_nodes - 1) * intraLat + log2(n_nodes) * interLat)``
    with NCCL's integer log2. intraLat is the NVLink or PCI hop latency, interLat the network's.

    >>> round(nccl_latency_us("all_reduce", "Ring", "Simple", 8), 6)     # 8.4 + 14 * 3.4
    56.0
    """
    op, algo = tuned_op(op, SIMPLIFIED_OPS, _MODEL), canonical_name(algo, ALGOS, "algorithm")
    proto = canonical_name(proto, PROTOS, "protocol")
    _check_ranks(n_ranks, n_nodes)
    check_choice("intra-node transport", transport, TRANSPORTS)
    if algo == "Tree" and op != "all_reduce":
        raise CommlabError(f"NCCL's Tree algorithm is modelled for all_reduce only, got op {op!r}")
    intra_us, inter_us = HW_LAT_US[(transport, algo, proto)], HW_LAT_US[("net", algo, proto)]
    base_us = BASE_LAT_US[(algo, proto)]
    if algo == "Ring":
        n_steps, inter_steps = ring_steps(op, n_ranks), ring_steps(op, n_nodes)
        return base_us + (n_steps - inter_steps) * intra_us + inter_steps * inter_us
    return base_us + 2 * ((n_ranks // n_nodes - 1) * intra_us + log2i(n_nodes) * inter_us)


def default_bus_bw_GBps(transport: str = "nvlink", n_ranks: int = 8, n_nodes: int = 1) -> float:
    """The bus bandwidth used when none is given, GB/s (an assumption, not NCCL's topology search).

    Inside a node: H100 SXM's 18 NVLink links at NCCL's 20.6 GB/s each (370.8 GB/s; close to the
    ~370 GB/s busbw measured with Ring on 4x H100, the shipped log 03), or NCCL's 12 GB/s for PCIe Gen3. Across
    nodes: the smaller of that and one 400 Gb/s (50 GB/s) NIC per GPU of a node.
    """
    check_choice("intra-node transport", transport, TRANSPORTS)
    _check_ranks(n_ranks, n_nodes)
    gpu = GPUS[DEFAULT_GPU]
    intra = (gpu.nvlinks * K.nvlink_bw_GBps(gpu.compute_capability) if transport == "nvlink"
             else K.PCIE_X16_BW_GBPS[3])
    if n_nodes == 1:
        return intra
    return min(intra, link(DEFAULT_NIC).unidir_GBps * (n_ranks // n_nodes))


def nccl_algbw_GBps(op: str, algo: str, proto: str, n_ranks: int, bw_GBps: float) -> float:
    """Algorithm bandwidth NCCL predicts: bus bandwidth x protocol factor x (Ring: n/nsteps, Tree: 1/2).

    >>> nccl_algbw_GBps("all_reduce", "Ring", "Simple", 8, 140.0)          # 140 * 8 / 14
    80.0
    """
    op, algo = tuned_op(op, SIMPLIFIED_OPS, _MODEL), canonical_name(algo, ALGOS, "algorithm")
    proto = canonical_name(proto, PROTOS, "protocol")
    _check_ranks(n_ranks, 1)
    if isinstance(bw_GBps, bool) or not (isinstance(bw_GBps, (int, float)) and math.isfinite(bw_GBps) and bw_GBps > 0):
        raise CommlabError(f"bw_GBps must be a positive number of GB/s, got {bw_GBps!r}")
    ratio = n_ranks / ring_steps(op, n_ranks) if algo == "Ring" else 0.5
    return float(bw_GBps) * PROTO_BW_FACTOR[proto] * ratio


def _nbytes_array(nbytes) -> np.ndarray:
    arr = np.asarray(nbytes, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise CommlabError(f"nbytes must be finite and >= 0, got {nbytes!r}")
    return arr


def nccl_time_us(op: str, algo: str, proto: str, nbytes, n_ranks: int, n_nodes: int = 1,
                 transport: str = "nvlink", bw_GBps: float | None = None, n_ops: int = 1) -> np.ndarray:
    """Predicted time of one collective in us: ``lat_us * n_ops + nbytes / (1000 * algbw_GBps)``.

    ``nbytes`` is NCCL's byte count (all_gather / reduce_scatter: the whole buffer, n x per-rank part) and may
    be an array; ``bw_GBps`` is the bus bandwidth before protocol factors (default: ``default_bus_bw_GBps``).

    >>> float(nccl_time_us("all_reduce", "Ring", "LL", 0, 8))              # 6.6 + 14 * 0.6
    15.0
    """
    if not isinstance(n_ops, int) or isinstance(n_ops, bool) or n_ops < 1:
        raise CommlabError(f"n_ops must be a whole number >= 1, got {n_ops!r}")
    if bw_GBps is None:
        bw_GBps = default_bus_bw_GBps(transport, n_ranks, n_nodes)
    lat_us = nccl_latency_us(op, algo, proto, n_ranks, n_nodes, transport)
    algbw = nccl_algbw_GBps(op, algo, proto, n_ranks, bw_GBps)
    return lat_us * n_ops + _nbytes_array(nbytes) / (1000.0 * algbw)


def enabled(spec, names: tuple[str, ...], what: str, op: str = "all_reduce") -> tuple[str, ...]:
    """An NCCL_ALGO / NCCL_PROTO-style restriction for ``op``, read by :func:`commlab.tuner.settings.enabled_names`:
    None (all), "Ring,Tree", "^LL128", "LL,Simple;allreduce:^LL", or a tuple of names.

    >>> enabled("^LL128", PROTOS, "protocol"), enabled(("ring",), ALGOS, "algorithm")
    (('LL', 'Simple'), ('Ring',))
    """
    if spec is None:
        return names
    text = spec if isinstance(spec, str) else ",".join(str(item).strip() for item in spec)
    on = enabled_names(text, names, what).get(op)
    kept = names if on is None else tuple(n for n in names if n in on)
    if not kept:
        raise CommlabError(f"the {what} restriction {spec!r} leaves nothing; choose from: {', '.join(names)}")
    return kept


@dataclass(frozen=True)
class Choice:
    """What NCCL's model picks: per size when ``nbytes`` is an array (then algo/proto are arrays too)."""

    algo: str | np.ndarray                        # str, or np.ndarray of str per size
    proto: str | np.ndarray
    time_us: np.ndarray                           # the winner's predicted time
    table: Mapping[tuple[str, str], np.ndarray]   # every candidate pair -> predicted time_us

    @property
    def pair(self) -> tuple[str, str]:
        """(algo, proto) for a scalar size."""
        return (str(self.algo), str(self.proto))


def nccl_choose(op: str, nbytes, n_ranks: int, n_nodes: int = 1, transport: str = "nvlink",
                bw_GBps: float | None = None, algos=None, protos=None) -> Choice:
    """The (algorithm, protocol) pair with the least predicted time, as NCCL picks it per call.

    ``algos`` / ``protos`` narrow the candidates like NCCL_ALGO / NCCL_PROTO (``("Ring",)``, ``"^LL128"``).
    Tree is a candidate for all_reduce only. On a tie the earlier pair in NCCL's loop order (Tree before
    Ring, LL before LL128 before Simple) wins, as NCCL keeps the first minimum.

    >>> nccl_choose("all_reduce", 1024, 128, n_nodes=16).pair                # log2 beats 2(n-1) hops
    ('Tree', 'LL')
    >>> nccl_choose("all_reduce", 1024, 128, n_nodes=16, algos="Ring").pair
    ('Ring', 'LL')
    """
    op = tuned_op(op, SIMPLIFIED_OPS, _MODEL)
    algo_list = tuple(a for a in enabled(algos, ALGOS, "algorithm", op) if a == "Ring" or op == "all_reduce")
    if not algo_list:
        raise CommlabError(f"no algorithm left for {op}: only Ring is modelled there, got algos={algos!r}")
    pairs = [(a, p) for a in algo_list for p in enabled(protos, PROTOS, "protocol", op)]
    times = [nccl_time_us(op, a, p, nbytes, n_ranks, n_nodes, transport, bw_GBps) for a, p in pairs]
    best = np.argmin(np.stack(times), axis=0)      # first minimum on ties
    algo = np.array([a for a, _ in pairs])[best]
    proto = np.array([p for _, p in pairs])[best]
    time_us = np.min(np.stack(times), axis=0)
    if np.ndim(best) == 0:
        algo, proto = str(algo), str(proto)
    return Choice(algo, proto, time_us, MappingProxyType(dict(zip(pairs, times))))


def switch_points(op: str, nbytes, n_ranks: int, **kwargs) -> tuple[tuple[int, str, str], ...]:
    """Where NCCL's choice changes along increasing sizes: (first nbytes of the new pair, old, new).

    Pairs are written "Ring/LL". ``kwargs`` go to :func:`nccl_choose`.

    >>> for point in switch_points("all_gather", 2.0 ** np.arange(0, 34), 8):
    ...     print(point)
    (8388608, 'Ring/LL', 'Ring/LL128')
    (33554432, 'Ring/LL128', 'Ring/Simple')
    """
    sizes = np.sort(_nbytes_array(nbytes).ravel())
    choice = nccl_choose(op, sizes, n_ranks, **kwargs)
    labels = [f"{a}/{p}" for a, p in zip(np.atleast_1d(choice.algo), np.atleast_1d(choice.proto))]
    return tuple((int(sizes[i]), labels[i - 1], labels[i])
                 for i in range(1, len(labels)) if labels[i] != labels[i - 1])
