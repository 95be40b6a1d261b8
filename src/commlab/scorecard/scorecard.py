"""Both models held against real nccl-tests logs: the scorecard of ``commlab scorecard``.

Per log: the rows used (size > 0; the measured time of a size is the faster of its out-of-place and in-place
timings, :attr:`commlab.nccl.records.Row.fastest`: nccl-tests times each size twice, and one disturbed timing
is common in published logs), the fitted model's median and
90th-percentile relative time error (:mod:`commlab.cost.protocol_fit`, fitted to that log), and the predictive
model's median error over all sizes and in the bandwidth regime, sizes >= 64 MiB
(:mod:`commlab.tuner.predict`, from the machine description alone). Every row keeps its size and the three
times, so anyone can recompute the errors. Relative error = ``|model / measured - 1|``.

Goals: fitted median <= 5% and p90 <= 12% on every log of >= 8 rows; predicted median <= 25% and
<= 15% in the bandwidth regime on every log whose machine can be described. The few constants no source gives
were chosen on some of these logs (:func:`chosen_on` names them, from :mod:`commlab.calibration`): there the
predicted error is in-sample.

The cluster model (:mod:`commlab.cluster`) adds a third column on the logs whose run fills whole nodes
of a cluster preset (the multi-node logs 08-13, and 07): per row the time of the algorithm NCCL picks, with the
fabric added, or the ``direct`` model for scatter; goal: median <= 20% in the bandwidth regime.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from commlab.tuner.machine import Machine
from commlab.cost import protocol_fit
from commlab.cost.protocol_fit import ProtocolFit, fit_protocol_model, relative_errors
from commlab.errors import CommlabError

FIT_MEDIAN_GOAL, FIT_P90_GOAL = protocol_fit.MEDIAN_GOAL, protocol_fit.P90_GOAL
PREDICTED_MEDIAN_GOAL, PREDICTED_BW_GOAL = 0.25, 0.15
#: The cluster model's goal on the multi-node logs, in the bandwidth regime.
CLUSTER_BW_GOAL = 0.20
#: The bandwidth regime of the goals: sizes from 64 MiB.
BW_REGIME_NBYTES = 64 * 2**20
#: Logs with fewer rows are scored but the fitted goals do not apply.
GOAL_MIN_ROWS = 8


@dataclass(frozen=True)
class RowScore:
    size_bytes: int
    measured_time_us: float
    """The faster of the row's out-of-place and in-place timings (:func:`measured_points`)."""
    fitted_time_us: float | None
    predicted_time_us: float | None
    regime: str | None
    """The fitted regime the row falls in (its protocol attribution)."""
    predicted_pair: str | None
    """The (algorithm/protocol) the predictive model says NCCL picks."""
    cluster_time_us: float | None = None
    """The cluster model's time (:mod:`commlab.cluster`), where the log's machine is a cluster preset."""
    cluster_algo: str | None = None
    cluster_bottleneck: str | None = None
    measured_column: str = "out_of_place"
    """Which timing of the row :attr:`measured_time_us` is: ``out_of_place`` or ``in_place``."""


@dataclass(frozen=True)
class LogScore:
    name: str
    collective: str | None
    n_ranks: int | None
    fit: ProtocolFit | None
    fit_problem: str | None
    """Why there is no fit (too few rows, ...), else None."""
    machine: Machine | None
    machine_note: str
    """Where the machine description comes from, or why there is none / no prediction."""
    rows: tuple[RowScore, ...]
    cluster: str | None = None
    """The cluster preset and node count the cluster model used ("aws-p5 x 2"), or None."""
    cluster_note: str = ""
    repeat_spread_p90: float | None = None
    """How far the log repeats itself: the 90th percentile over its sizes of ``slower / faster - 1`` between the
    out-of-place and in-place timings (None without in-place timings). Where it is above the fitted goal, the
    log's own noise is larger than what the goal asks of a model."""
    prediction_info: dict | None = None
    """The prediction's generation of NCCL's tuner, its calibration and its error band
    (:meth:`commlab.scorecard.calibration.LogPrediction.to_json`), or None without a prediction."""

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    def _errors(self, attr: str, min_nbytes: float = 0.0) -> np.ndarray:
        vals = [(getattr(r, attr), r.measured_time_us) for r in self.rows
                if getattr(r, attr) is not None and r.size_bytes >= min_nbytes]
        if not vals:
            return np.array([])
        model, meas = np.array(vals).T
        return relative_errors(model, meas)

    @property
    def fitted_median(self) -> float | None:
        e = self._errors("fitted_time_us")
        return float(np.median(e)) if e.size else None

    @property
    def fitted_p90(self) -> float | None:
        e = self._errors("fitted_time_us")
        return float(np.percentile(e, 90)) if e.size else None

    @property
    def predicted_median(self) -> float | None:
        e = self._errors("predicted_time_us")
        return float(np.median(e)) if e.size else None

    @property
    def predicted_bw_median(self) -> float | None:
        e = self._errors("predicted_time_us", BW_REGIME_NBYTES)
        return float(np.median(e)) if e.size else None

    @property
    def cluster_median(self) -> float | None:
        e = self._errors("cluster_time_us")
        return float(np.median(e)) if e.size else None

    @property
    def cluster_bw_median(self) -> float | None:
        e = self._errors("cluster_time_us", BW_REGIME_NBYTES)
        return float(np.median(e)) if e.size else None

    def meets_cluster_goal(self) -> bool | None:
        """None when there is no cluster prediction in the bandwidth regime."""
        bw = self.cluster_bw_median
        return None if bw is None else bw <= CLUSTER_BW_GOAL

    def meets_fitted_goals(self) -> bool | None:
        """None when the goals do not apply (fewer than GOAL_MIN_ROWS rows)."""
        if self.n_rows < GOAL_MIN_ROWS or self.fitted_median is None or self.fitted_p90 is None:
            return None
        return self.fitted_median <= FIT_MEDIAN_GOAL and self.fitted_p90 <= FIT_P90_GOAL

    def meets_predicted_goals(self) -> bool | None:
        """None when there is no prediction."""
        if self.predicted_median is None:
            return None
        bw = self.predicted_bw_median
        return self.predicted_median <= PREDICTED_MEDIAN_GOAL and (bw is None or bw <= PREDICTED_BW_GOAL)

    def to_json(self, rows: bool = True) -> dict:
        out: dict[str, object] = {
            "log": self.name, "collective": self.collective, "n_ranks": self.n_ranks, "rows": self.n_rows,
            "fitted": {"median_error": self.fitted_median, "p90_error": self.fitted_p90,
                       "params": self.fit.params if self.fit else None, "problem": self.fit_problem,
                       "meets_goals": self.meets_fitted_goals(), "repeat_spread_p90": self.repeat_spread_p90},
            "predicted": {"median_error": self.predicted_median, "bw_regime_median_error": self.predicted_bw_median,
                          "meets_goals": self.meets_predicted_goals(), **(self.prediction_info or {})},
            "machine": self.machine.describe() if self.machine else None, "machine_note": self.machine_note,
            "cluster": {"preset": self.cluster, "median_error": self.cluster_median,
                        "bw_regime_median_error": self.cluster_bw_median, "meets_goal": self.meets_cluster_goal(),
                        "note": self.cluster_note},
        }
        if rows:
            out["row_times"] = [{"size_bytes": r.size_bytes, "measured_time_us": r.measured_time_us,
                                 "fitted_time_us": r.fitted_time_us, "predicted_time_us": r.predicted_time_us,
                                 "regime": r.regime, "predicted_pair": r.predicted_pair,
                                 "cluster_time_us": r.cluster_time_us, "cluster_algo": r.cluster_algo,
                                 "cluster_bottleneck": r.cluster_bottleneck,
                                 "measured_column": r.measured_column} for r in self.rows]
        return out


def measured_points(log) -> tuple[np.ndarray, np.ndarray]:
    """(size, measured time in us) of every row with size > 0, in the log's order: the faster of the row's
    out-of-place and in-place timings (:attr:`commlab.nccl.records.Row.fastest`)."""
    pts = [(r.size_bytes, r.fastest.time_us) for r in log.rows if r.size_bytes > 0]
    if not pts:
        return np.array([]), np.array([])
    s, t = np.array(pts, dtype=float).T
    return s, t


def _predict(log, s: np.ndarray, machine: Machine | None, text: str = "", small_run=None
             ) -> tuple[np.ndarray | None, list | None, str, dict | None]:
    """The prediction for the log's rows: the tuner of the log's NCCL generation, the run's launch shape
    (nccl-tests' ``-g``, from the log's preamble or command line; :class:`~commlab.tuner.launch.LaunchShape`),
    calibrated with ``small_run`` where it is a run of the same cluster (else the note says why not)."""
    from commlab.scorecard.calibration import predict_log
    from commlab.tuner.launch import LaunchShape
    from commlab.tuner.settings import TUNED_OPS

    if machine is None:
        return None, None, "", None
    if log.collective not in TUNED_OPS:
        return None, None, f"{log.collective} is not tuned by NCCL (grouped send/recv): no prediction", None
    if log.n_ranks is not None and log.n_ranks != machine.n_ranks:
        raise CommlabError(f"the log has {log.n_ranks} ranks but the machine {machine.describe()!r} has "
                           f"{machine.n_ranks} (gpus_per_node x nodes)")
    launch = LaunchShape.from_log(log)
    notes = []
    try:
        p = predict_log(log, text, s, machine, small_run)
    except CommlabError as exc:                      # the calibration log itself, or another cluster's run
        if small_run is None:
            raise
        notes.append(f"not calibrated: {exc}")
        p = predict_log(log, text, s, machine)
    notes += p.notes()
    if launch is not None and launch.gpus_per_thread > 1:
        notes.append(f"nccl-tests -g {launch.gpus_per_thread}: one thread launches {launch.gpus_per_thread} GPUs, a "
                     f"floor of {launch.floor_us:.1f} us")
    return p.prediction.time_s * 1e6, p.prediction.pairs(), "; ".join(notes), p.to_json()


def _cluster(log, s: np.ndarray, cluster: tuple[str, int] | None) -> tuple[list, str]:
    """Per row (time_us, algorithm, bottleneck) of the cluster model, and the column's note."""
    from commlab.scorecard.cluster_column import cluster_rows

    if cluster is None:
        return [(None, None, None)] * len(s), ""
    got = cluster_rows(log.collective, s, cluster[0], cluster[1], log.n_ranks)
    if got is None:
        return [(None, None, None)] * len(s), f"the cluster model does not cost {log.collective} on this log"
    times, algos, bottlenecks = got
    return [(float(t), a, b) for t, a, b in zip(times, algos, bottlenecks)], ""


def score_log(log, name: str, machine: Machine | None = None, machine_note: str = "",
              cluster: tuple[str, int] | None = None, cluster_note: str = "", text: str = "",
              small_run=None) -> LogScore:
    """Score one parsed log (``commlab.nccl.parse_log``); ``machine`` enables the prediction, ``cluster``
    (preset name, nodes) the cluster model's column; ``text`` (the log's) names its NCCL version, whose generation
    of the tuner the prediction replays; ``small_run`` (:func:`commlab.scorecard.calibration.read_small_run`)
    calibrates it."""
    s, t = measured_points(log)
    fit, problem = None, None
    try:
        fit = fit_protocol_model(s, t * 1e-6)
    except CommlabError as exc:
        problem = str(exc)
    pred, pairs, why, info = _predict(log, s, machine, text, small_run)
    note = "; ".join(x for x in (machine_note, why) if x)
    fitted = fit.time_s(s) * 1e6 if fit else [None] * len(s)
    regimes = list(fit.regime_label(s)) if fit else [None] * len(s)
    per_row, why_not = _cluster(log, s, cluster)
    columns = [r.fastest_column for r in log.rows if r.size_bytes > 0]         # measured_points' rows, in order
    rows = tuple(RowScore(int(si), float(ti), None if f is None else float(f), None if pred is None else float(p),
                          None if g is None else str(g), None if pairs is None else pairs[i],
                          cluster_time_us=per_row[i][0], cluster_algo=per_row[i][1],
                          cluster_bottleneck=per_row[i][2], measured_column=columns[i])
                 for i, (si, ti, f, g, p) in enumerate(zip(s, t, fitted, regimes,
                                                           pred if pred is not None else [None] * len(s))))
    label = None if cluster is None or why_not else f"{cluster[0]} x {cluster[1]}"
    return LogScore(name, log.collective, log.n_ranks, fit, problem, machine, note, rows, label,
                    "; ".join(x for x in (cluster_note, why_not) if x), repeat_spread(log), info)


def repeat_spread(log) -> float | None:
    """:attr:`LogScore.repeat_spread_p90` of a parsed log."""
    pairs = [(r.oop.time_us, r.ip.time_us) for r in log.rows
             if r.size_bytes > 0 and r.ip is not None and r.oop.time_us > 0 and r.ip.time_us > 0]
    if not pairs:
        return None
    t = np.array(pairs)
    return float(np.percentile(t.max(axis=1) / t.min(axis=1) - 1.0, 90))


def shipped_machine(path: Path) -> tuple[Machine | None, str]:
    """The described machine when ``path`` is one of the shipped logs (by file name), else (None, "")."""
    from commlab.scorecard.fixture_machines import fixture_machine
    from commlab.nccl.examples import nccl_tests_logs

    if path.name not in {p.name for p in nccl_tests_logs()}:
        return None, ""
    fm = fixture_machine(path.name[:2])
    return fm.machine, fm.why + (f" | outside the model: {fm.outside_model}" if fm.outside_model else "")


def shipped_cluster(path: Path) -> tuple[tuple[str, int] | None, str]:
    """The cluster preset and nodes of a shipped log (by file name), with its note; (None, why) otherwise."""
    from commlab.scorecard.cluster_column import fixture_cluster
    from commlab.nccl.examples import nccl_tests_logs

    if path.name not in {p.name for p in nccl_tests_logs()}:
        return None, "not a shipped log: no cluster preset"
    name, nodes, note = fixture_cluster(int(path.name[:2]))
    return (None, note) if name is None or nodes is None else ((name, nodes), note)


def score_file(path: str | Path, machine: Machine | None = None, text: str | None = None,
               small_run=None) -> LogScore:
    """Score a log file; without ``machine`` a shipped log uses its described machine; ``small_run`` calibrates the
    prediction (:func:`score_log`)."""
    from commlab.nccl.parse import parse_log

    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise CommlabError(f"cannot read LOG {str(path)!r}: {exc.strerror or exc}") from None
    log = parse_log(text)
    note = "given with --machine"
    if machine is None:
        machine, note = shipped_machine(path)
        if machine is None and not note:
            note = "no machine description (give one with --machine DESC)"
        elif machine is None:
            note = f"cannot be described: {note}"
    if not log.rows:
        raise CommlabError(f"no nccl-tests table rows in LOG {str(path)!r}")
    from commlab.scorecard.log_model import machine_for_log

    machine, forced = machine_for_log(machine, text)
    cluster, cluster_note = shipped_cluster(path)
    return score_log(log, path.name, machine, "; ".join(x for x in (note, forced) if x), cluster, cluster_note, text,
                     small_run)


def chosen_on(score: LogScore) -> tuple[str, ...]:
    """The calibrated constants (:mod:`commlab.calibration`) chosen on this log: where its predicted errors are
    in-sample, not a test of the model (a shipped log's number, or its path under ``commlab/data/nccl/``)."""
    from commlab.calibration import table

    keys = {score.name[:2], score.name, f"calibration/{score.name}"}
    return tuple(c.name for c in table() if keys & set(c.runs))


def scorecard(paths=None, machine: Machine | None = None, small_run=None) -> list[LogScore]:
    """Score the given logs, or every shipped one; ``small_run`` calibrates every prediction it is a run of the same
    cluster for (the others say why not)."""
    from commlab.nccl.examples import nccl_tests_logs

    return [score_file(p, machine, small_run=small_run) for p in (paths if paths else nccl_tests_logs())]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_scorecard(scores: list[LogScore]) -> list[str]:
    """The text table: one line per log, then the goals."""
    head = (f"{'log':<40s} {'rows':>4s} {'fit med':>8s} {'fit p90':>8s} {'pred med':>9s} {'pred>=64M':>9s} "
            f"{'clus med':>9s} {'clus>=64M':>9s}  machine")
    lines = [head, "-" * len(head)]
    for sc in scores:
        machine = sc.machine.describe() if sc.machine else f"({sc.machine_note})" if sc.machine_note else "-"
        lines.append(f"{sc.name[:40]:<40s} {sc.n_rows:>4d} {_pct(sc.fitted_median):>8s} {_pct(sc.fitted_p90):>8s} "
                     f"{_pct(sc.predicted_median):>9s} {_pct(sc.predicted_bw_median):>9s} "
                     f"{_pct(sc.cluster_median):>9s} {_pct(sc.cluster_bw_median):>9s}  {machine}")
    for sc in scores:
        if sc.meets_fitted_goals() is False and sc.repeat_spread_p90 is not None \
                and sc.repeat_spread_p90 > FIT_P90_GOAL:
            lines.append(f"  {sc.name}: its two timings of a size differ by {100 * sc.repeat_spread_p90:.0f}% (90th "
                         f"percentile), more than the fitted goal asks of a model")
    fit_ok = [ok for s in scores if (ok := s.meets_fitted_goals()) is not None]
    pred_ok = [ok for s in scores if (ok := s.meets_predicted_goals()) is not None]
    lines.append(f"fitted goals (median <= {FIT_MEDIAN_GOAL:.0%}, p90 <= {FIT_P90_GOAL:.0%}, logs of >= "
                 f"{GOAL_MIN_ROWS} rows): met on {sum(fit_ok)} of {len(fit_ok)}")
    lines.append(f"predicted goals (median <= {PREDICTED_MEDIAN_GOAL:.0%}, >= 64 MiB <= {PREDICTED_BW_GOAL:.0%}): "
                 f"met on {sum(pred_ok)} of {len(pred_ok)} described logs")
    lines += held_out_lines(scores)
    clus = [(s.name[:2], s.cluster, ok) for s in scores if (ok := s.meets_cluster_goal()) is not None]
    if clus:
        presets = ", ".join(f"{k}: {c}" for k, c, _ in clus)
        lines.append(f"cluster goal (>= 64 MiB <= {CLUSTER_BW_GOAL:.0%}): met on {sum(ok for _, _, ok in clus)} of "
                     f"{len(clus)} logs on a cluster preset ({presets})")
    return lines


def held_out_lines(scores: list[LogScore]) -> list[str]:
    """The accuracy on runs no choice was made on (the held-out runs of the error-band table), beside the figure
    above, and what each prediction's generation and calibration were where they are not today's tuner alone."""
    from commlab.scorecard.error_bands import held_out_goals
    from commlab.tuner.generations import current

    lines = []
    for sc in scores:
        info = sc.prediction_info or {}
        gen, cal = info.get("generation"), info.get("calibration")
        if gen and gen["generation"] != current().name:
            lines.append(f"  {sc.name}: replayed with NCCL {gen['generation']}'s tuner ({gen['why']})")
        if cal:
            fitted = ", ".join(f"{q['name']} = {q['value']:g} {q['unit']}" for q in cal["quantities"] if q["fitted"])
            lines.append(f"  {sc.name}: calibrated on {cal['from']} ({fitted or 'nothing fitted'})")
    goals = held_out_goals()
    lines.append(f"predicted goals on held-out runs (not shipped, no choice made on them): met on {goals['met']} of "
                 f"{goals['runs']} described runs ({', '.join(m[:2] for m in goals['missed']) or 'none'} missed)")
    return lines
