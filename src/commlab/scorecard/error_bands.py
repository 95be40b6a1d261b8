"""Honest error bars: how far the prediction was from real runs it was never tuned on, by kind of run.

A prediction's own arithmetic says nothing of how wrong it is. What does is the record of the model against real
nccl-tests runs that no constant or choice of commlab was made on (the held-out runs of
``tests/data/nccl_heldout``). This module measures that record per kind of run, a machine class
(:func:`machine_class`: one node or several, NVSwitch, NVLink without a switch, PCIe, one GPU a node) times a
generation of NCCL's tuner (:mod:`commlab.tuner.generations`), and keeps it in a data table,
``commlab/data/nccl/error_bands.json``: per kind, the runs, the rows, and the ratio measured / predicted at its
10th, 50th and 90th percentiles over the rows. A prediction then carries the band of its kind: the measured time
was between ``p10 x predicted`` and ``p90 x predicted`` on 80% of the rows of those runs. Where no held-out run of
its kind exists, or the machine, node count or sizes lie outside what the runs covered, it says so
(:func:`band_for`) instead of inventing a band.

``benchmarks/tuner_error_bands.py`` measures the table from the held-out runs and writes it;
``tests/unit/test_heldout_logs.py`` measures it again and holds the file to it.

>>> band, outside = band_for(Machine("a100", 8), "2.4-2.8")
>>> band is not None and band.kind, outside
('one node, NVSwitch', [])
>>> band_for(Machine("l40s", 4), "2.24-2.30")[1][0]   # doctest: +ELLIPSIS
'no held-out run of this kind (one node, PCIe x NCCL 2.24-2.30) was checked: ...'
"""
from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from commlab.tuner.machine import Machine
from commlab.errors import CommlabError

#: the percentiles of measured / predicted a band reports
PERCENTILES = (10, 50, 90)
#: the share of the described held-out runs the predicted goals are to hold on, uncalibrated
HELD_OUT_SHARE_GOAL = 2 / 3


def machine_class(m: Machine) -> str:
    """The kind of machine a band is measured for: where a collective's bytes go."""
    where = "one node" if m.nodes == 1 else "several nodes"
    if m.gpus_per_node == 1:
        return f"{where}, 1 GPU a node"
    link = "NVSwitch" if m.has_nvswitch else "NVLink without NVSwitch" if m.has_nvlink else "PCIe"
    return f"{where}, {link}"


@dataclass(frozen=True)
class Band:
    """The record of one kind of run: measured / predicted over the held-out rows of that kind."""

    kind: str
    generation: str
    runs: tuple[str, ...]
    n_rows: int
    ratio: tuple[float, float, float]
    """measured / predicted at :data:`PERCENTILES`"""
    run_median_errors: tuple[float, ...]
    """per run, the median of |predicted / measured - 1|"""
    gpus: tuple[str, ...]
    max_nodes: int
    min_bytes: float
    max_bytes: float

    def to_json(self) -> dict:
        return {"kind": self.kind, "generation": self.generation, "runs": list(self.runs), "rows": self.n_rows,
                "measured_over_predicted": dict(zip((f"p{p}" for p in PERCENTILES), self.ratio)),
                "run_median_errors": list(self.run_median_errors), "gpus": list(self.gpus),
                "max_nodes": self.max_nodes, "min_bytes": self.min_bytes, "max_bytes": self.max_bytes}

    @classmethod
    def from_json(cls, d: dict) -> Band:
        try:
            return cls(d["kind"], d["generation"], tuple(d["runs"]), int(d["rows"]),
                       tuple(float(d["measured_over_predicted"][f"p{p}"]) for p in PERCENTILES),  # type: ignore
                       tuple(float(x) for x in d["run_median_errors"]), tuple(d["gpus"]), int(d["max_nodes"]),
                       float(d["min_bytes"]), float(d["max_bytes"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise CommlabError(f"error_bands.json: not a band ({type(exc).__name__}: {exc}): {d!r}") from None

    def interval_us(self, time_us) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) time, us, for predicted ``time_us``: the band's p10 and p90."""
        t = np.asarray(time_us, dtype=float)
        return t * self.ratio[0], t * self.ratio[2]

    def describe(self) -> str:
        lo, mid, hi = self.ratio
        return (f"on {len(self.runs)} held-out run(s) of this kind ({self.kind} x NCCL {self.generation}; "
                f"{self.n_rows} rows) the measured time was {lo:.2f}-{hi:.2f}x the predicted (10th-90th "
                f"percentile, median {mid:.2f}x)")


@dataclass(frozen=True)
class HeldOutRun:
    """One held-out run: its name, the parsed log's rows, the described machine and its prediction."""

    name: str
    machine: Machine
    generation: str
    nbytes: np.ndarray
    measured_us: np.ndarray
    predicted_us: np.ndarray


def measure_bands(runs: Iterable[HeldOutRun]) -> list[Band]:
    """The bands of these runs, one per (machine class, generation), sorted by kind."""
    groups: dict[tuple[str, str], list[HeldOutRun]] = {}
    for r in runs:
        groups.setdefault((machine_class(r.machine), r.generation), []).append(r)
    bands = []
    for (kind, gen), rs in sorted(groups.items()):
        ratio = np.concatenate([r.measured_us / r.predicted_us for r in rs])
        bands.append(Band(
            kind, gen, tuple(r.name for r in rs), int(ratio.size),
            tuple(round(float(np.percentile(ratio, p)), 4) for p in PERCENTILES),  # type: ignore[arg-type]
            tuple(round(float(np.median(np.abs(r.predicted_us / r.measured_us - 1.0))), 4) for r in rs),
            tuple(sorted({r.machine.gpu for r in rs})), max(r.machine.nodes for r in rs),
            float(min(r.nbytes.min() for r in rs)), float(max(r.nbytes.max() for r in rs))))
    return bands


@cache
def _stored() -> dict:
    path = resources.files("commlab") / "data" / "nccl" / "error_bands.json"
    return json.loads(path.read_text(encoding="utf-8"))


def stored_bands() -> tuple[Band, ...]:
    """The table ``commlab/data/nccl/error_bands.json``."""
    return tuple(Band.from_json(d) for d in _stored()["bands"])


def held_out_goals() -> dict:
    """How many described held-out runs the prediction meets its goals on (median <= 25%, >= 64 MiB <= 15%), as the
    table records it: ``{"runs", "met", "missed"}``."""
    goals = _stored()["held_out_goals"]
    return {"runs": int(goals["runs"]), "met": int(goals["met"]), "missed": list(goals["missed"])}


def calibration_results() -> dict:
    """The calibration pairs of the held-out runs, before and after ``--calibrate-from`` (median relative time error
    over all sizes), how many of the goal's pairs (a 1-2 node run calibrating 4-32 nodes) meet its median, as
    benchmarks/tuner_heldout.py last measured them."""
    return copy.deepcopy(_stored()["calibration"])


def goals_of(runs: Iterable[HeldOutRun], median_goal: float, bw_goal: float, bw_from_bytes: float) -> dict:
    """``{"runs", "met", "missed"}`` of these runs against the predicted goals."""
    runs = list(runs)
    missed = []
    for r in runs:
        e = np.abs(r.predicted_us / r.measured_us - 1.0)
        bw = e[r.nbytes >= bw_from_bytes]
        if not (np.median(e) <= median_goal and (bw.size == 0 or np.median(bw) <= bw_goal)):
            missed.append(r.name)
    return {"runs": len(runs), "met": len(runs) - len(missed), "missed": missed}


def band_for(m: Machine, generation: str, nbytes=None) -> tuple[Band | None, list[str]]:
    """The band of ``m``'s kind under ``generation``, and what about this prediction lies outside what its runs
    checked (another GPU, more nodes, sizes beyond theirs); no band where no run of its kind was checked."""
    kind = machine_class(m)
    band = next((b for b in stored_bands() if b.kind == kind and b.generation == generation), None)
    if band is None:
        kinds = sorted({f"{b.kind} x {b.generation}" for b in stored_bands()})
        return None, [f"no held-out run of this kind ({kind} x NCCL {generation}) was checked: the prediction has no "
                      f"measured error band (the kinds checked: {'; '.join(kinds)})"]
    outside = []
    if m.gpu not in band.gpus:
        outside.append(f"the band's runs were on {', '.join(band.gpus)}, not {m.gpu}")
    if m.nodes > band.max_nodes:
        outside.append(f"the band's runs had at most {band.max_nodes} node(s), this machine {m.nodes}")
    if nbytes is not None:
        s = np.asarray(nbytes, dtype=float)
        s = s[s > 0]
        if s.size and (s.min() < band.min_bytes or s.max() > band.max_bytes):
            outside.append(f"the band's runs covered {band.min_bytes:.0f}-{band.max_bytes:.0f} bytes; this log "
                           f"{s.min():.0f}-{s.max():.0f}")
    return band, outside


def band_json(m: Machine, generation: str, nbytes=None) -> dict:
    """The ``error_band`` object of a prediction's JSON."""
    band, outside = band_for(m, generation, nbytes)
    return {"kind": machine_class(m), "generation": generation, "band": band.to_json() if band else None,
            "outside_checked": outside,
            "measured_on": "held-out nccl-tests runs no constant or choice of the model was made on"}
