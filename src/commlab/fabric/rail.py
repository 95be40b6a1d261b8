"""Rail-optimised wiring: NIC i of every node goes to leaf ("rail") switch i (chapter 02).

With ``gpus_per_node`` GPUs, each with its own NIC, a scalable unit of nodes gets one leaf switch per local
GPU index. GPU i of node a and GPU i of node b meet one switch hop apart (their common rail leaf); GPUs on
different rails meet through a spine (three switch hops), unless NCCL first moves the data over NVLink to the
GPU on the right rail (its PXN feature, NCCL 2.12), so that the network leg stays on one rail. NVIDIA's DGX
SuperPOD and enterprise reference architectures wire the compute fabric this way (docs.nvidia.com,
"rail-optimized network topology").

>>> switch_hops((0, 3), (1, 3)), switch_hops((0, 3), (1, 5)), switch_hops((0, 3), (0, 5))
(1, 3, 0)
>>> switch_hops((0, 3), (1, 5), rail_optimised=False, nodes_per_leaf=4)
1
"""
from __future__ import annotations

from commlab.errors import CommlabError


def _check_gpu(where: str, gpu: tuple[int, int]) -> tuple[int, int]:
    try:
        node, local = (int(v) for v in gpu)
    except (TypeError, ValueError):
        raise CommlabError(f"{where} must be a (node, local GPU index) pair of whole numbers, got {gpu!r}") from None
    if node < 0 or local < 0:
        raise CommlabError(f"{where} must be a (node, local GPU index) pair of numbers >= 0, got {gpu!r}")
    return node, local


def leaf_of(gpu: tuple[int, int], rail_optimised: bool = True, nodes_per_leaf: int = 1) -> tuple:
    """The leaf switch a GPU's NIC plugs into: ("rail", i) when rail-optimised, else the node's own
    top-of-rack leaf ("rack", node // nodes_per_leaf)."""
    node, local = _check_gpu("gpu", gpu)
    if rail_optimised:
        return ("rail", local)
    if not isinstance(nodes_per_leaf, int) or nodes_per_leaf < 1:
        raise CommlabError(f"nodes_per_leaf must be a whole number >= 1, got {nodes_per_leaf!r}")
    return ("rack", node // nodes_per_leaf)


def switch_hops(src: tuple[int, int], dst: tuple[int, int], rail_optimised: bool = True,
                nodes_per_leaf: int = 1) -> int:
    """Switches a message from GPU ``src`` to GPU ``dst`` (each a (node, local index) pair) passes through
    in a two-level fabric: 0 inside a node (NVLink), 1 when both NICs share a leaf, 3 through a spine."""
    a, b = _check_gpu("src", src), _check_gpu("dst", dst)
    if a[0] == b[0]:
        return 0
    same_leaf = leaf_of(a, rail_optimised, nodes_per_leaf) == leaf_of(b, rail_optimised, nodes_per_leaf)
    return 1 if same_leaf else 3
