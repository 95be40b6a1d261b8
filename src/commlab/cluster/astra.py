"""The same cluster as ASTRA-sim's analytical backend reads it: ``commlab cluster export --format astra-sim``.

ASTRA-sim (https://github.com/astra-sim/astra-sim) simulates a training step from a Chakra execution trace on a
*multi-dimensional* network: NPU ids are written in mixed radix, one digit per dimension, and dimension i joins
the NPUs whose ids differ only in digit i. Its analytical backend reads a YAML file with one entry per
dimension (astra-network-analytical, ``common/network-parser/NetworkParser.cpp``)::

    topology: [ Switch, Switch ]     # Ring, FullyConnected or Switch
    npus_count: [ 8, 32 ]            # NPUs per dimension, each > 1; the product is the number of NPUs
    bandwidth: [ 370.8, 48.0 ]       # GB/s of each NPU's link in that dimension
    latency: [ 600.0, 2830.0 ]       # ns per hop

and its system layer a JSON file (``astra-sim/system/Sys.cc``, ``astraccl/CollectiveImplLookup.cc``) whose
``*-implementation`` lists name one algorithm per dimension (``ring``, ``doubleBinaryTree``, ``direct``,
``halvingDoubling``, ...). A cluster maps onto it level by level, with the numbers of commlab's model:

* dimension 0: the NVLink domain, a Switch of d GPUs at NCCL's NVLink figure, NCCL's NVLink hop (LL, 0.6 us);
* dimension 1: the GPUs of one local index under one leaf (a rail, or one top-of-rack switch's nodes), each at
  its share of the node's NICs; NCCL's network hop (LL) plus the plugin's latency and one switch;
* dimensions 2 and 3: across leaves, then across pods, each at the share divided by the taper above it, with
  2 (4) more switch hops.

The files ship with a run script; the workload (Chakra traces) is the reader's: ASTRA-sim's
``examples/workload/microbenchmarks`` or Chakra's generators. Tests hold the writer to ASTRA-sim's own example
files (tests/data/astra-sim).
"""
from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

from commlab.cluster.levels import Shape
from commlab.tuner import nccl_constants as K
from commlab.errors import CommlabError
from commlab.hardware.gpus import GPUS
from commlab.output import check_writable_dir, write_atomic

#: ASTRA-sim's local-mem-bw (GB/s) for a GPU whose record (:data:`commlab.hardware.gpus.GPUS`) has no HBM figure
DEFAULT_LOCAL_MEM_GBPS = 2000.0

#: commlab algorithm -> ASTRA-sim's (inside the NVLink domain, across it) for all-reduce
ALL_REDUCE_IMPL = MappingProxyType({"ring": ("ring", "ring"), "tree": ("ring", "doubleBinaryTree"),
                                    "rabenseifner": ("halvingDoubling", "halvingDoubling"),
                                    "flat-ring": ("ring", "ring")})


def local_mem_GBps(gpu: str) -> float:
    """ASTRA-sim's ``local-mem-bw`` for ``gpu``: its HBM bandwidth from its record, else
    :data:`DEFAULT_LOCAL_MEM_GBPS`."""
    record = GPUS.get(gpu)
    return record.hbm_GBps if record is not None and record.hbm_GBps else DEFAULT_LOCAL_MEM_GBPS


def _dims(shape: Shape) -> tuple[list[dict], list[str]]:
    """The network's dimensions (see the module docstring), dimensions of one NPU dropped; and notes on what the
    mapping simplifies."""
    c, d = shape.cluster, shape.gpus_per_domain
    per_gpu = shape.network_GBps / d
    net_ns = (shape.net_latency_us("LL") + c.fabric.switch_latency_us) * 1e3
    dims = [{"topology": "Switch", "npus": d, "bw": shape.nvlink_GBps,
             "lat": K.HW_LAT_US[("nvlink" if shape.machine.has_nvlink else "pci", "Ring", "LL")] * 1e3}]
    prev, taper, notes = 1, 1.0, []
    for g in shape.groups:
        size = min(g.domains, shape.domains)
        taper_next = g.taper
        if size % prev or shape.domains % size:
            notes.append(f"{shape.domains} NVLink domains do not split into {g.name}s of {g.domains}: the last "
                         f"dimension joins all {shape.domains // prev} groups at the {g.taper:g}:1 taper above the "
                         f"{g.name} (pessimistic inside a {g.name})")
            taper = g.taper
            break
        dims.append({"topology": "Switch", "npus": size // prev, "bw": per_gpu / taper, "lat": net_ns})
        net_ns += 2 * c.fabric.switch_latency_us * 1e3
        prev, taper = size, taper_next
    dims.append({"topology": "Switch", "npus": shape.domains // prev, "bw": per_gpu / taper, "lat": net_ns})
    return [x for x in dims if x["npus"] > 1], notes


def network_yaml(shape: Shape) -> str:
    """The analytical backend's network file for ``shape``."""
    dims, notes = _dims(shape)
    c = shape.cluster

    def row(key, values, comment):
        return f"{key}: [ {', '.join(values)} ]  # {comment}"

    lines = [f"# ASTRA-sim analytical network: commlab cluster {c.name}, {shape.nodes} nodes, {shape.gpus} GPUs",
             f"# {c.title}",
             "# dimension 0: the NVLink domain; then the GPUs of one rail under a leaf, then leaves, then pods",
             *[f"# note: {n}" for n in notes],
             row("topology", [x["topology"] for x in dims], "Ring, FullyConnected or Switch"),
             row("npus_count", [str(x["npus"]) for x in dims], f"NPUs per dimension; product {shape.gpus}"),
             row("bandwidth", [f"{x['bw']:.3f}" for x in dims], "GB/s per NPU link, one direction"),
             row("latency", [f"{x['lat']:.1f}" for x in dims], "ns per hop")]
    return "\n".join(lines) + "\n"


def system_json(shape: Shape, algo: str = "ring") -> dict:
    """The system layer's file: one collective implementation per dimension, the keys of ASTRA-sim's examples."""
    if algo not in ALL_REDUCE_IMPL:
        raise CommlabError(f"ASTRA-sim's native collectives run all-reduce as {', '.join(ALL_REDUCE_IMPL)}; "
                           f"got {algo!r}")
    inside, across = ALL_REDUCE_IMPL[algo]
    n = len(_dims(shape)[0])
    per_dim = [inside] + [across] * (n - 1)
    gather = ["halvingDoubling"] * n if algo == "rabenseifner" else ["ring"] * n
    return {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
            "preferred-dataset-splits": 4, "all-reduce-implementation": per_dim,
            "all-gather-implementation": gather, "reduce-scatter-implementation": list(gather),
            "all-to-all-implementation": ["direct"] * n, "collective-optimization": "localBWAware",
            "local-mem-bw": local_mem_GBps(shape.cluster.gpu), "boost-mode": 0}


_RUN = """#!/bin/bash
# Run ASTRA-sim's analytical backend on commlab's {name} ({nodes} nodes, {gpus} GPUs).
# ASTRA_SIM: the built binary (astra-sim/build/astra_analytical/build.sh, then
#   build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware: multi-dimensional networks need
#   the congestion-unaware backend); WORKLOAD: Chakra traces for {gpus} NPUs (prefix of <prefix>.<rank>.et).
set -e
HERE=$(dirname "$(realpath "$0")")
"${{ASTRA_SIM:?set ASTRA_SIM to the AstraSim_Analytical_Congestion_Unaware binary}}" \\
    --workload-configuration="${{WORKLOAD:?set WORKLOAD to a Chakra trace prefix for {gpus} NPUs}}" \\
    --system-configuration="$HERE/system.json" \\
    --remote-memory-configuration="$HERE/remote_memory.json" \\
    --network-configuration="$HERE/network.yml"
"""


def export(shape: Shape, out_dir: str | Path, algo: str = "ring") -> list[Path]:
    """Write network.yml, system.json, remote_memory.json and run.sh under ``out_dir``; return their paths."""
    out = check_writable_dir(out_dir, f"--out {str(out_dir)!r}")
    files = {"network.yml": network_yaml(shape),
             "system.json": json.dumps(system_json(shape, algo), indent=4) + "\n",
             "remote_memory.json": json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}, indent=4) + "\n",
             "run.sh": _RUN.format(name=shape.cluster.name, nodes=shape.nodes, gpus=shape.gpus)}
    written = [write_atomic(out / name, text) for name, text in files.items()]
    (out / "run.sh").chmod(0o755)
    return written
