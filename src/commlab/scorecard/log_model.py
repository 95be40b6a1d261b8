"""Both models applied to one parsed nccl-tests log, row by row: what ``commlab nccl-tests`` reports.

Per row: ``model_time_us`` (the protocol-aware fit of this log), ``regime`` (the fitted regime's protocol
attribution), ``chosen`` (what NCCL chose: from the log's NCCL_DEBUG TUNING lines when it has them, else NCCL's pick by
the predictive model when a machine is given, else the fitted regime's protocol; ``source`` says which:
``nccl_debug``, ``nccl_tuning_table``, ``predicted`` or ``model``) and, with a machine, ``predicted_time_us`` and
``predicted_algo`` / ``predicted_proto`` (NCCL's pick by :mod:`commlab.tuner.predict`). Rows of size 0
(nccl-tests times an empty call) get nulls. :func:`machine_for_log` is the described machine with what the log
forces (NCCL_ALGO, NCCL_PROTO, ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from commlab.cost.protocol_fit import ProtocolFit, fit_protocol_model, relative_errors
from commlab.errors import CommlabError
from commlab.nccl.debuglog import forced_settings, nccl_version
from commlab.tuner.machine import Machine
from commlab.tuner.generations import generation_note
from commlab.tuner.settings import apply_forced

if TYPE_CHECKING:                                   # scorecard.calibration is imported where it is used
    from commlab.scorecard.calibration import LogPrediction


def machine_for_log(machine: Machine | None, text: str) -> tuple[Machine | None, str]:
    """``machine`` with what the log's text forces (:func:`commlab.nccl.debuglog.forced_settings`,
    :func:`commlab.tuner.settings.apply_forced`), and a note saying what was applied and whether the log's NCCL is
    replayed with an older generation of NCCL's tuner (:func:`commlab.tuner.generations.generation_note`); "" when
    there is nothing to say, or no machine."""
    if machine is None:
        return None, ""
    settings = forced_settings(text)
    forced = apply_forced(machine, settings) if settings else machine
    notes = [generation_note(nccl_version(text))]
    if forced != machine:
        shown = ", ".join(f"{k}={v}" for k, v in settings.items())
        notes.insert(0, f"the log sets {shown}: NCCL considers only what it leaves on ({forced.describe()})")
    return forced, "; ".join(n for n in notes if n)


@dataclass
class LogModelReport:
    fit: ProtocolFit | None
    fit_problem: str | None
    machine: Machine | None
    prediction_problem: str | None
    rows: list[dict]
    errors: np.ndarray
    """|fitted / measured - 1| over the rows fitted."""
    predicted_errors: np.ndarray
    choice_source: str
    log_prediction: LogPrediction | None = None
    """The :class:`commlab.scorecard.calibration.LogPrediction` behind the predicted column (its generation,
    calibration and error band), or None."""

    def model_json(self) -> dict | None:
        if self.fit is None:
            return {"kind": "protocol-aware fit", "params": None, "error": self.fit_problem}
        return {"kind": "protocol-aware fit", "params": self.fit.params, "n_params": len(self.fit.params),
                "regimes": [{"label": r.label, "from_bytes": r.first_nbytes, "alpha_us": r.alpha_s * 1e6,
                             "bw_GBps": None if np.isinf(r.bw_GBps) else r.bw_GBps, "rows": r.n_rows}
                            for r in self.fit.regimes],
                "median_error": float(np.median(self.errors)), "p90_error": float(np.percentile(self.errors, 90)),
                "measured": "the faster of out-of-place and in-place time", "choice_source": self.choice_source,
                "error": None}

    def prediction_json(self) -> dict | None:
        if self.machine is None:
            return None
        e = self.predicted_errors
        out = {"machine": self.machine.describe(), "error": self.prediction_problem,
               "median_error": float(np.median(e)) if e.size else None}
        if self.log_prediction is not None:
            out.update(self.log_prediction.to_json())
        return out

    def text_lines(self) -> list[str]:
        if self.fit is None:
            out = [f"model           not fitted: {self.fit_problem}"]
        else:
            out = [f"model           {len(self.fit.regimes)} regime(s), {len(self.fit.params)} numbers; error "
                   f"median {100 * np.median(self.errors):.1f}%, p90 {100 * np.percentile(self.errors, 90):.1f}% "
                   f"(the faster of out-of-place and in-place, per size)"]
            out += [f"  regime        {line}" for line in self.fit.describe()]
            if self.choice_source.startswith("nccl"):
                out.append(f"  NCCL's choice per row: from the log's NCCL_DEBUG lines ({self.choice_source})")
        if self.machine is not None:
            if self.prediction_problem:
                out.append(f"predicted       {self.machine.describe()}: {self.prediction_problem}")
            else:
                e = self.predicted_errors
                out.append(f"predicted       {self.machine.describe()}: median error {100 * np.median(e):.1f}%")
            if self.log_prediction is not None:
                out += self.log_prediction.text_lines()
        return out


def _fit(s: np.ndarray, t_us: np.ndarray) -> tuple[ProtocolFit | None, str | None]:
    try:
        return fit_protocol_model(s, t_us * 1e-6), None
    except CommlabError as exc:
        return None, str(exc)


def _prediction(log, s: np.ndarray, machine: Machine | None, text: str = "", small_run=None):
    """The predictive model on the log's sizes: the tuner of the log's NCCL generation, the run's launch shape
    (nccl-tests' -g, read from the log), calibrated with ``small_run`` (:mod:`commlab.scorecard.calibration`)."""
    from commlab.scorecard.calibration import predict_log
    from commlab.tuner.settings import TUNED_OPS

    if machine is None:
        return None, None
    if log.n_ranks != machine.n_ranks:
        raise CommlabError(f"the log has {log.n_ranks} ranks but --machine describes {machine.n_ranks} "
                           f"(gpus_per_node x nodes = {machine.gpus_per_node} x {machine.nodes})")
    if log.collective not in TUNED_OPS:
        return None, f"no prediction: {log.collective} is grouped send/recv, which NCCL's tuner does not model"
    return predict_log(log, text, s, machine, small_run), None


def _chosen(nccl, pred, i: int, label: str | None) -> dict | None:
    """What NCCL used for row i: its own TUNING lines first, then the predictive model's pick (with a machine),
    and no guess from the fitted regime alone (the fit names sizes, not protocols: ``proto`` is null)."""
    if nccl is not None:
        return {"algo": nccl.algo, "proto": nccl.proto, "source": nccl.source}
    if pred is not None:
        return {"algo": str(pred.algo[i]), "proto": str(pred.proto[i]), "source": "predicted"}
    return {"algo": None, "proto": None, "source": "model"} if label else None


def model_report(log, tuning, machine: Machine | None = None, text: str = "", small_run=None) -> LogModelReport:
    """Fit, attribute and (with ``machine``) predict every row of ``log``; ``tuning`` from
    :func:`commlab.nccl.debuglog.read_tuning` on the same ``text`` (whose NCCL version picks the tuner's generation);
    ``small_run`` (:func:`commlab.scorecard.calibration.read_small_run`) calibrates the prediction."""
    from commlab.nccl.debuglog import choices_for_sizes

    sizes = np.array([r.size_bytes for r in log.rows], dtype=float)
    times = np.array([r.fastest.time_us for r in log.rows], dtype=float)   # records.Row.fastest: why
    fit, problem = _fit(sizes, times)
    log_pred, pred_problem = _prediction(log, sizes, machine, text, small_run)
    pred = None if log_pred is None else log_pred.prediction
    nccl = choices_for_sizes(tuning, sizes, log.collective, log.n_ranks) if tuning else [None] * len(sizes)
    sources = {c.source for c in nccl if c is not None} or ({"predicted"} if pred is not None else set())
    rows, used = [], sizes > 0
    for i, s in enumerate(sizes):
        label = str(fit.regime_label(s)) if (fit is not None and s > 0) else None
        model_time_us = float(fit.time_s(s)) * 1e6 if (fit is not None and s > 0) else None
        row: dict[str, object] = {"model_time_us": model_time_us, "regime": label}
        row["chosen"] = _chosen(nccl[i], pred, i, label)
        if machine is not None:
            row["predicted_time_us"] = float(pred.time_s[i]) * 1e6 if pred is not None else None
            row["predicted_algo"] = str(pred.algo[i]) if pred is not None else None
            row["predicted_proto"] = str(pred.proto[i]) if pred is not None else None
        rows.append(row)
    errors = relative_errors(fit.time_s(sizes[used]), times[used] * 1e-6) if fit is not None else np.array([])
    perr = relative_errors(pred.time_s[used], times[used] * 1e-6) if pred is not None else np.array([])
    source = "+".join(sorted(sources)) if sources else "model"
    return LogModelReport(fit, problem, machine, pred_problem, rows, errors, perr, source, log_pred)
