"""The time of a collective on a cluster, per algorithm and size, with its bottleneck: ``cluster_cost``.

``cluster_cost(op, nbytes, cluster, nodes, algos="all")`` runs every algorithm of
:mod:`~commlab.cluster.algorithms` that fits the op on ``nodes`` nodes of the cluster, vectorised over the
sizes (``nbytes`` is nccl-tests' ``size`` column: the whole buffer for all-gather and reduce-scatter).
Each :class:`AlgoCost` holds the time, nccl-tests' algbw and busbw, and per size the bottleneck as
``"level: link"`` (``latency``, ``nvlink``, ``nvswitch``, ``nic``, ``leaf`` or ``pod`` uplinks); an algorithm that
cannot run there says why. ``nccl_pick`` is what NCCL would run by default (CollNet off): predict's choice.
:func:`sweep_nodes` repeats it over node counts.

>>> c = cluster_cost("all_reduce", [2**30], "dgx-h100-ndr", 2048)
>>> c.n_ranks, sorted(c.available())[:3]
(16384, ['collnet-chain', 'collnet-direct', 'flat-ring'])
>>> c.nccl_pick, c.fastest()                          # NCCL's default, and SHARP on this fabric
(('nvls-tree',), ('nvls-sharp',))
>>> round(float(c["flat-ring"].time_s[0]) * 1e3)         # ms: one ring through 16,384 GPUs
195
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from commlab.cluster import analytic, nccl_algos, sharp
from commlab.cluster.algorithms import FROM_NCCL, check_algos, check_op
from commlab.cluster.levels import Shape
from commlab.cluster.presets import preset
from commlab.cluster.spec import Cluster
from commlab.cluster.terms import Terms
from commlab.collectives import busbw_factor
from commlab.errors import CommlabError

_ANALYTIC = {"flat-ring": analytic.flat_ring, "rabenseifner": analytic.rabenseifner, "pat": analytic.pat,
             "nvls-ring": analytic.nvls_ring, "direct": analytic.direct}


@dataclass(frozen=True)
class AlgoCost:
    """One algorithm's time per size on one cluster shape; ``why`` instead when it cannot run there."""

    algo: str
    op: str
    n_ranks: int
    nbytes: np.ndarray
    time_s: np.ndarray | None
    bottleneck: tuple[str, ...] | None
    why: str | None = None

    @property
    def available(self) -> bool:
        return self.time_s is not None

    @property
    def ran_time_s(self) -> np.ndarray:
        """``time_s`` of an algorithm that runs here (``available``); a CommlabError saying why for one that does
        not."""
        if self.time_s is None:
            raise CommlabError(f"{self.algo} does not run {self.op} here: {self.why}")
        return self.time_s

    @property
    def ran_bottleneck(self) -> tuple[str, ...]:
        """``bottleneck`` of an algorithm that runs here (``available``); a CommlabError saying why for one that
        does not."""
        if self.bottleneck is None:
            raise CommlabError(f"{self.algo} does not run {self.op} here: {self.why}")
        return self.bottleneck

    @property
    def algbw_GBps(self) -> np.ndarray | None:
        if self.time_s is None:
            return None
        return np.where(self.time_s > 0, self.nbytes / np.maximum(self.time_s, 1e-30) / 1e9, 0.0)

    @property
    def busbw_GBps(self) -> np.ndarray | None:
        bw = self.algbw_GBps
        return None if bw is None else bw * busbw_factor(self.op, self.n_ranks)

    def bottleneck_levels(self) -> tuple[str, ...] | None:
        return None if self.bottleneck is None else tuple(b.split(":", 1)[0] for b in self.bottleneck)


@dataclass(frozen=True)
class ClusterCost:
    """Every requested algorithm's :class:`AlgoCost` for one op on ``nodes`` nodes of ``cluster``."""

    op: str
    cluster: Cluster
    nodes: int
    shape: Shape
    nbytes: np.ndarray
    algos: Mapping[str, AlgoCost]
    nccl_pick: tuple[str, ...] | None
    """Per size, the algorithm NCCL picks by default (predict's choice; CollNet off), None where NCCL's tuner
    does not cost the op."""

    @property
    def n_ranks(self) -> int:
        return self.shape.gpus

    def __getitem__(self, algo: str) -> AlgoCost:
        return self.algos[algo]

    def available(self) -> tuple[str, ...]:
        return tuple(a for a, c in self.algos.items() if c.available)

    def fastest(self) -> tuple[str, ...]:
        """Per size, the fastest available algorithm."""
        names = self.available()
        if not names:
            raise CommlabError(f"no algorithm runs {self.op} on {self.nodes} nodes of {self.cluster.name}")
        stack = np.vstack([self.algos[a].ran_time_s for a in names])
        return tuple(names[i] for i in np.argmin(stack, axis=0))


def _resolve(cluster: Cluster | str) -> Cluster:
    return cluster if isinstance(cluster, Cluster) else preset(cluster)


def _sizes(nbytes) -> np.ndarray:
    s = np.atleast_1d(np.asarray(nbytes, dtype=float))
    if s.ndim != 1 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise CommlabError(f"nbytes must be sizes > 0 (one or a list), got {nbytes!r}")
    return s


def _nccl_inputs(op: str, shape: Shape, s: np.ndarray):
    from commlab.tuner.predict import TUNED_OPS, nccl_tuning_table, predict

    if op not in TUNED_OPS:
        return None, None
    return predict(op, s, shape.machine), nccl_tuning_table(op, shape.machine, realized=True)


def _one(algo: str, op: str, shape: Shape, s: np.ndarray, nccl) -> Terms | str:
    """Terms of one algorithm, or the reason it cannot run."""
    prediction, table = nccl
    if algo in nccl_algos.NCCL_OF:
        why = nccl_algos.why_not(algo, op, shape, table)
        return why or nccl_algos.nccl_terms(algo, op, shape, s, prediction, table)
    if algo in ("collnet-direct", "collnet-chain", "nvls-sharp"):
        return sharp.why_not(algo, op, shape) or sharp.sharp_terms(algo, op, shape, s)
    if algo == "nvls-ring" and not shape.machine.has_nvls:
        return "needs NVLink SHARP: an NVSwitch of H100 or later"
    return _ANALYTIC[algo](op, shape, s)


def cluster_cost(op: str, nbytes, cluster: Cluster | str, nodes: int, algos="all") -> ClusterCost:
    """Time, busbw and bottleneck of ``op`` per algorithm and size (see the module docstring)."""
    op = check_op(op)
    c = _resolve(cluster)
    shape = Shape.of(c, nodes)
    if shape.gpus < 2:
        raise CommlabError(f"a collective needs at least 2 GPUs; {nodes} node(s) of {c.name} have {shape.gpus}")
    names = check_algos(op, algos)
    s = _sizes(nbytes)
    nccl = _nccl_inputs(op, shape, s)
    words = shape.describe_links()
    out = {}
    for algo in names:
        got = _one(algo, op, shape, s, nccl)
        if isinstance(got, str):
            out[algo] = AlgoCost(algo, op, shape.gpus, s, None, None, got)
        else:
            out[algo] = AlgoCost(algo, op, shape.gpus, s, got.time_s, got.bottleneck(lambda lv: words.get(lv, lv)))
    pick = None if nccl[0] is None else tuple(FROM_NCCL[str(a)] for a in np.atleast_1d(nccl[0].algo))
    return ClusterCost(op, c, shape.nodes, shape, s, MappingProxyType(out), pick)


def sweep_nodes(op: str, nbytes, cluster: Cluster | str, nodes_list, algos="all") -> dict[str, np.ndarray]:
    """{algorithm: time_s [len(nodes_list), len(nbytes)]}, NaN where the algorithm cannot run at that size."""
    c = _resolve(cluster)
    results = [cluster_cost(op, nbytes, c, n, algos) for n in nodes_list]
    names = results[0].algos.keys()
    nan = np.full(results[0].nbytes.shape, np.nan)
    return {a: np.vstack([r[a].ran_time_s if r[a].available else nan for r in results]) for a in names}
