"""How a node's NVLink links join its GPUs: through NVSwitches, or point to point, pair by pair.

On an NVSwitch board (DGX-2, DGX/HGX A100, H100, B200 with 8 GPUs) every link of a GPU reaches every other GPU.
Without one the links are point to point and NCCL sees, per pair of GPUs, the links between them merged into one
(``ncclTopoConnectNodes`` adds each link's bandwidth to the pair's, ``src/graph/topo.cc:168-193``; links to GPUs
outside the communicator are dropped, ``topo.cc:837-842``). The layouts commlab knows:

* ``switch``: an NVSwitch;
* ``mesh``: every pair gets the same share of each GPU's links, ``links // (n - 1)``: 2 PCIe cards on an
  NVLink bridge (all links to the one peer), a 4-GPU HGX A100 board (NV4 between each pair of its 12 links),
  a 4-GPU HGX H100 board (NV6 of 18), a DGX Station or Dell C4140 with 4 V100 (NV2 of 6: ``nvidia-smi topo -m``
  in NVIDIA/nccl-tests issue 68);
* ``dgx1``: the DGX-1 / HGX-1 hybrid cube mesh of 8 GPUs: two fully joined quads and a link from each GPU to its
  twin in the other quad; a V100 (6 links) has NV2 on the 8-cycle 0-3-2-1-5-6-7-4 and NV1 on the other
  8 pairs, a P100 (4 links) NV1 on all 16 (NVIDIA's DGX-1 topology). The pairs are read from the shipped
  ``nvidia-smi topo -m`` of such a V100 box (:func:`commlab.topology.example` ``"v100-sxm2-8"``, through
  :meth:`commlab.topology.Topology.nvlink_pairs`), the one description of this mesh; fewer GPUs take the first
  ones of the board;
* per-pair counts: ``0-1:2+0-2:1+...`` (GPU indices from 0, links between the two).

>>> canonical("DGX1", 8, 6), canonical("1-0:2+0-2:1", 3, 6)
('dgx1', '0-1:2+0-2:1')
>>> pairs("mesh", 4, 12)[(0, 1)], sorted(set(pairs("dgx1", 8, 6).values()))
(4, [1, 2])
>>> canonical("1-1:2", 2, 4)
Traceback (most recent call last):
...
commlab.errors.CommlabError: nvlink_topology pair '1-1:2' joins GPU 1 to itself; pairs are a-b:links with a != b
"""
from __future__ import annotations

from functools import cache
from types import MappingProxyType

from commlab.errors import CommlabError
from commlab.topology.examples import example

NAMES = ("switch", "mesh", "dgx1")
#: the shipped nvidia-smi topo -m of a DGX-1-style V100 box: the dgx1 layout's links
DGX1_EXAMPLE = "v100-sxm2-8"
_HELP = ("nvlink_topology is switch, mesh, dgx1 or per-pair link counts a-b:links joined by '+' "
         "(e.g. 0-1:2+0-2:1)")


def _pair(item: str, n: int) -> tuple[tuple[int, int], int]:
    try:
        ends, count = item.split(":")
        a, b = (int(x) for x in ends.split("-"))
        k = int(count)
    except ValueError:
        raise CommlabError(f"{_HELP}; got pair {item!r}") from None
    if a == b:
        raise CommlabError(f"nvlink_topology pair {item!r} joins GPU {a} to itself; pairs are a-b:links with a != b")
    if not (0 <= a < n and 0 <= b < n) or k < 1:
        raise CommlabError(f"nvlink_topology pair {item!r} needs GPUs 0..{n - 1} (gpus_per_node={n}) and "
                           f">= 1 link")
    return (min(a, b), max(a, b)), k


def _explicit(text: str, n: int, links: int) -> dict[tuple[int, int], int]:
    out: dict[tuple[int, int], int] = {}
    for item in text.split("+"):
        key, k = _pair(item.strip(), n)
        if key in out:
            raise CommlabError(f"nvlink_topology names the pair {key[0]}-{key[1]} twice in {text!r}")
        out[key] = k
    for g in range(n):
        used = sum(k for (a, b), k in out.items() if g in (a, b))
        if used > links:
            raise CommlabError(f"nvlink_topology gives GPU {g} {used} links; the GPU has {links} (nvlinks)")
    return out


@cache
def _dgx1_v100_pairs() -> MappingProxyType[tuple[int, int], int]:
    return MappingProxyType(example(DGX1_EXAMPLE).nvlink_pairs())


def pairs(topology: str, n: int, links: int) -> dict[tuple[int, int], int] | None:
    """Links between each pair (a < b) of the node's ``n`` GPUs; None for a switch."""
    if topology == "switch":
        return None
    if topology == "mesh":
        per = links // (n - 1) if n > 1 else 0
        if n > 1 and per < 1:
            raise CommlabError(f"a mesh of {n} GPUs needs at least {n - 1} NVLink links per GPU, the GPU has {links}; "
                               f"say nvswitch=1 or give the pairs (nvlink_topology=0-1:1+...)")
        return {(a, b): per for a in range(n) for b in range(a + 1, n)}
    if topology == "dgx1":
        if n > 8 or links not in (4, 6):
            raise CommlabError(f"nvlink_topology=dgx1 is 8 GPUs (or the first of them) with 4 (P100) or 6 (V100) "
                               f"links each; got gpus_per_node={n}, nvlinks={links}")
        return {e: (k if links == 6 else 1) for e, k in _dgx1_v100_pairs().items() if e[1] < n}
    return _explicit(topology, n, links)


def canonical(text: str, n: int, links: int) -> str:
    """The name, or the pairs sorted as ``a-b:k`` with a < b, after checking them against ``n`` and ``links``."""
    low = str(text).strip().lower()
    if low in NAMES:
        pairs(low, n, links)
        return low
    if ":" not in low:
        raise CommlabError(f"{_HELP}; got {text!r}")
    return "+".join(f"{a}-{b}:{k}" for (a, b), k in sorted(_explicit(low, n, links).items()))
