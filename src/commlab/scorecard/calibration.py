"""A log's prediction with the tuner of its own NCCL generation, optionally calibrated on a small run of the same
cluster, and the error band of its kind: what ``commlab nccl-tests``, ``commlab scorecard`` and ``commlab cluster
cost`` print with ``--machine`` and ``--calibrate-from SMALL_LOG``.

* the generation: the NCCL version the log names (``NCCL version 2.18.5``, ``nccl-library=22903``), or the era its
  format implies, with a note saying what was assumed (:func:`commlab.tuner.generations.generation_for`);
* the calibration (:mod:`commlab.tuner.calibrate`): fitted on ``SMALL_LOG`` with the target's description at the
  small run's node count; never on the log it predicts; a run of another GPU, network kind or NIC port stops with
  what differs, another collective or NCCL version goes on and says so;
* the band (:mod:`commlab.scorecard.error_bands`): measured on held-out runs of the same kind, or a note that none
  was checked.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from commlab.errors import CommlabError
from commlab.scorecard.error_bands import HeldOutRun, band_json
from commlab.tuner.calibrate import (P2P_OPS, CalibrationCheck, CalibrationFit, check_pair, digest_of,
                                     fit_calibration, fit_nic_from_p2p, machine_at, not_carried, predict_calibrated,
                                     refuse_own_log)
from commlab.tuner.generations import GenerationChoice, generation_for, replay
from commlab.tuner.launch import LaunchShape
from commlab.tuner.machine import Machine
from commlab.tuner.predict import Prediction
from commlab.tuner.settings import TUNED_OPS


#: the calibration goal: calibrated on a run of CALIBRATION_NODES nodes, the prediction of the same cluster at
#: CALIBRATED_TARGET_NODES (inclusive) within this median relative time error over all sizes
CALIBRATED_MEDIAN_GOAL = 0.15
#: the share of the goal's pairs that are to meet CALIBRATED_MEDIAN_GOAL
CALIBRATED_PAIRS_SHARE_GOAL = 0.9
CALIBRATION_NODES = (1, 2)
CALIBRATED_TARGET_NODES = (4, 32)


def in_calibration_goal(calibration_nodes: int, target_nodes: int) -> bool:
    """Whether a calibration pair is one the goal speaks of (a 1- or 2-node run calibrating 4 to 32 nodes)."""
    lo, hi = CALIBRATED_TARGET_NODES
    return calibration_nodes in CALIBRATION_NODES and lo <= target_nodes <= hi


def log_generation(log, text: str) -> GenerationChoice:
    """The generation of NCCL's tuner a parsed log is replayed with (its version, else its format's era)."""
    from commlab.nccl.debuglog import nccl_version

    return generation_for(nccl_version(text or ""), getattr(log, "format", None))


_DEVICE = re.compile(r"\bdevice\s+\d+\s+\[[^\]]*\]\s+(?P<name>[^\n]+)")


def gpus_named(text: str) -> set[str]:
    """The GPUs (commlab's names, :data:`commlab.hardware.gpus.GPUS`) a log's ``# Rank ... device 0 [0x..] NAME`` lines
    name: the longest GPU name inside each device name, letters and digits only (``NVIDIA H100 80GB HBM3`` -> h100,
    ``A100-PCIE-40GB`` -> a100-pcie)."""
    from commlab.hardware.gpus import GPUS

    keys = sorted(GPUS, key=len, reverse=True)
    squash = lambda x: re.sub(r"[^a-z0-9]", "", x.lower())                 # noqa: E731
    found = set()
    for m in _DEVICE.finditer(text or ""):
        name = squash(m.group("name"))
        hit = next((k for k in keys if squash(k) in name), None)
        if hit:
            found.add(hit)
    return found


@dataclass(frozen=True)
class SmallRun:
    """A calibration fitted on a small run, with the run's generation: what ``--calibrate-from`` reads."""

    fit: CalibrationFit
    choice: GenerationChoice
    gpus: frozenset[str] = frozenset()
    """The GPUs the small run's device lines name (empty where it has none)."""

    def to_json(self, check: CalibrationCheck | None = None) -> dict:
        out = self.fit.to_json()
        out["nccl"] = self.choice.to_json()
        out["differs"] = list(check.differences) if check else []
        out["went_on"] = True if check is None else check.went_on
        return out


def calibrate_from_log(path, text: str, machine: Machine) -> SmallRun:
    """Fit a calibration on the log ``text`` (read from ``path``) for a cluster described by ``machine`` (its node
    count becomes the small run's)."""
    from commlab.nccl.parse import parse_log
    from commlab.nccl.debuglog import forced_settings
    from commlab.tuner.settings import apply_forced

    where = f"the calibration log {str(path)!r}"
    log = parse_log(text)
    if not log.rows:
        raise CommlabError(f"{where} has no nccl-tests table rows: it is too short to calibrate")
    if log.collective not in TUNED_OPS + P2P_OPS:
        raise CommlabError(f"{where} is {log.collective}, which NCCL's tuner does not model: calibrate on one of "
                           f"{', '.join(TUNED_OPS)}, or on a {' or '.join(P2P_OPS)} run across nodes (what a NIC "
                           f"delivers)")
    m = machine_at(machine, log.n_ranks, where)
    if log.collective in P2P_OPS:
        rows = [(r.size_bytes, r.fastest.time_us) for r in log.rows if r.size_bytes > 0]
        s, t = (np.array(rows, dtype=float).T if rows else (np.array([]), np.array([])))
        choice = log_generation(log, text)
        fit = fit_nic_from_p2p(log.collective, s, t, m, source=Path(str(path)).name, digest=digest_of(text))
        return SmallRun(replace(fit, generation=choice.generation.name), choice, frozenset(gpus_named(text)))
    settings = forced_settings(text)
    if settings:
        m = apply_forced(replace(m, algo=None, proto=None, nvls=None), settings)
    choice = log_generation(log, text)
    rows = [(r.size_bytes, r.fastest.time_us) for r in log.rows if r.size_bytes > 0]
    s, t = (np.array(rows, dtype=float).T if rows else (np.array([]), np.array([])))
    shape = LaunchShape.from_log(log)
    fit = fit_calibration(log.collective, s, t, m, shape.gpus_per_thread if shape else 1, choice.generation,
                          source=Path(str(path)).name, digest=digest_of(text))
    return SmallRun(fit, choice, frozenset(gpus_named(text)))


def read_small_run(path: str, machine: Machine | None) -> SmallRun:
    """``--calibrate-from PATH`` read and fitted; one clear error for what the user can fix."""
    if machine is None:
        raise CommlabError("--calibrate-from needs --machine DESC: the calibration fits what the description's NICs, "
                           "network and launches really do")
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CommlabError(f"cannot read --calibrate-from {path!r}: {exc.strerror or exc}") from None
    return calibrate_from_log(path, text, machine)


@dataclass(frozen=True)
class LogPrediction:
    """The prediction of one log: the generation, the calibration used and what differed, the band."""

    prediction: Prediction
    choice: GenerationChoice
    small_run: SmallRun | None
    check: CalibrationCheck | None
    error_band: dict
    not_carried: tuple[str, ...] = ()
    """What the calibration could not carry to this log (a 1-node run for a log across nodes:
    :func:`commlab.tuner.calibrate.not_carried`)."""

    def notes(self) -> list[str]:
        out = []
        if self.choice.assumed:
            out.append(self.choice.why)
        if self.check is not None and self.check.note():
            out.append(f"--calibrate-from: {self.check.note()}")
        out += [f"--calibrate-from does not carry {line}" for line in self.not_carried]
        out += self.error_band["outside_checked"]
        return out

    def text_lines(self) -> list[str]:
        g = self.choice.generation
        out = [f"  tuner         NCCL {g.name} ({g.tag} {g.source}): {self.choice.why}"]
        if self.small_run is not None:
            out += ["  " + line for line in self.small_run.fit.text_lines()]
            if self.check is not None and self.check.note():
                out.append(f"  differs       {self.check.note()}")
            out += [f"  not carried   {line}" for line in self.not_carried]
        band = self.error_band.get("band")
        if band is not None:
            r = band["measured_over_predicted"]
            out.append(f"  error band    measured {r['p10']:.2f}-{r['p90']:.2f}x the predicted (10th-90th "
                       f"percentile, median {r['p50']:.2f}x) on {len(band['runs'])} held-out run(s) of this kind "
                       f"({band['kind']} x NCCL {band['generation']})"
                       + (" (uncalibrated)" if self.small_run is not None else ""))
        out += [f"  outside       {note}" for note in self.error_band["outside_checked"]]
        return out

    def to_json(self) -> dict:
        lo, hi = self.band_interval_us()
        cal = self.small_run.to_json(self.check) if self.small_run else None
        if cal is not None:
            cal["not_carried"] = list(self.not_carried)
        return {"generation": self.choice.to_json(),
                "calibration": cal,
                "error_band": dict(self.error_band, time_us_p10=lo, time_us_p90=hi)}

    def band_interval_us(self) -> tuple[list | None, list | None]:
        band = self.error_band.get("band")
        if band is None:
            return None, None
        t = np.asarray(self.prediction.time_s, dtype=float) * 1e6
        r = band["measured_over_predicted"]
        return [float(x) for x in t * r["p10"]], [float(x) for x in t * r["p90"]]


def predict_log(log, text: str, nbytes, machine: Machine, small_run: SmallRun | None = None) -> LogPrediction:
    """Predict a parsed log's rows (sizes ``nbytes``) on ``machine`` (the log's forced settings applied) with the
    generation of its NCCL and the run's launch shape; with ``small_run``, calibrated (refusing the log it was fitted
    on, and a run of another cluster)."""
    choice = log_generation(log, text)
    launch = LaunchShape.from_log(log)
    s = np.asarray(nbytes, dtype=float)
    check = None
    if small_run is None:
        p = replay(log.collective, s, machine, choice.generation, launch)
    else:
        refuse_own_log(small_run.fit, text, "the log")
        named = sorted(small_run.gpus - {machine.gpu})  # the small run's own device lines name another GPU
        check = check_pair(small_run.fit.machine, small_run.fit.collective, small_run.choice, machine, log.collective,
                           choice, cal_gpu=named[0] if named else None)
        if not check.went_on:
            raise CommlabError(f"--calibrate-from {small_run.fit.source}: {check.note()} (a calibration carries one "
                               f"cluster's NICs, hop and launches to another size of the same cluster)")
        p = predict_calibrated(log.collective, s, machine, small_run.fit.calibration,
                               launch.gpus_per_thread if launch else 1, choice.generation, launch)
        gaps = not_carried(small_run.fit, log.collective, machine, p)
        return LogPrediction(p, choice, small_run, check, band_json(machine, choice.generation.name, s), gaps)
    return LogPrediction(p, choice, small_run, check, band_json(machine, choice.generation.name, s))


def held_out_run(name: str, text: str, machine: Machine) -> HeldOutRun | None:
    """Predict one held-out log as ``commlab nccl-tests --machine`` does (its forced settings, its launch shape,
    the generation of its NCCL version); None for a collective NCCL's tuner does not model."""
    from commlab.nccl.parse import parse_log
    from commlab.nccl.debuglog import forced_settings
    from commlab.tuner.settings import apply_forced

    log = parse_log(text)
    if log.collective not in TUNED_OPS:
        return None
    settings = forced_settings(text)
    m = apply_forced(machine, settings) if settings else machine
    rows = [(r.size_bytes, r.fastest.time_us) for r in log.rows if r.size_bytes > 0]
    s, t = np.array(rows, dtype=float).T
    p = predict_log(log, text, s, m)
    return HeldOutRun(name, m, p.choice.generation.name, s, t, p.prediction.time_s * 1e6)
