"""Binary tree and NCCL's double binary tree all-reduce (chapter 06).

The tree is NCCL's: ``ncclGetBtree`` in NVIDIA/nccl ``src/graph/trees.cc`` builds an in-order binary tree from
the binary digits of the rank. Rank 0 is the root and has one child; every other rank has at most two; the
depth is ceil(log2 N). The double binary tree (``ncclGetDtree``) adds a second tree, mirrored (r -> N-1-r) when
N is even and shifted (r -> r+1) when N is odd, so that a rank that is a leaf in one tree is an inner node in
the other. Each tree carries half of the buffer, so both halves move at once and no rank's links sit idle.

An all-reduce over a tree: reduce towards the root (a rank sends its partial sum up once it has everything
from its children: at step = the height of its subtree), then broadcast down (a rank at depth k receives at
step D + k - 1). That is 2 * ceil(log2 N) steps, the latency advantage over the ring's 2(N-1).

>>> tree_parents(8)
[-1, 2, 4, 2, 0, 6, 4, 6]
>>> tree_parents(8, mirrored=True)
[1, 3, 1, 7, 5, 3, 5, -1]
"""
from __future__ import annotations

import math

from commlab.schedules.model import Transfer


def _btree_parent(n_ranks: int, rank: int) -> int:
    """Parent of ``rank`` in NCCL's binary tree (-1 for the root)."""
    if rank == 0:
        return -1
    bit = 1
    while bit < n_ranks and not bit & rank:
        bit <<= 1
    up = (rank ^ bit) | (bit << 1)
    return rank ^ bit if up >= n_ranks else up


def tree_parents(n_ranks: int, mirrored: bool = False) -> list[int]:
    """Parent of every rank in the first tree, or in the second tree of the double binary tree."""
    if not mirrored:
        return [_btree_parent(n_ranks, r) for r in range(n_ranks)]
    n = n_ranks
    if n % 2 == 0:  # mirror: rank r plays rank N-1-r of the first tree
        return [-1 if (p := _btree_parent(n, n - 1 - r)) == -1 else n - 1 - p for r in range(n)]
    return [-1 if (p := _btree_parent(n, (r - 1) % n)) == -1 else (p + 1) % n for r in range(n)]


def depth(n_ranks: int) -> int:
    """Depth of the tree: ceil(log2 N) edges from the root to the deepest leaf."""
    return math.ceil(math.log2(n_ranks)) if n_ranks > 1 else 0


def _heights(parents: list[int]) -> list[int]:
    """Height of each rank's subtree (leaves 0)."""
    heights = [0] * len(parents)
    for rank in range(len(parents)):
        node, h = rank, 0
        while parents[node] != -1:
            node, h = parents[node], h + 1
            heights[node] = max(heights[node], h)
    return heights


def _depths(parents: list[int]) -> list[int]:
    out = []
    for rank in range(len(parents)):
        node, d = rank, 0
        while parents[node] != -1:
            node, d = parents[node], d + 1
        out.append(d)
    return out


def all_reduce_transfers(parents: list[int], chunk: int, n_levels: int) -> list[Transfer]:
    """Reduce up the tree then broadcast down; ``n_levels`` is the reduce phase's length in steps."""
    heights, depths = _heights(parents), _depths(parents)
    up = [Transfer(heights[r], r, p, chunk, True) for r, p in enumerate(parents) if p != -1]
    down = [Transfer(n_levels + depths[r] - 1, p, r, chunk, False) for r, p in enumerate(parents) if p != -1]
    return up + down
