"""In-network reduction across nodes: NCCL's CollNet (InfiniBand SHARP) and NVLS with CollNet, as its tuner
reckons them, plus the fabric.

The predictive model leaves CollNet out (it needs SHARP switches and ``NCCL_COLLNET_ENABLE=1``); the cluster
model adds it from the same source, NVIDIA/nccl v2.30.7 ``src/graph/tuning.cc``:

* ``collnet-direct`` (CollNetDirect): bus bandwidth = channels x bwIntra, divided by ``f - (f-1)/2`` with
  ``f = ppn / channels`` (all GPUs need a NIC of their own to run at full speed), x 0.85 on sm90 and later;
  all-gather / reduce-scatter ``ppn x min(bwIntra, 0.9 bwInter)``, only with one NIC per GPU (lines 349-381);
  latency ``2 (min(1, ppn-1) x 3.7 + (ppn-1) x 0.4) + 31 us`` (the 0.4 us is its "arity serialization",
  lines 421-424, 159, 171);
* ``collnet-chain`` (CollNetChain): bus bandwidth = channels x bwIntra; latency ``2 (ppn-1) x 2.8 + 30 us``;
* ``nvls-sharp`` (NVLS across nodes, which NCCL enables only with CollNet): per channel
  ``min(2 x bwIntra x nvlsEfficiency x (ch-1)/ch, bwInter)``; latency 25 us (NVLink) + 18 us (network).

A network latency adds the plugin's (twice for Simple, as everywhere in NCCL's model); CollNet's algorithm
bandwidth is half its bus bandwidth, NVLS's ``nRanks / nsteps`` of it (lines 372-382). NCCL searches separate
CollNet graphs (``init.cc:1189-1206``); commlab stands in the NVLS graph's channels and speeds for
CollNetDirect (one head per NIC) and the tree graph's for CollNetChain (the ring's channels, as
``init.cc:1193-1194`` sets). The switches reduce as the data passes, so a group of nodes sends one stream up, not
one per node (:func:`~commlab.cluster.levels.reduction_pattern`): oversubscription above the leaf barely
matters to SHARP. Where NCCL's formula is faster than the NICs can send S once (CollNetChain's uses bwIntra
only), the NICs bound it.
"""
from __future__ import annotations

import numpy as np

from commlab.cluster.levels import Shape, reduction_pattern
from commlab.cluster.terms import Terms
from commlab.tuner import nccl_constants as K
from commlab.tuner.graphs import nccl_graphs

#: the cluster model's names of NCCL's CollNet algorithms (constants: commlab.tuner.nccl_constants)
_NCCL_NAME = {"collnet-direct": "CollNetDirect", "collnet-chain": "CollNetChain"}


def why_not(algo: str, op: str, shape: Shape) -> str | None:
    f = shape.cluster.fabric
    if not f.sharp:
        return f"needs SHARP in the switches; {shape.cluster.name}'s fabric has none"
    if shape.domains == 1:
        return "SHARP reduces across nodes; one NVLink domain has no network step"
    if algo == "nvls-sharp" and not shape.machine.has_nvls:
        return "needs NVLink SHARP: an NVSwitch of H100 or later"
    if op != "all_reduce" and shape.nics_per_domain < shape.gpus_per_domain:
        return "CollNet all-gather / reduce-scatter needs one NIC per GPU (tuning.cc:361-381)"
    return None


def _net_latency_us(shape: Shape, base: float) -> float:
    from commlab.tuner.machine import NETS

    return base + 2.0 * NETS[shape.cluster.net]


def _bandwidth_latency(algo: str, op: str, shape: Shape) -> tuple[float, float, str]:
    """(algorithm bandwidth GB/s, latency us, the level that bounds the bandwidth) from NCCL's formulas (see the
    module docstring)."""
    m, ppn, n = shape.machine, shape.gpus_per_domain, shape.gpus
    graphs = nccl_graphs(m)
    if algo == "nvls-sharp":
        g = graphs["NVLSTree"]
        eff = K.NVLS_EFFICIENCY[K.arch_of(m.compute_capability)]
        intra = 2.0 * g.bw_intra_GBps * eff * (g.n_channels - 1) / g.n_channels
        algbw = g.n_channels * min(intra, g.bw_inter_GBps) * n / (2.0 * (n - 1))
        level = "nvswitch" if intra < g.bw_inter_GBps else "nic"
        return algbw, (K.HW_LAT_US[("nvlink", "NVLS", "Simple")]
                       + _net_latency_us(shape, K.HW_LAT_US[("net", "NVLS", "Simple")])), level
    if algo == "collnet-chain":
        g = graphs["Tree"]
        lat = (2 * (ppn - 1) * K.COLLNET_HW_LAT_US[("nvlink", _NCCL_NAME[algo])]
               + _net_latency_us(shape, K.COLLNET_HW_LAT_US[("net", _NCCL_NAME[algo])]))
        return 0.5 * g.n_channels * g.bw_intra_GBps, lat, "nic"
    g = graphs.get("NVLSTree", graphs["Ring"])
    lat = (2 * (min(1, ppn - 1) * K.COLLNET_HW_LAT_US[("nvlink", _NCCL_NAME[algo])]
                + (ppn - 1) * K.COLLNET_DIRECT_ARITY_US)
           + _net_latency_us(shape, K.COLLNET_HW_LAT_US[("net", _NCCL_NAME[algo])]))
    if op != "all_reduce":
        return ppn * min(g.bw_intra_GBps, K.COLLNET_DIRECT_AG_INTER_FACTOR * g.bw_inter_GBps), lat, "nic"
    factor = ppn / g.n_channels
    factor -= (factor - 1) / 2
    sm90 = K.COLLNET_DIRECT_SM90_FACTOR if m.compute_capability >= 90 else 1.0
    bus = g.n_channels * g.bw_intra_GBps / factor * sm90
    return 0.5 * bus, lat, "nic"


def sharp_terms(algo: str, op: str, shape: Shape, nbytes: np.ndarray) -> Terms:
    """The time of a SHARP algorithm per size, with the fabric (see the module docstring)."""
    algbw, lat_us, level = _bandwidth_latency(algo, op, shape)
    pattern = reduction_pattern(shape)
    s = np.asarray(nbytes, dtype=float)
    k_bw = shape.network_GBps * 1e9
    bounds = {"nic": pattern.out * s / k_bw}                    # each domain's NICs send S up once
    bounds.update({g.name: pattern.up[i] * g.taper * s / k_bw for i, g in enumerate(shape.groups)})
    lat_s = (lat_us + shape.extra_hops_us(pattern.top)) * 1e-6
    nccl_bw = s / (algbw * 1e9)
    worst = max(bounds, key=lambda name: float(np.max(bounds[name])))
    total = lat_s + np.maximum(nccl_bw, bounds[worst])
    levels = {level: np.where(nccl_bw >= bounds[worst], nccl_bw, 0.0)}
    levels[worst] = levels.get(worst, 0.0) + np.where(bounds[worst] > nccl_bw, bounds[worst], 0.0)
    return Terms(total, np.full(s.shape, lat_s), levels, f"NCCL's {lat_us:g} us for one pass up and down the switches")
