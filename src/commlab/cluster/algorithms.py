"""The algorithms a cluster can run a collective with, which collectives each one does, and where it comes from.

* ``flat-ring`` (all-reduce, all-gather, reduce-scatter, broadcast, reduce): one ring through every GPU in rank
  order; each step waits for its slowest hop, a network hop through one NIC (steps, :mod:`~commlab.cluster.analytic`);
* ``ring`` (the same collectives): NCCL's rings, one channel per NIC, NVLink inside a node, the network only
  between nodes (NCCL's tuner, :func:`commlab.tuner.predict.predict`, plus the fabric);
* ``tree`` (all-reduce): NCCL's double binary tree across nodes, chains inside (NCCL's tuner plus the fabric);
* ``nvls-tree`` (all-reduce; all-gather and reduce-scatter on one domain): NVLink SHARP inside the node, NCCL's
  tree across (NVLSTree); NCCL's NVLS alone on one NVLink domain (NCCL's tuner plus the fabric);
* ``nvls-ring`` (all-reduce): NVLink SHARP reduce-scatter inside, a ring all-reduce of each GPU's 1/d across
  nodes on its rail, NVLink SHARP all-gather (steps, NVLS from NCCL's table);
* ``collnet-direct`` (all-reduce; all-gather and reduce-scatter with a NIC per GPU): SHARP, every GPU sending its
  share to the switches through its own NIC (NCCL's CollNetDirect formulas, :mod:`~commlab.cluster.sharp`);
* ``collnet-chain`` (all-reduce): SHARP fed by a chain through the node (NCCL's CollNetChain formulas);
* ``nvls-sharp`` (all-reduce): NVLink SHARP inside, InfiniBand SHARP across (NCCL's NVLS with CollNet);
* ``rabenseifner`` (all-reduce, all-gather, reduce-scatter): recursive halving / doubling, log2 N steps, the big
  halves to the far partners (steps);
* ``pat`` (all-gather, reduce-scatter): PAT's order (NCCL 2.23), log2 N steps, the big pieces to the near
  partners on NVLink (steps);
* ``direct`` (all-to-all, scatter, gather): every GPU sends straight to every other, through PXN on a
  rail-optimised fabric (steps).

NCCL picks among ``ring``, ``tree`` and ``nvls-tree`` by itself (CollNet is off unless
``NCCL_COLLNET_ENABLE=1``); the others are what-ifs a reader can set against it.
"""
from __future__ import annotations

from types import MappingProxyType

from commlab.collectives import canonical
from commlab.errors import CommlabError
from commlab.tuner.settings import TUNED_OPS as _NCCL_OPS

#: algorithm -> the collectives it runs
ALGORITHMS = MappingProxyType({
    "flat-ring": _NCCL_OPS,
    "ring": _NCCL_OPS,
    "tree": ("all_reduce",),
    "nvls-tree": ("all_reduce", "all_gather", "reduce_scatter"),
    "nvls-ring": ("all_reduce",),
    "collnet-direct": ("all_reduce", "all_gather", "reduce_scatter"),
    "collnet-chain": ("all_reduce",),
    "nvls-sharp": ("all_reduce",),
    "rabenseifner": ("all_reduce", "all_gather", "reduce_scatter"),
    "pat": ("all_gather", "reduce_scatter"),
    "direct": ("all_to_all", "scatter", "gather"),
})

#: the collectives the cluster model costs
CLUSTER_OPS = _NCCL_OPS + ("all_to_all", "scatter", "gather")

#: NCCL's algorithm names (predict's) -> ours
FROM_NCCL = MappingProxyType({"Ring": "ring", "Tree": "tree", "NVLS": "nvls-tree", "NVLSTree": "nvls-tree"})


def check_op(op: object) -> str:
    """The canonical collective name, or CommlabError listing the ones the cluster model costs."""
    try:
        name = canonical(str(op))
    except CommlabError:
        name = None
    if name not in CLUSTER_OPS:
        raise CommlabError(f"the cluster model costs {', '.join(CLUSTER_OPS)}; got {op!r}")
    return name


def algorithms_for(op: str) -> tuple[str, ...]:
    """The algorithms that run ``op``, in the table's order."""
    return tuple(a for a, ops in ALGORITHMS.items() if op in ops)


def check_algos(op: str, algos) -> tuple[str, ...]:
    """``"all"`` or names (a string with commas, or a sequence) -> the algorithms; an unknown or unfit name is
    a CommlabError listing the algorithms of ``op``."""
    accepted = algorithms_for(op)
    if algos is None or (isinstance(algos, str) and algos.strip().lower() == "all"):
        return accepted
    names = [a.strip().lower() for a in (algos.split(",") if isinstance(algos, str) else algos)]
    for name in names:
        if name not in accepted:
            known = "" if name in ALGORITHMS else f"unknown algorithm {name!r}; "
            what = known or f"{name!r} does not run {op}; "
            raise CommlabError(f"{what}the algorithms for {op} are: {', '.join(accepted)} (or all)")
    return tuple(dict.fromkeys(names))
