"""Checks of the bandwidth sweep lab (labs/bandwidth_sweep.ipynb): the bus factor of every collective against
nccl-tests' (:func:`commlab.collectives.busbw_factor`), and the relative-error alpha-beta fit against
:func:`commlab.cost.fit_alpha_beta` on an exact line, on points whose free fit has alpha < 0, and on real
nccl-tests runs shipped with the book (the notebook adds the learner's own sweep).
"""
from __future__ import annotations

import math

import numpy as np

from commlab import collectives, cost
from commlab.labs.checking import Outcome
from commlab.labs.checks import call

HINTS = {"all_reduce": "a ring sends 2(n-1) chunks of S/n through each link",
         "gather-like": "S is the whole buffer; a rank lacks n-1 of its n pieces",
         "chain": "a pipelined chain carries S once over every link, whatever n"}


def bus_factor(fn) -> Outcome:
    """F(n) for every collective and n = 2..16."""
    wrong = []
    for op in collectives.OPS:
        for n in range(2, 17):
            got, failed = call("bus_factor", fn, op, n)
            if failed:
                return failed
            want = collectives.busbw_factor(op, n)
            if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isclose(got, want, rel_tol=1e-9):
                wrong.append((op, n, got, want))
    if not wrong:
        return Outcome(details={"cases": len(collectives.OPS) * 15})
    op, n, got, want = wrong[0]
    family = op if op == "all_reduce" else "chain" if op in ("broadcast", "reduce", "sendrecv") else "gather-like"
    return Outcome(problem=f"bus_factor({op!r}, {n}) returned {got!r}; nccl-tests uses {want:g} ({HINTS[family]}). "
                           f"{len(wrong)} of {len(collectives.OPS) * 15} cases are wrong.")


def fit_problem(fn, nbytes, t_s, what: str) -> str:
    """'' when ``fn(nbytes, t_s)`` agrees with commlab.cost.fit_alpha_beta on these points, else what differs."""
    got, failed = call("least_squares_alpha_beta", fn, nbytes, t_s, what=f"least_squares_alpha_beta on the {what}")
    if failed:
        return failed.problem
    ref = cost.fit_alpha_beta(nbytes, t_s)
    if not (isinstance(got, tuple) and len(got) == 2):
        return f"return a tuple (alpha_s, beta_s_per_byte); got {got!r}"
    alpha, beta = (float(v) for v in got)
    scale_t = float(np.max(t_s))
    if (math.isclose(alpha, ref.alpha_s, rel_tol=1e-6, abs_tol=1e-9 * scale_t)
            and math.isclose(beta, ref.beta_s_per_byte, rel_tol=1e-6, abs_tol=1e-12 * scale_t / max(nbytes))):
        return ""
    plain = np.polyfit(np.asarray(nbytes, float), np.asarray(t_s, float), 1)[::-1]
    hint = ""
    if math.isclose(alpha, plain[0], rel_tol=1e-6) and math.isclose(beta, plain[1], rel_tol=1e-6):
        hint = " Your numbers are the unweighted fit: divide each row and each t_i by t_i."
    elif alpha < 0 or beta < 0:
        hint = " A negative value must be set to 0 and the other parameter refitted alone."
    return (f"on the {what}: you got alpha = {alpha:.6g} s, beta = {beta:.6g} s/B; "
            f"expected alpha = {ref.alpha_s:.6g} s, beta = {ref.beta_s_per_byte:.6g} s/B.{hint}")


def fit_cases() -> list[tuple[np.ndarray, np.ndarray, str]]:
    """(sizes, times, what): an exact line, points whose free fit has alpha < 0, and two real nccl-tests runs."""
    from commlab import nccl

    exact = 4.0 ** np.arange(5, 12)
    cases = [(exact, 25e-6 + exact / 2e9, "exact line (alpha 25 us, B 2 GB/s)"),
             (np.array([1e3, 1e4, 1e5, 1e6]), np.array([0.2e-6, 8e-6, 1e-4, 1e-3]),
              "points whose free fit has alpha < 0")]
    for key in (7, 14):
        path = nccl.nccl_tests_log(key)
        rows = nccl.parse_log(path.read_text()).rows
        cases.append((np.array([r.size_bytes for r in rows], dtype=float),
                      np.array([r.oop.time_us for r in rows]) * 1e-6, f"nccl-tests run {path.stem}"))
    return cases


def least_squares_alpha_beta(fn) -> Outcome:
    """The fit on every case of :func:`fit_cases`."""
    for nbytes, t_s, what in fit_cases():
        problem = fit_problem(fn, nbytes, t_s, what)
        if problem:
            return Outcome(problem=problem)
    return Outcome()
