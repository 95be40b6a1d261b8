"""Calibration from a small run of the same cluster: three physical quantities fitted on a 1- or 2-node nccl-tests
log, then used to predict other sizes, collectives and node counts.

A machine description names the NIC's port speed and the network's kind; what the path really delivers, what a hop
really costs and what one call costs the host are properties of the cluster that no description carries. A short run
on one or two nodes measures them. The fitted quantities, at most three, each with its unit:

* ``nic_delivered_Gbps``: what one NIC delivers, Gb/s (a 400 GbE virtual function that carries 100);
* ``net_hop_us``: what a network hop adds, us (``Machine.net_latency_us``);
* ``launch_us_per_gpu``: the host cost of one call and its kernel for one GPU, us (the launch floor,
  :mod:`commlab.tuner.launch`: ``gpus_per_thread x launch_us``).

NCCL still picks with what it sees (the port speed, the latency its plugin reports); the calibration changes only
how the pick runs (:func:`commlab.tuner.generations.replay`, ``run_machine`` and ``nic_scale``): every bandwidth
across nodes at delivered / port of NCCL's budget, every network hop at the fitted cost, no time below the fitted
floor. A quantity is fitted only where the run shows it: one node shows no network, so a 1-node run fits the launch
floor alone and says so; what a NIC delivers then stays the description's port speed, and a network hop what the
network kind costs (:mod:`commlab.tuner.networks`), and a prediction across nodes names both with the share of its
time they set (:func:`not_carried`: a ring's ``nNodes - 1`` or ``2 (nNodes - 1)`` network steps, the bytes through
the NICs). A point-to-point run across nodes (nccl-tests' ``sendrecv_perf``,
:func:`fit_nic_from_p2p`) shows a NIC alone: each rank sends to the next, and a pair that crosses nodes goes through
one NIC, so from 64 MiB its algorithm bandwidth is what that NIC delivers.

The fit on a collective is a coordinate search, twice round, each quantity on the rows where it matters (the NIC on
sizes >= 64 MiB, the hop below 64 MiB, the floor up to 64 KiB) by the least mean relative time error there, ties
broken by the median over all rows; the grids are :data:`NIC_FRACTIONS` (a port delivers at most its
speed), :data:`HOP_GRID_US` and the measured times of the smallest sizes.

>>> from commlab.tuner.machine import parse_machine
>>> import numpy as np
>>> m = parse_machine("gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=200,net=ib")
>>> s = 2.0 ** np.arange(10, 31)
>>> truth = Calibration(nic_delivered_Gbps=100.0, net_hop_us=6.0, launch_us_per_gpu=60.0)
>>> t_us = predict_calibrated("all_reduce", s, m, truth, gpus_per_thread=1).time_s * 1e6
>>> fit = fit_calibration("all_reduce", s, t_us, m)
>>> fit.calibration.nic_delivered_Gbps, fit.calibration.net_hop_us, fit.calibration.launch_us_per_gpu
(100.0, 6.0, 60.0)
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np

from commlab.errors import CommlabError
from commlab.tuner.generations import Generation, GenerationChoice, current, replay
from commlab.tuner.launch import LaunchShape
from commlab.tuner.machine import Machine
from commlab.tuner.predict import Prediction
from commlab.tuner.settings import TUNED_OPS

#: the NIC's delivered rate is searched as these fractions of its port speed (a port delivers at most its speed)
NIC_FRACTIONS = tuple(round(x, 3) for x in np.arange(0.05, 1.0001, 0.0125))
#: the network hop's cost is searched on these values, us
HOP_GRID_US = (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
               80.0, 100.0)
#: the rows each quantity is fitted on: the NIC from 64 MiB, the hop from 64 KiB to below 64 MiB
BW_ROWS_NBYTES, HOP_ROWS_NBYTES = 64 * 2**20, 64 * 2**10
#: the launch floor is fitted on the sizes up to this one (where no collective takes longer than the host)
FLOOR_ROWS_NBYTES = 64 * 2**10
MIN_CALIBRATION_ROWS = 4


@dataclass(frozen=True)
class Calibration:
    """The fitted quantities; None where the run did not show one (the description's value holds)."""

    nic_delivered_Gbps: float | None = None
    net_hop_us: float | None = None
    launch_us_per_gpu: float | None = None

    def run_machine(self, m: Machine) -> Machine:
        """``m`` as it runs with the fitted hop (NCCL still picks on ``m``)."""
        if self.net_hop_us is not None and m.nodes > 1:
            return replace(m, net_latency_us=self.net_hop_us)
        return m

    def nic_scale(self, m: Machine) -> float:
        """What a NIC delivers over its port speed (1 where not fitted or on one node)."""
        if self.nic_delivered_Gbps is None or m.nodes == 1 or m.nic_Gbps <= 0:
            return 1.0
        return self.nic_delivered_Gbps / m.nic_Gbps

    def launch(self, gpus_per_thread: int) -> LaunchShape | None:
        if self.launch_us_per_gpu is None:
            return None
        return LaunchShape(gpus_per_thread=gpus_per_thread, launch_us=self.launch_us_per_gpu)


@dataclass(frozen=True)
class CalibrationFit:
    """A calibration and how it was made."""

    calibration: Calibration
    source: str
    """The calibration log (its name)."""
    collective: str
    machine: Machine
    """The calibration run's machine (the target's description at the run's node count)."""
    n_rows: int
    median_error: float
    """The calibrated model's median relative time error on the calibration run itself."""
    not_fitted: dict = field(default_factory=dict)
    """quantity -> why it was not fitted"""
    generation: str = ""
    digest: str = ""
    """sha256 of the calibration log's text: a prediction refuses the log it was fitted on."""

    def to_json(self) -> dict:
        c = self.calibration
        quantities = [
            {"name": "nic_delivered_Gbps", "unit": "Gb/s", "value": c.nic_delivered_Gbps,
             "what": "what one NIC delivers (the description's port speed: "
                     f"{self.machine.nic_Gbps:g} Gb/s)"},
            {"name": "net_hop_us", "unit": "us", "value": c.net_hop_us, "what": "what a network hop adds"},
            {"name": "launch_us_per_gpu", "unit": "us", "value": c.launch_us_per_gpu,
             "what": "host cost of one call and its kernel per GPU a thread drives (the launch floor)"},
        ]
        for q in quantities:
            q["fitted"] = q["value"] is not None
            q["why_not"] = self.not_fitted.get(str(q["name"]))
        return {"from": self.source, "collective": self.collective, "machine": self.machine.describe(),
                "rows": self.n_rows, "generation": self.generation,
                "median_error_on_calibration_run": self.median_error, "quantities": quantities}

    def text_lines(self) -> list[str]:
        c = self.calibration
        parts = []
        for name, value, unit in (("NIC delivers", c.nic_delivered_Gbps, "Gb/s"), ("network hop", c.net_hop_us, "us"),
                                  ("launch", c.launch_us_per_gpu, "us per GPU")):
            key = {"NIC delivers": "nic_delivered_Gbps", "network hop": "net_hop_us", "launch": "launch_us_per_gpu"}
            parts.append(f"{name} {value:g} {unit}" if value is not None
                         else f"{name}: not fitted ({self.not_fitted.get(key[name], '')})")
        return [f"calibrated      on {self.source} ({self.collective}, {self.machine.describe()}, {self.n_rows} rows, "
                f"median error there {100 * self.median_error:.1f}%)", "  " + "; ".join(parts)]


def _rel(pred_us: np.ndarray, meas_us: np.ndarray) -> np.ndarray:
    return np.abs(pred_us / meas_us - 1.0)


def predict_calibrated(op: str, nbytes, m: Machine, cal: Calibration, gpus_per_thread: int = 1,
                       generation: Generation | None = None, launch: LaunchShape | None = None) -> Prediction:
    """The prediction of ``op`` on ``m`` with ``cal``: NCCL picks on ``m``; the pick runs on
    :meth:`Calibration.run_machine` with the calibrated launch floor (or ``launch``, the run's own, uncalibrated)."""
    gen = generation or current()
    shape = cal.launch(gpus_per_thread) or launch
    return replay(op, nbytes, m, gen, launch=shape, run_machine=cal.run_machine(m), nic_scale=cal.nic_scale(m))


def fit_calibration(op: str, nbytes, time_us, m: Machine, gpus_per_thread: int = 1,
                    generation: Generation | None = None, source: str = "calibration run", digest: str = ""
                    ) -> CalibrationFit:
    """Fit :class:`Calibration` on one run: sizes ``nbytes`` and measured times ``time_us`` of ``op`` on ``m``."""
    if op not in TUNED_OPS:
        raise CommlabError(f"cannot calibrate on {op}: NCCL's tuner models {', '.join(TUNED_OPS)} (grouped send/recv "
                           f"is not tuned)")
    s = np.asarray(nbytes, dtype=float)
    t = np.asarray(time_us, dtype=float)
    keep = (s > 0) & (t > 0)
    s, t = s[keep], t[keep]
    gen = generation or current()
    missing = []
    if s.size < MIN_CALIBRATION_ROWS:
        missing.append(f"at least {MIN_CALIBRATION_ROWS} sizes > 0 (it has {s.size})")
    has_bw, has_hop, has_floor = (s >= BW_ROWS_NBYTES).any(), ((s >= HOP_ROWS_NBYTES) & (s < BW_ROWS_NBYTES)).any(), \
        (s <= FLOOR_ROWS_NBYTES).any()
    if not (has_bw or has_hop or has_floor) or missing:
        raise CommlabError(f"the calibration log {source!r} is too short to calibrate: it needs "
                           f"{'; '.join(missing) or 'rows'} with sizes <= 64 KiB (the launch floor), 64 KiB-64 MiB "
                           f"(the network hop) or >= 64 MiB (what a NIC delivers)")
    not_fitted: dict[str, str] = {}
    multi = m.nodes > 1
    if not multi:
        not_fitted["nic_delivered_Gbps"] = ("the calibration run has one node: no byte of it crosses a NIC, so the "
                                            "description's port speed stands")
        not_fitted["net_hop_us"] = ("the calibration run has one node: none of its steps crosses the network, so what "
                                    "a network step costs stays the network kind's (NCCL's hwLat[NET] plus the "
                                    "plugin's figure)")
    else:
        if not has_bw:
            not_fitted["nic_delivered_Gbps"] = "the calibration log has no size >= 64 MiB"
        if not has_hop:
            not_fitted["net_hop_us"] = "the calibration log has no size from 64 KiB to 64 MiB"
    if not has_floor:
        not_fitted["launch_us_per_gpu"] = "the calibration log has no size <= 64 KiB"

    def errors(cal: Calibration) -> np.ndarray:
        return _rel(predict_calibrated(op, s, m, cal, gpus_per_thread, gen).time_s * 1e6, t)

    def score(cal: Calibration, rows: np.ndarray) -> tuple[float, float]:
        """(mean error on ``rows``, median over all rows): each quantity answers for its rows first."""
        e = errors(cal)
        return float(np.mean(e[rows])) if rows.any() else 0.0, float(np.median(e))

    cal = Calibration()
    small = s <= FLOOR_ROWS_NBYTES
    floor_grid = sorted({round(float(x) / gpus_per_thread, 3) for x in t[small]} | {0.0})
    for _ in range(2):
        if "nic_delivered_Gbps" not in not_fitted:
            grid = [Calibration(float(f * m.nic_Gbps), cal.net_hop_us, cal.launch_us_per_gpu) for f in NIC_FRACTIONS]
            cal = min(grid, key=lambda c: score(c, s >= BW_ROWS_NBYTES))
        if "net_hop_us" not in not_fitted:
            grid = [Calibration(cal.nic_delivered_Gbps, h, cal.launch_us_per_gpu) for h in HOP_GRID_US]
            cal = min(grid, key=lambda c: score(c, s < BW_ROWS_NBYTES)[::-1])
        if "launch_us_per_gpu" not in not_fitted:
            grid = [Calibration(cal.nic_delivered_Gbps, cal.net_hop_us, f) for f in floor_grid]
            cal = min(grid, key=lambda c: score(c, small))
    if cal.nic_delivered_Gbps is not None:
        cal = replace(cal, nic_delivered_Gbps=round(cal.nic_delivered_Gbps, 3))
    if cal.launch_us_per_gpu == 0.0:
        cal = replace(cal, launch_us_per_gpu=None)
        not_fitted["launch_us_per_gpu"] = "no floor shows: the run's smallest sizes take longer than any launch"
    median = float(np.median(errors(cal)))
    return CalibrationFit(cal, source, op, m, int(s.size), median, not_fitted, gen.name, digest)


#: nccl-tests' point-to-point runs that calibrate what a NIC delivers (:func:`fit_nic_from_p2p`)
P2P_OPS = ("sendrecv",)


def fit_nic_from_p2p(op: str, nbytes, time_us, m: Machine, source: str = "calibration run",
                     digest: str = "") -> CalibrationFit:
    """What one NIC delivers, fitted on a point-to-point run across nodes (``sendrecv_perf``): every rank sends
    ``nbytes`` to the next, the pairs that cross nodes each through one NIC (a GPU's own, or one it shares with
    fewer pairs than NICs), and the slowest pair sets the time. From 64 MiB the latency is a rounding error, so::

        nic_delivered_Gbps = 8 x median(nbytes / time)       (at most the port: a NIC delivers at most its speed)

    The hop and the launch floor are not fitted: a send's latency is one message's, not a collective's hop."""
    if op not in P2P_OPS:
        raise CommlabError(f"a point-to-point calibration reads {', '.join(P2P_OPS)}, not {op}")
    if m.nodes < 2:
        raise CommlabError(f"the calibration log {source!r} is a {op} run on one node: no pair crosses a NIC, so it "
                           f"shows nothing of the network; calibrate on a run across nodes")
    s = np.asarray(nbytes, dtype=float)
    t = np.asarray(time_us, dtype=float)
    big = (s >= BW_ROWS_NBYTES) & (t > 0)
    if not big.any():
        raise CommlabError(f"the calibration log {source!r} is too short to calibrate: a {op} run needs sizes "
                           f">= 64 MiB to show what a NIC delivers (it has {int(s.size)} rows, the largest "
                           f"{int(s.max()) if s.size else 0} bytes)")
    rate_Gbps = float(np.median(8.0 * s[big] / (t[big] * 1e3)))
    nic = round(min(rate_Gbps, m.nic_Gbps), 3)
    why = f"a {op} run times one message, not a collective's hop or launches"
    cal = Calibration(nic_delivered_Gbps=nic)
    median = float(np.median(np.abs(s[big] * 8.0 / (t[big] * 1e3) / nic - 1.0)))
    return CalibrationFit(cal, source, op, m, int(big.sum()), median, {"net_hop_us": why, "launch_us_per_gpu": why},
                          "", digest)


def not_carried(fit: CalibrationFit, op: str, m: Machine, p: Prediction) -> tuple[str, ...]:
    """What a calibration fitted on one node cannot carry to ``p``, a prediction of ``op`` on ``m`` across nodes:
    one line per quantity the target's time rests on and the small run could not show, with how much of the
    predicted time it sets (empty where ``fit`` saw the network, or ``m`` is one node).

    * the network steps: the pick's count (:func:`commlab.tuner.table.net_steps`, NCCL's ``nInterSteps``) at what
      NCCL's table charges one (:func:`commlab.tuner.table.net_step_us`), as a share of the predicted time;
    * the NIC: the share of the predicted time that is bytes through the network at the port's speed (the time
      less its latency: what ``nic_scale`` would divide, :func:`commlab.tuner.replay.replay`).
    """
    from commlab.tuner.table import net_step_us, net_steps

    if fit.machine.nodes > 1 or m.nodes == 1:
        return ()
    s = np.atleast_1d(np.asarray(p.nbytes, dtype=float))
    t_us = np.atleast_1d(p.time_s) * 1e6
    out = []
    hop_share, hop_at, steps_of, k_of = 0.0, 0.0, "", 0
    for algo, proto in sorted({(str(a), str(q)) for a, q in zip(np.atleast_1d(p.algo), np.atleast_1d(p.proto))}):
        at = (np.atleast_1d(p.algo) == algo) & (np.atleast_1d(p.proto) == proto) & (t_us > 0)
        k = net_steps(op, algo, m)
        step = net_step_us(proto, algo, m, real=True)
        if not at.any() or k == 0:
            continue
        share = k * step / t_us[at]
        i = int(np.argmax(share))
        if share[i] > hop_share:
            hop_share, hop_at, k_of = float(share[i]), float(s[at][i]), k
            steps_of = (f"{algo}/{proto} crosses the network {k} times ({k} x {step:g} us, what a step of the "
                        f"description's network kind costs)")
    if steps_of:
        out.append(f"net_hop_us: a 1-node run has no network step; at {m.nodes} nodes the pick {steps_of}, "
                   f"{100 * hop_share:.0f}% of the predicted time at {_size(hop_at)}; where a step of this network "
                   f"costs more, the prediction is short by {k_of} times the difference (a collective across 2 "
                   f"nodes with sizes from 64 KiB to 64 MiB fits it)")
    if m.nic_Gbps > 0:
        out.append(f"nic_delivered_Gbps: a 1-node run has no byte through a NIC; at {m.nodes} nodes the bandwidth "
                   f"part of the time is taken at the port's {m.nic_Gbps:g} Gb/s: a NIC that delivers x of its port "
                   f"makes it 1/x longer (a run across 2 nodes from 64 MiB fits it, a sendrecv_perf too)")
    return tuple(out)


def _size(nbytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes:g} B"


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()


@dataclass(frozen=True)
class CalibrationCheck:
    """How a calibration log differs from the log it is to predict, and whether the prediction went on."""

    differences: tuple[str, ...]
    went_on: bool

    def note(self) -> str:
        if not self.differences:
            return ""
        return ("; ".join(self.differences) + ("; went on: the fitted quantities are the cluster's" if self.went_on
                                                else "; did not go on"))


def check_pair(cal_machine: Machine, cal_op: str, cal_choice: GenerationChoice, target: Machine, target_op: str,
               target_choice: GenerationChoice, cal_gpu: str | None = None) -> CalibrationCheck:
    """What differs between a calibration run and a target: another collective or NCCL version goes on (the
    quantities are the cluster's); another GPU, network kind or NIC port is another cluster and does not.
    ``cal_gpu``: the GPU the calibration run's own device lines name, where it names one."""
    diffs, stop = [], False
    if cal_op != target_op:
        diffs.append(f"the calibration run is {cal_op}, the log {target_op}")
    if cal_choice.generation.name != target_choice.generation.name or (
            cal_choice.version and target_choice.version and cal_choice.version[:2] != target_choice.version[:2]):
        shown = [".".join(map(str, c.version)) if c.version else f"unnamed ({c.generation.name} assumed)"
                 for c in (cal_choice, target_choice)]
        diffs.append(f"the calibration run's NCCL is {shown[0]}, the log's {shown[1]}")
    for name, a, b in (("GPU", cal_gpu or cal_machine.gpu, target.gpu), ("network kind", cal_machine.net, target.net)):
        if a != b:
            diffs.append(f"the calibration run's {name} is {a}, the log's {b}")
            stop = True
    if cal_machine.nodes > 1 and target.nodes > 1 and cal_machine.nic_Gbps != target.nic_Gbps:
        diffs.append(f"the calibration run's NIC port is {cal_machine.nic_Gbps:g} Gb/s, the log's {target.nic_Gbps:g}")
        stop = True
    if cal_machine.gpus_per_node != target.gpus_per_node:
        diffs.append(f"the calibration run has {cal_machine.gpus_per_node} GPUs a node, the log "
                     f"{target.gpus_per_node}")
    return CalibrationCheck(tuple(diffs), not stop)


def machine_at(m: Machine, n_ranks: int | None, where: str) -> Machine:
    """The described machine ``m`` at the node count of a run of ``n_ranks`` ranks (whole nodes of
    ``m.gpus_per_node`` GPUs); a run smaller than a node is that many GPUs of one node."""
    if n_ranks is None or n_ranks < 1:
        raise CommlabError(f"{where} does not say how many ranks it ran (no nccl-tests table or 'Rank' lines)")
    if n_ranks < m.gpus_per_node:
        return replace(m, gpus_per_node=n_ranks, nodes=1)
    if n_ranks % m.gpus_per_node:
        raise CommlabError(f"{where} ran {n_ranks} ranks, not whole nodes of {m.gpus_per_node} GPUs "
                           f"({m.describe()})")
    nodes = n_ranks // m.gpus_per_node
    if nodes > 1 and not (m.nics_per_node >= 1 and m.nic_Gbps > 0):
        raise CommlabError(f"{where} ran {nodes} nodes; the description {m.describe()!r} names no NICs "
                           f"(nics_per_node=, nic_Gbps=)")
    return replace(m, nodes=nodes)


def refuse_own_log(fit: CalibrationFit, text: str, where: str) -> None:
    """A calibration is never scored on the log it was fitted on: the same text raises."""
    if fit.digest and fit.digest == digest_of(text):
        raise CommlabError(f"{where} is the calibration log itself ({fit.source}): a calibration is never fitted on "
                           f"the log it predicts; calibrate on another run of the same cluster")
