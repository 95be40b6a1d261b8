"""Where to put each kind of parallelism on a machine, read from its topology (chapters 01 and 09).

* :func:`nvlink_groups`: the GPUs split into groups whose members are all joined by NVLink, largest first.
  Tensor parallelism all-reduces activations in every layer, so a TP group belongs inside one of them.
  Polynomial for the machines that exist (each NVLink-connected part a clique); a bounded exact search, then
  a greedy one, for anything else, so any matrix the parser accepts is answered in seconds.
* :func:`ring_order`: a ring whose slowest hop is as fast as possible (then whose hops are fastest in sum).
  Every order is as good on an NVSwitch box, and the natural order 0..n-1 is returned there.
* :func:`advice`: both, the ring's expected busbw (:mod:`commlab.topology.bandwidth` gives the rule), and a
  few sentences of plain advice.

>>> from commlab.topology.examples import example
>>> nvlink_groups(example("a40-pcie-8")), ring_order(example("h100-sxm-8"))
(((0, 1), (2, 3), (4, 5), (6, 7)), (0, 1, 2, 3, 4, 5, 6, 7))
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

from commlab.topology.bandwidth import HopBandwidth, hop_bandwidth
from commlab.topology.model import Topology, nvlink_count

_PCIE_SCORE = {"PIX": 6, "PXB": 5, "PHB": 4, "NODE": 3, "SYS": 2, "SOC": 2}
_BRUTE_FORCE_MAX = 9  # (n-1)! orders: 40320 at n = 9, instant; larger machines get a greedy ring
#: Search steps of the exact NVLink grouping before it gives way to a greedy one (well under a second).
_SEARCH_BUDGET = 20_000


def _score(relation: str) -> int:
    """Orders relations by speed: any NVLink beats PCIe, more links beat fewer."""
    return 100 + nvlink_count(relation) if nvlink_count(relation) else _PCIE_SCORE.get(relation, 0)


def nvlink_groups(topo: Topology) -> tuple[tuple[int, ...], ...]:
    """A partition of the GPUs into NVLink-connected groups, largest first (ties: lowest GPU numbers)."""
    return nvlink_grouping(topo)[0]


def _adjacency(topo: Topology) -> dict[int, set[int]]:
    n = topo.n_gpus
    return {v: {u for u in range(n) if u != v and nvlink_count(topo.relation(v, u))} for v in range(n)}


def nvlink_grouping(topo: Topology, budget: int = _SEARCH_BUDGET) -> tuple[tuple[tuple[int, ...], ...], bool]:
    """(groups, exact). Polynomial where the NVLink graph is a union of cliques (NVSwitch boxes, NVLink
    pairs and bridges: each connected part is its group); otherwise the largest clique of what is left, again
    and again, by Bron-Kerbosch with Tomita's pivot and branch and bound, at most ``budget`` search steps in
    all; past the budget the rest is grouped greedily and ``exact`` is False (a maximum clique is NP-hard)."""
    adjacent = _adjacency(topo)
    parts = _components(adjacent)
    if all(all(len(adjacent[v] & p) == len(p) - 1 for v in p) for p in parts):
        return _ordered([tuple(sorted(p)) for p in parts]), True
    left, groups, steps = set(adjacent), [], [budget]
    while left and steps[0] > 0:
        best = _largest_clique(adjacent, left, steps)
        if best is None:
            break
        groups.append(best)
        left -= set(best)
    exact = not left
    groups += _greedy_cliques(adjacent, left)
    return _ordered(groups), exact


def _ordered(groups: list[tuple[int, ...]]) -> tuple[tuple[int, ...], ...]:
    return tuple(sorted(groups, key=lambda g: (-len(g), g)))


def _components(adjacent: dict[int, set[int]]) -> list[set[int]]:
    seen: set[int] = set()
    parts = []
    for start in sorted(adjacent):
        if start in seen:
            continue
        part, todo = {start}, [start]
        while todo:
            for u in adjacent[todo.pop()] - part:
                part.add(u)
                todo.append(u)
        seen |= part
        parts.append(part)
    return parts


def _largest_clique(adjacent: dict[int, set[int]], vertices: set[int], steps: list[int]) -> tuple[int, ...] | None:
    """The largest clique within ``vertices`` (lowest numbers on ties), or None when the budget ran out."""
    best: list[tuple[int, ...]] = [(min(vertices),)]

    def key(clique: tuple[int, ...]) -> tuple:
        return (len(clique), [-i for i in clique])

    def extend(chosen: tuple[int, ...], candidates: set[int], excluded: set[int]) -> bool:
        steps[0] -= 1
        if steps[0] < 0:
            return False
        if not candidates and not excluded:
            if key(tuple(sorted(chosen))) > key(best[0]):
                best[0] = tuple(sorted(chosen))
            return True
        if len(chosen) + len(candidates) < len(best[0]):
            return True  # cannot beat the best one found
        pivot = max(candidates | excluded, key=lambda u: len(adjacent[u] & candidates))
        for v in sorted(candidates - adjacent[pivot]):
            if not extend(chosen + (v,), candidates & adjacent[v], excluded & adjacent[v]):
                return False
            candidates, excluded = candidates - {v}, excluded | {v}
        return True

    return best[0] if extend((), set(vertices), set()) else None


def _greedy_cliques(adjacent: dict[int, set[int]], vertices: set[int]) -> list[tuple[int, ...]]:
    """Cliques grown greedily: the best-connected GPU first, then every GPU linked to all chosen so far."""
    left, groups = set(vertices), []
    while left:
        order = sorted(left, key=lambda v: (-len(adjacent[v] & left), v))
        clique = [order[0]]
        for u in order[1:]:
            if all(u in adjacent[c] for c in clique):
                clique.append(u)
        groups.append(tuple(sorted(clique)))
        left -= set(clique)
    return groups


def ring_order(topo: Topology) -> tuple[int, ...]:
    """A ring over all GPUs maximising (slowest hop, sum of hops); exhaustive up to 9 GPUs, greedy beyond."""
    n = topo.n_gpus
    if n <= 3:
        return tuple(range(n))
    if n > _BRUTE_FORCE_MAX:
        return _greedy_ring(topo)
    best, best_key = tuple(range(n)), _ring_key(topo, tuple(range(n)))
    for rest in itertools.permutations(range(1, n)):
        key = _ring_key(topo, (0,) + rest)
        if key > best_key:
            best, best_key = (0,) + rest, key
    return best


def _ring_key(topo: Topology, order: tuple[int, ...]) -> tuple[int, int]:
    scores = [_score(topo.relation(a, b)) for a, b in zip(order, order[1:] + order[:1])]
    return min(scores), sum(scores)


def _greedy_ring(topo: Topology) -> tuple[int, ...]:
    order, left = [0], set(range(1, topo.n_gpus))
    while left:
        nxt = max(sorted(left), key=lambda j: _score(topo.relation(order[-1], j)))
        order.append(nxt)
        left.remove(nxt)
    return tuple(order)


def _ring_bound(hops: list[HopBandwidth], slowest: HopBandwidth | None) -> float | None:
    """The slowest hop's bandwidth. A hop of unknown bandwidth may be ignored only when it ranks above the
    slowest one by relation: NVLink of an unknown generation against a PCIe bottleneck (every NVLink, bridges
    included, outruns the PCIe slot of its own generation)."""
    if slowest is None or slowest.unidir_GBps is None:
        return None
    unknown = [h for h in hops if h.unidir_GBps is None]
    return slowest.unidir_GBps if all(_score(h.relation) > _score(slowest.relation) for h in unknown) else None


def ring_hops(topo: Topology, order: tuple[int, ...]) -> list[HopBandwidth]:
    """The bandwidth of every hop of a ring, in ring order (the last hop closes the ring)."""
    return [hop_bandwidth(topo, a, b) for a, b in zip(order, order[1:] + order[:1])] if len(order) > 1 else []


@dataclass(frozen=True)
class Advice:
    """What the topology says about placing TP, PP and DP, and what a ring all-reduce can reach."""

    nvlink_groups: tuple[tuple[int, ...], ...]
    ring_order: tuple[int, ...]
    ring_bottleneck: str
    """Relation of the ring's slowest hop ("NV18", "SYS"); "" with fewer than 2 GPUs."""
    ring_busbw_GBps: float | None
    """Upper bound on a ring all-reduce's busbw: the slowest hop per direction; None where unknown."""
    ring_rule: str
    """How ``ring_busbw_GBps`` was worked out."""
    tp_size: int
    """Largest tensor-parallel group that stays on NVLink (1 without NVLink)."""
    sentences: tuple[str, ...]

    def to_text(self) -> str:
        return "\n".join(self.sentences)

    def to_json(self) -> dict:
        out = asdict(self)
        out["nvlink_groups"] = [list(g) for g in self.nvlink_groups]
        out["ring_order"] = list(self.ring_order)
        out["sentences"] = list(self.sentences)
        return out


def advice(topo: Topology) -> Advice:
    """Groups, ring and plain advice for ``topo`` (an empty topology gets advice on what to do instead)."""
    from commlab.topology.sentences import sentences

    (groups, exact), order = nvlink_grouping(topo), ring_order(topo)
    hops = ring_hops(topo, order)
    slowest = min(hops, key=lambda h: (_score(h.relation), h.unidir_GBps or 0.0)) if hops else None
    bw = _ring_bound(hops, slowest)
    tp = len(groups[0]) if groups else 1  # groups of two or more are joined by NVLink
    rule = slowest.rule if slowest else "fewer than two GPUs: no ring"
    said = sentences(topo, groups, order, tp, slowest, bw)
    if not exact:
        said = (f"The NVLink groups of these {topo.n_gpus} GPUs were found greedily: the exact search (a largest "
                f"clique, exponential in the worst case) stopped after {_SEARCH_BUDGET} steps, so a larger group "
                "may exist.",) + tuple(said)
    return Advice(groups, order, slowest.relation if slowest else "", bw, rule, tp, said)
