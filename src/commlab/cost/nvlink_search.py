"""NCCL's depth-first channel search on one node whose GPUs are joined pair by pair (no NVSwitch).

``ncclTopoSearchRec`` (NVIDIA/nccl ``src/graph/search.cc:849-882``) builds channels one at a time: a ring visits
every GPU and comes back to the first, a tree's chain visits every GPU; each hop takes ``speed`` GB/s off the
link between the two GPUs in that direction (``followPath``, ``search.cc:80-123``), and a hop over a pair
without enough left fails. The first channel tries the PCI order (0, 1, 2, ...) first, then every start GPU;
each further channel first replays the previous one, and, unless it must be the same (``sameChannels``), tries
every other order. At each GPU the next one is taken by the pair's bandwidth, then counting on from the GPU
(``ncclTopoSearchNextGpuSort``, ``search.cc:253-291``; ``cmpScore``, 201-210). A graph is kept when its
channels x speed beat the best (``ncclTopoCompareGraphs``, ``search.cc:445-469``); every step costs one unit of
a time budget and the search stops at ``maxChannels`` (``search.cc:623-640``). :func:`replay` does the same
in Python, over direct NVLink pairs only (paths through PCIe or a third GPU are left out).

>>> v100 = {(0, 1): 40.0, (1, 2): 40.0, (0, 2): 40.0}       # 3 GPUs, NV2 between each pair
>>> replay(3, v100, 40.0, True, 1, 32, False, 1 << 14, None)[0]   # the triangle, both ways
(2, 40.0, False)
"""
from __future__ import annotations

from dataclasses import dataclass

_PCI, _REPLAY = 1, 2                                      # FORCED_ORDER_PCI, FORCED_ORDER_REPLAY (search.cc:318-319)


@dataclass
class _Dfs:
    """One ncclTopoSearchRec over point-to-point NVLink pairs at one speed (search.cc:621-714, 849-882)."""

    n: int
    pair_bw: dict
    speed: float
    ring: bool
    min_ch: int
    max_ch: int
    same: bool
    time: int
    best: tuple | None                                     # (channels, speed, same) of the best graph so far

    def run(self) -> None:
        self.cap = {}
        for (a, b), bw in self.pair_bw.items():
            self.cap[(a, b)] = self.cap[(b, a)] = bw      # each direction of a link has its bandwidth
        # ncclTopoSearchNextGpuSort (search.cc:253-291): by the pair's bandwidth, then from the GPU onwards
        self.pref = {g: self._order(g) for g in range(self.n)}
        self.channels: list[list[int]] = []
        self._search_rec()

    def _order(self, g: int) -> list[int]:
        peers = [h for h in range(self.n) if (min(g, h), max(g, h)) in self.pair_bw]
        return sorted(peers, key=lambda h: (-int(self.pair_bw[(min(g, h), max(g, h))]), (h - g) % self.n))

    def _search_rec(self) -> None:                        # search.cc:849-882, one node
        if not self.channels:
            self._start(0, _PCI)                           # "Try PCI order first"
        else:
            self._start(self.channels[-1][0], _REPLAY)     # "Also try to replay previous channel"
        if not self.same or not self.channels:
            for g in range(self.n):
                self._start(g, 0)

    def _start(self, g: int, forced: int) -> None:
        self._rec_gpu(g, 0, [], {g}, forced)

    def _try(self, g: int, h: int, step: int, order: list, used: set, forced: int) -> None:
        """ncclTopoSearchTryGpu: take ``speed`` off the pair's link (followPath, search.cc:80-123) and go on."""
        if self.cap.get((g, h), 0.0) < self.speed:
            return
        self.cap[(g, h)] = round(self.cap[(g, h)] - self.speed, 3)               # SUB_ROUND
        used.add(h)
        self._rec_gpu(h, step, order, used, forced)
        used.discard(h)
        self.cap[(g, h)] = round(self.cap[(g, h)] + self.speed, 3)

    def _rec_gpu(self, g: int, step: int, order: list, used: set, forced: int) -> None:
        if self.time <= 0:                                 # search.cc:621-622
            return
        self.time -= 1
        if step == self.n:                                 # a channel is complete (search.cc:624-640)
            self.channels.append(list(order))
            k = len(self.channels)
            if k >= self.min_ch and (self.best is None or k * self.speed > self.best[0] * self.best[1]):
                self.best = (k, self.speed, self.same)
                if k == self.max_ch:
                    self.time = -1
            if k < self.max_ch:
                self._search_rec()
            self.channels.pop()
            return
        order.append(g)
        if step < self.n - 1:
            nxt = ([step + 1] if forced == _PCI else [self.channels[-1][step + 1]] if forced == _REPLAY
                   else [h for h in self.pref[g] if h not in used])
            for h in nxt:
                self._try(g, h, step + 1, order, used, forced)
        elif self.ring:                                    # back to the first GPU (search.cc:697-705)
            first = order[0]
            if self.cap.get((g, first), 0.0) >= self.speed:
                self.cap[(g, first)] = round(self.cap[(g, first)] - self.speed, 3)
                self._rec_gpu(first, self.n, order, used, forced)
                self.cap[(g, first)] = round(self.cap[(g, first)] + self.speed, 3)
        else:
            self._rec_gpu(g, self.n, order, used, forced)  # a chain ends at its last GPU (search.cc:706-709)
        order.pop()


def replay(n: int, pair_bw: dict, speed: float, ring: bool, min_ch: int, max_ch: int, same: bool, budget: int,
           best: tuple | None) -> tuple[tuple | None, int]:
    """One search at ``speed`` over ``pair_bw`` ((a, b) with a < b -> GB/s each way): the best (channels, speed,
    same) found or kept from ``best``, and the time left (-1: ``max_ch`` reached, 0: budget spent)."""
    d = _Dfs(n, pair_bw, speed, ring, min_ch, max_ch, same, budget, best)
    d.run()
    return d.best, d.time
