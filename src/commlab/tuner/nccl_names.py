"""NCCL's names: its algorithms, protocols and collectives in its own order, and the indices its tables use.

Read from NVIDIA/nccl v2.30.7-1: ``src/init.cc:52-55`` (ncclFuncStr, ncclAlgoStr, ncclProtoStr),
``src/graph/tuning.cc:263-267`` (compCapIndex, index2). :mod:`commlab.tuner.nccl_constants` keys every table by
them; the generation files (:mod:`commlab.tuner.generation`) are read with them.

>>> arch_of(80), arch_of(90), nodes_index(2), nodes_index(16)
('ampere', 'hopper', 'n2', 'n4')
"""
from __future__ import annotations

from types import MappingProxyType

#: ncclAlgoStr and ncclProtoStr, src/init.cc:53-55 (NCCL's names, in its order: an algorithm's id is its index)
ALGO_NAMES = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTO_NAMES = ("LL", "LL128", "Simple")
#: ncclFuncStr (init.cc:52), the prefixes of NCCL_ALGO / NCCL_PROTO lists, and commlab's names of those collectives
FUNCTIONS = MappingProxyType({"Broadcast": "broadcast", "Reduce": "reduce", "AllGather": "all_gather",
                              "ReduceScatter": "reduce_scatter", "AllReduce": "all_reduce"})
#: the collectives NCCL's tuner models, by commlab's names. nccl-tests' alltoall, scatter, gather and sendrecv are
#: grouped send/recv calls, which NCCL does not tune (no entry in tuning.cc).
TUNED_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
#: NCCL up to 2.12 had one "CollNet" algorithm (v2.12.7-1 src/init.cc:42), since split into these two
OLD_ALGO_NAMES = MappingProxyType({"collnet": ("CollNetDirect", "CollNetChain")})

#: the algorithms the predictive model tunes, in NCCL's loop order (CollNet needs switch offload, PAT one GPU per
#: node: :mod:`commlab.tuner.nccl_constants` says why they are left out)
ALGOS = tuple(a for a in ALGO_NAMES if a in ("Tree", "Ring", "NVLS", "NVLSTree"))
PROTOS = PROTO_NAMES
#: compCapIndex's rows: sm < 80, 80-89, 90-99, >= 100
ARCHS = ("volta", "ampere", "hopper", "blackwell")
#: index2's columns: 1 node, 2 nodes, more
NODE_INDEX = ("n1", "n2", "n4")


def arch_of(compute_capability: int) -> str:
    """NCCL's compCapIndex (tuning.cc:263-266): volta below sm80, ampere 80-89, hopper 90-99, blackwell 100+."""
    return ("blackwell" if compute_capability >= 100 else "hopper" if compute_capability >= 90
            else "ampere" if compute_capability >= 80 else "volta")


def nodes_index(n_nodes: int) -> str:
    """NCCL's index2 (tuning.cc:267): 1 node, 2 nodes, more."""
    return "n1" if n_nodes == 1 else "n2" if n_nodes == 2 else "n4"
