"""The constants of NCCL's cost model, each with the line of NCCL's source it comes from.

Read from NVIDIA/nccl v2.30.7-1 (the tag's commit 73cf112295c33aee2b895f329f592f2a9b4b0f97):
``src/graph/tuning.cc`` (the tuner), ``src/graph/search.cc`` (the channel search's speeds),
``src/graph/topo.h`` (per-link bandwidths), ``src/graph/topo.cc`` (PCIe), ``src/include/device.h``
(channel limits). The tuning tables of ``tuning.cc`` (latencies, caps, factors, the Tree correction, the ring
plateau) and the chunk sizes of ``enqueue.cc`` have one home, the current generation's data file
(``commlab/data/nccl/generations/2.24-2.30.toml``, each entry with its line): this module reads them from it, as
:mod:`commlab.tuner.generation` reads the older generations, which :mod:`commlab.tuner.replay` replays. The few
choices no source makes (how long a pipeline fills) are calibrated: :mod:`commlab.calibration` holds them with the
runs they were chosen and checked on.

Tables are keyed by NCCL's names: algorithms ``Tree, Ring, NVLS, NVLSTree`` (``CollNetDirect``,
``CollNetChain`` and ``PAT`` need switch offload or one GPU per node and are left out of the predictive model;
CollNet's latencies are here for the cluster model's SHARP), protocols ``LL, LL128,
Simple``, hardware ``nvlink, pci, net``, architecture index ``volta, ampere, hopper, blackwell`` (NCCL's
compCapIndex: sm < 80, 80-89, 90-99, >= 100), node-count index ``n1, n2, n4`` (1 node, 2 nodes, more).

>>> BASE_LAT_US[("Ring", "Simple")], HW_LAT_US[("net", "Tree", "Simple")], LL_MAX_BW_GBPS[("hopper", "n1")]
(8.4, 14.0, 141.0)
"""
from __future__ import annotations

from types import MappingProxyType

from commlab.calibration import entry, value
from commlab.tuner.generation import current
from commlab.tuner.nccl_names import (ALGO_NAMES, ALGOS, ARCHS, FUNCTIONS, NODE_INDEX, OLD_ALGO_NAMES,  # noqa: F401
                                      PROTO_NAMES, PROTOS, arch_of, nodes_index)

_NOW = current()
#: the release the tables are read from, and its commit (the current generation's file)
NCCL_VERSION = _NOW.tag.removeprefix("v").rsplit("-", 1)[0]
NCCL_COMMIT = _NOW.commit
SOURCE = f"NVIDIA/nccl v{NCCL_VERSION} ({NCCL_COMMIT[:8]})"


def _table(rows: dict) -> MappingProxyType:
    return MappingProxyType(dict(rows))


def _nvls_simple_only(table) -> MappingProxyType:
    """A generation file writes NVLS's and NVLSTree's rows for every protocol (0 where NCCL has none); NCCL runs them
    on Simple alone (tuning.cc:298-300), so the other entries are left out."""
    return MappingProxyType({k: v for k, v in table.items()
                             if not (k[-2] in ("NVLS", "NVLSTree") and k[-1] != "Simple")})


#: baseLat [algo][proto], us: tuning.cc:151-154 (NVLS and NVLSTree have 0 base latency)
BASE_LAT_US = _nvls_simple_only(_NOW.base_lat_us)
#: hwLat [hw][algo][proto], us per hop: tuning.cc:159-161 (NVLink), 165-167 (PCI), 171-173 (NET)
HW_LAT_US = _nvls_simple_only(_NOW.hw_lat_us)

#: llMaxBws [index1][nodes], GB/s: the Ring/Tree LL bus bandwidth cap, tuning.cc:179-182. On one node index1 is
#: the GPU architecture; across nodes it is the CPU (0 Intel, 1 AMD), tuning.cc:269-272.
LL_MAX_BW_GBPS = _NOW.ll_max_bw_GBps
#: the cross-node rows of llMaxBws by CPU vendor: row 0 (Intel), row 1 (AMD), tuning.cc:179-180, 270-271
LL_MAX_BW_CPU_ROW = MappingProxyType({"intel": "volta", "amd": "ampere"})

#: perChMaxRingLL128Bws [arch][nodes], GB/s per channel: tuning.cc:186-189
RING_LL128_MAX_BW_PER_CH_GBPS = _NOW.ring_ll128_max_bw_per_ch_GBps
#: perChMaxTreeLL128Bws [arch][nodes], GB/s per channel: tuning.cc:193-196
TREE_LL128_MAX_BW_PER_CH_GBPS = _NOW.tree_ll128_max_bw_per_ch_GBps
#: perChMaxTreeBws [arch][nodes], GB/s per channel: tuning.cc:200-203
TREE_MAX_BW_PER_CH_GBPS = _NOW.tree_max_bw_per_ch_GBps
#: perChMaxNVLSTreeBws [arch][nodes], GB/s per channel: tuning.cc:207-210
NVLS_TREE_MAX_BW_PER_CH_GBPS = _table({
    (a, n): v for a, row in zip(ARCHS, ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5),
                                         (0.0, 96.0, 80.0)))
    for n, v in zip(NODE_INDEX, row)})
#: nvlsEfficiency [arch]: the share of the NVSwitch bandwidth NVLS reaches, tuning.cc:139-144
NVLS_EFFICIENCY = MappingProxyType({"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74})

#: CollNet's per-hop latencies (Simple only), us: tuning.cc:159 (NVLink) and 171 (NET); the cluster model's
#: CollNet (commlab.cluster.sharp) uses them, the predictive model leaves CollNet out
COLLNET_HW_LAT_US = _table({
    ("nvlink", "CollNetDirect"): 3.7, ("nvlink", "CollNetChain"): 2.8,
    ("net", "CollNetDirect"): 31.0, ("net", "CollNetChain"): 30.0,
})
#: CollNetDirect's arity serialization, us per local rank: tuning.cc:422
COLLNET_DIRECT_ARITY_US = 0.4
#: CollNetDirect's bus bandwidth factor on sm90 and later: tuning.cc:358
COLLNET_DIRECT_SM90_FACTOR = 0.85
#: CollNetDirect all-gather / reduce-scatter run at bwInter x 0.9: tuning.cc:351
COLLNET_DIRECT_AG_INTER_FACTOR = 0.9

#: Ring/Tree bus bandwidth factors, tuning.cc:327-337: LL carries 8 bytes of data per 16 (x 0.5), LL128 120 of
#: 128 (x 0.92); the Tree all-reduce x 0.92; a Tree's LL x 1/3.8; a Tree's LL128 x 7/9 on one node, 120/128 across
LL_BW_FACTOR = _NOW.rules["ring_ll_factor"][0]
LL128_BW_FACTOR = _NOW.rules["ring_ll128_factor"][0]
TREE_ALL_REDUCE_FACTOR = _NOW.rules["tree_factor"]
TREE_LL_FACTOR = _NOW.rules["tree_ll_factor"]
TREE_LL128_FACTOR_ONE_NODE, TREE_LL128_FACTOR_NODES = _NOW.rules["tree_ll128_factor"]

#: treeCorrectionFactor [proto][log2(nBytes / 64)] for Tree all-reduce, sizes 64 B .. 256 MiB: tuning.cc:623-627
TREE_CORRECTION = _NOW.tree_correction
#: NVLSTree all-reduce takes the same treeCorrectionFactor, all 24 entries (log2(nBytes / 64) < 24), on Blackwell
#: (minCompCap >= 100) with an x86 host only: v2.30.7-1 tuning.cc:643-646 (first in v2.29.2-1, :595)
NVLSTREE_CORRECTION_MIN_CC = 100
NVLSTREE_CORRECTION_BELOW = 24
#: GPUs whose host is NVIDIA Grace (Arm: NCCL_TOPO_CPU_ARCH_ARM), where the NVLSTree correction does not apply;
#: GB200 and GB300 are Grace-Blackwell superchips (NVIDIA GB200 NVL72 and GB300 NVL72 data sheets)
ARM_HOST_GPUS = ("gh200", "gb200", "gb300")
#: Ring/Simple all-reduce across nodes: latency x 1.4 (x 1.9 before sm80) once each rank's share per channel is
#: >= 64 bytes ("plateau effect of ring"), tuning.cc:647-650
RING_PLATEAU_FACTOR = MappingProxyType(dict(zip(("pre_sm80", "sm80_up"), _NOW.rules["plateau"])))
#: network post overhead per ring step across nodes, us (x 3 for Simple): tuning.cc:228-233, 404-410
NET_OVERHEAD_US = MappingProxyType({"intel": 1.0, "amd": 2.0})

#: bandwidth NCCL assigns to one NVLink link, GB/s, by compute capability: topo.h:19-24 (SM60..SM100)
NVLINK_BW_GBPS = MappingProxyType({60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.1})
#: PCIe x16 bandwidth NCCL derives, GB/s: width * (100 Mb/s per lane code) / 80, topo.cc:545-557 and 655-657
#: (Gen3 8 GT/s -> 60, Gen4 -> 120, Gen5 -> 240, Gen6 -> 480)
PCIE_X16_BW_GBPS = MappingProxyType({3: 12.0, 4: 24.0, 5: 48.0, 6: 96.0})
#: Intel root complexes turn GPU P2P traffic into 64-byte TLPs: a PHB path costs bw * 6/5, topo.h:39
INTEL_P2P_OVERHEAD = 6.0 / 5.0

#: per-channel speeds the channel search tries, GB/s, search.cc:1051-1066
SPEEDS_INTRA = MappingProxyType({
    "volta": (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    "hopper": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    "blackwell": (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
})
SPEEDS_INTER = MappingProxyType({
    "volta": (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2,
              0.24, 0.12),
    "hopper": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    "blackwell": (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
                  2.4, 1.2, 0.24, 0.12),
})
#: the search stops lowering the speed once the next one is <= 0.49 of the best found, search.cc:1229
SPEED_STEP_FLOOR = 0.49
#: channels: MAXCHANNELS 64 (device.h:91); the ring search may use MAXCHANNELS/2 (init.cc:1177); NVLS at most
#: NCCL_MAX_NVLS_ARITY = 32 heads (device.h:213, search.cc:1131)
MAX_CHANNELS = 64
MAX_RING_SEARCH_CHANNELS = 32
MAX_NVLS_ARITY = 32
#: a graph's channels are doubled when its speed is >= 25 GB/s, except on sm > 80 below 50 GB/s with more than
#: 4 channels: search.cc:1036-1048
DUP_MIN_SPEED_GBPS = 25.0

#: NVLS channels (CTAs) per collective, by GPU: NVLS_NCHANNELS_SM90 16, NVLS_NCHANNELS_SM100 32 (across nodes) and
#: NVLS_NCHANNELS_SM100_NVL 24 (one node), src/transport/nvls.cc:155-157 and 209-214; NCCL launches all of them at
#: every size (enqueue.cc:2084-2090: no per-size reduction for NVLS / NVLSTree, unlike Ring and Tree)
NVLS_NCHANNELS = MappingProxyType({"sm90": 16, "sm100_nodes": 32, "sm100_one_node": 24})
#: NCCL_NVLS_CHUNKSIZE default 128 KiB (nvls.cc:160); NVLSTree's cap on 4+ nodes 64 KiB (nvls.cc:226-229)
NVLS_CHUNK_BYTES = int(_NOW.chunking["nvls_chunk_bytes"])
NVLS_TREE_MAX_CHUNK_BYTES_4_NODES = int(_NOW.chunking["nvls_tree_max_chunk_4_nodes_bytes"])
#: how calcCollChunking shrinks the chunk for a size: (multiple of concurrentOps x chunk the size must reach, chunk
#: above which the rule applies, chunk it sets); NVLS enqueue.cc:2272-2274, NVLSTree enqueue.cc:2282-2285
NVLS_CHUNK_RULES = _NOW.chunking["nvls_rules"]
NVLS_TREE_CHUNK_RULES = _NOW.chunking["nvls_tree_rules"]
#: chunk times a (channel, head) pipeline spends filling before it streams: the NVLS kernels run each chunk through
#: three warp groups in series (scatter -> reduce, with the tree's send/recv -> gather; device/all_reduce.h:390-520
#: and 527-640), so the first chunk is two chunk times behind the stream. The kernels give the structure, not a
#: measured delay: calibrated (commlab/data/calibration.csv)
NVLS_PIPELINE_FILL_CHUNKS = int(value("NVLS_PIPELINE_FILL_CHUNKS"))

#: per-connection buffers, bytes (init.cc:810-813): LL 8 lines x 512 threads x 8 steps x 16 B, LL128 120 elements x
#: 640 threads x 8 steps x 8 B, Simple 4 MiB; NCCL_STEPS = 8 steps each (device.h:26)
BUFF_BYTES = MappingProxyType({"LL": 8 * 512 * 8 * 16, "LL128": 120 * 640 * 8 * 8, "Simple": 1 << 22})
NCCL_STEPS = 8
#: Tree/LL128's largest chunk, the data one step carries (enqueue.cc:2226-2232; Tree: chunkSteps = 1): 15 of every
#: 16 words of the step, the 16th is the flag (device.h:110-112); LL carries half (a flag per data word), Simple all
TREE_LL128_MAX_CHUNK_BYTES = BUFF_BYTES["LL128"] // NCCL_STEPS // 16 * 15
#: calcCollChunking's Tree/LL128 rule (enqueue.cc:2289-2294): nstepsLL128 = 1 + log2(nodes) + 0.1 x ppn; the chunk
#: halves while bytes / (channels x chunk) < nstepsLL128 x 64 / ppn (down to 128 KiB), then x 16 / ppn (32 KiB)
TREE_LL128_CHUNK_RULES = _NOW.chunking["tree_ll128_rules"]
#: chunks are whole grains (enqueue.cc:2321, device.h:328-333): LL 16 B, LL128 32 x 8 / 16 x 15 x 8 = 1920 B,
#: Simple 512 B
GRAIN_BYTES = MappingProxyType({"LL": 16, "LL128": 1920, "Simple": 512})
#: chunk times a Tree all-reduce across nodes spends filling its pipe, per level of the inter-node tree: one up, one
#: down. A network hop is store-and-forward by whole steps: the send proxy posts a step only once the GPU has written
#: all of it (Simple, LL128: the tail; LL: every line's flags; src/transport/net.cc:1358-1395), and a Tree step is
#: one chunk. NVLink hops inside the node are not counted: LL and LL128 pass line by line (the receiver polls each
#: line's flag). The structure is the source's; network hops alone, not the intra-node chain as well, is
#: calibrated (commlab/data/calibration.csv)
TREE_FILL_HOPS_PER_LEVEL = int(value("TREE_FILL_HOPS_PER_LEVEL"))
#: the protocols the fill applies to. Not LL: across nodes its bandwidth is already NCCL's llMaxBw, a flat bus cap
#: per node count (tuning.cc:179-182) far below the links, which folds the network's pipeline in (calibrated:
#: commlab/data/calibration.csv)
TREE_FILL_PROTOS = tuple(entry("TREE_FILL_PROTOS").value.split("+"))


def speeds_arch(compute_capability: int) -> str:
    """Which speed array the search uses (search.cc:1136-1141): sm100, sm90, or the default one."""
    return "blackwell" if compute_capability >= 100 else "hopper" if compute_capability >= 90 else "volta"


def nvlink_bw_GBps(compute_capability: int) -> float:
    """ncclTopoNVLinkBw (topo.h:19-24, topo.cc:275-281): the per-link bandwidth NCCL assumes."""
    cc = compute_capability
    key = 100 if cc >= 100 else 90 if cc >= 90 else 86 if cc == 86 else 80 if cc >= 80 else 70 if cc >= 70 \
        else 60
    return NVLINK_BW_GBPS[key]
