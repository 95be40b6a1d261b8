"""Checks of the bandwidth sweep lab (labs/bandwidth_sweep.ipynb): the bus factor of every collective against
nccl-tests' (:func:`commlab.collectives.busbw_factor`), the relative-error alpha-beta fit against
:func:`commlab.cost.fit_alpha_beta` on an exact line, on points whose free fit has alpha < 0, and on real
nccl-tests runs shipped with the book (the notebook adds the learner's own sweep), and the protocol-aware
model's time of a size against :meth:`commlab.cost.ProtocolFit.time_s` at every regime's boundary (just below,
on it, just above) and on the fits of four real logs, where the fastest line is not the regime's.
"""
from __future__ import annotations

import math

import numpy as np

from commlab import collectives, cost, units
from commlab.labs.checking import Outcome
from commlab.labs.checks import call

HINTS = {"all_reduce": "a ring sends 2(n-1) chunks of S/n through each link",
         "gather-like": "S is the whole buffer; a rank lacks n-1 of its n pieces",
         "chain": "a pipelined chain carries S once over every link, whatever n"}


def check_bus_factor(fn, n_ranks=range(2, 17)) -> Outcome:
    """F(n) for every collective and n = 2..16."""
    wrong = []
    n_ranks = list(n_ranks)
    for op in collectives.OPS:
        for n in n_ranks:
            got, failed = call("bus_factor", fn, op, n)
            if failed:
                return failed
            want = collectives.busbw_factor(op, n)
            if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isclose(got, want, rel_tol=1e-9):
                wrong.append((op, n, got, want))
    if not wrong:
        return Outcome(details={"cases": len(collectives.OPS) * len(n_ranks)})
    op, n, got, want = wrong[0]
    family = op if op == "all_reduce" else "chain" if op in ("broadcast", "reduce", "sendrecv") else "gather-like"
    return Outcome(problem=f"bus_factor({op!r}, {n}) returned {got!r}; nccl-tests uses {want:g} ({HINTS[family]}). "
                           f"{len(wrong)} of {len(collectives.OPS) * len(n_ranks)} cases are wrong.")


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


def check_least_squares_alpha_beta(fn, cases=None) -> Outcome:
    """The fit on every case of :func:`fit_cases`."""
    for nbytes, t_s, what in cases if cases is not None else fit_cases():
        problem = fit_problem(fn, nbytes, t_s, what)
        if problem:
            return Outcome(problem=problem)
    return Outcome()


def protocol_cases() -> list[tuple[tuple, np.ndarray, str]]:
    """(regimes, sizes, what): made-up regimes whose lines jump at the boundaries (up and down, a flat first
    regime), and the fits of four shipped logs (07, 13, 14, 20), each at its sizes and around its boundaries."""
    from commlab import nccl

    three = (cost.Regime("LL", 3e-6, 1 / 10e9, 0.0, 3), cost.Regime("LL128", 10e-6, 1 / 100e9, 65536.0, 3),
             cost.Regime("Simple", 40e-6, 1 / 400e9, 4194304.0, 3))
    drop = (cost.Regime("LL", 30e-6, 0.0, 0.0, 3), cost.Regime("Simple", 5e-6, 1 / 50e9, 1048576.0, 3))
    cases = [(three, _around(three, [0.0, 1.0, 1e3, 4e6, 1e9, 2.0**34]),
              "made-up regimes: LL from 0, LL128 from 64 KiB (a jump up), Simple from 4 MiB"),
             (drop, _around(drop, [0.0, 8.0, 1e5, 1e6, 2.0**30]),
              "made-up regimes: flat at 30 us, then a drop to 5 us + S / 50 GB/s from 1 MiB")]
    for key in (7, 13, 14, 20):
        path = nccl.nccl_tests_log(key)
        rows = nccl.parse_log(path.read_text()).rows
        sizes = np.array([r.size_bytes for r in rows], dtype=float)
        fit = cost.fit_protocol_model(sizes, np.array([r.oop.time_us for r in rows]) * 1e-6)
        cases.append((fit.regimes, _around(fit.regimes, sizes), f"the fit of nccl-tests run {path.stem}"))
    return cases


def _around(regimes, sizes) -> np.ndarray:
    """``sizes`` and, for every boundary b, b itself, the whole bytes just below and above it, and b +- 1e-6 b."""
    extra = []
    for r in regimes[1:]:
        b = r.first_nbytes
        extra += [b, np.floor(b) if np.floor(b) < b else b - 1, np.floor(b) + 1, b * (1 - 1e-6), b * (1 + 1e-6)]
    return np.array(sorted(set(np.asarray(sizes, dtype=float).tolist()) | set(extra)))


def _protocol_hint(regimes, got: np.ndarray, sizes: np.ndarray, want: np.ndarray, i: int) -> str:
    """Why ``got[i]`` differs from ``want[i]``, from the realistic mistakes."""
    lines = np.stack([r.alpha_s + r.beta_s_per_byte * sizes for r in regimes])
    k = int(cost.ProtocolFit(tuple(regimes), 0, 0.0).regime_index(sizes[i]))
    size, start = (units.format_nbytes(x, binary=True) for x in (sizes[i], regimes[k].first_nbytes))
    if np.allclose(got, lines.min(axis=0), rtol=1e-9, atol=0):
        return (f"you took the fastest line at every size, but {size} lies in {regimes[k].label}'s range (from "
                f"{start}): a regime's line holds only from its first_nbytes up to the next regime's")
    for scale in (1e9, 1e-9, 1e6, 1e-6):
        if np.isclose(got[i] - regimes[k].alpha_s, (want[i] - regimes[k].alpha_s) * scale, rtol=1e-6):
            return "beta_s_per_byte is in seconds per byte (bw_GBps is in GB/s, 1e9 bytes per second)"
    bad = ~np.isclose(got, want, rtol=1e-9, atol=0)
    on_start = np.array([any(np.isclose(x, r.first_nbytes, rtol=1e-12, atol=0) for r in regimes[1:]) for x in sizes])
    if np.all(on_start[bad]):
        return f"{size} is where {regimes[k].label} starts: a size equal to a regime's first_nbytes belongs to it"
    return f"it lies in regime {regimes[k].label}: alpha_s + beta_s_per_byte x S with that regime's numbers"


def _model(regimes) -> cost.ProtocolFit:
    """The reference: commlab.cost's own fitted model with these regimes."""
    return cost.ProtocolFit(tuple(regimes), 0, 0.0)


def _sizes_problem(fn, regimes, sizes: np.ndarray, what: str) -> Outcome | None:
    """None when ``fn(sizes, regimes)`` gives the model's time at every size, else what differs."""
    got, failed = call("protocol_time_s", fn, sizes.copy(), regimes, what=f"protocol_time_s on {what}")
    if failed:
        return failed
    got, want = np.asarray(got, dtype=float), _model(regimes).time_s(sizes)
    if got.shape != sizes.shape:
        return Outcome(problem=f"protocol_time_s returned shape {got.shape} for {sizes.size} sizes ({what}); "
                               "compute with the array of sizes so that it returns one time per size")
    bad = np.flatnonzero(~np.isclose(got, want, rtol=1e-9, atol=0))
    if not bad.size:
        return None
    i = bad[0]
    at = units.format_nbytes(sizes[i], binary=True)
    return Outcome(problem=f"on {what}: protocol_time_s at {at} ({sizes[i]:.10g} bytes) = {got[i]:.6g} s; the model "
                           f"gives {want[i]:.6g} s: {_protocol_hint(regimes, got, sizes, want, i)}. {bad.size} of "
                           f"{sizes.size} sizes differ.")


def _one_size_problem(fn, regimes, what: str) -> Outcome | None:
    """None when ``fn`` also takes one size alone (the last regime's first size) and gives its time."""
    one = float(regimes[-1].first_nbytes)
    got, failed = call("protocol_time_s", fn, one, regimes, what=f"protocol_time_s({one!r}, regimes) on {what}")
    if failed:
        return failed
    want = float(_model(regimes).time_s(one))
    if np.size(got) == 1 and np.isclose(float(np.asarray(got, dtype=float).ravel()[0]), want, rtol=1e-9, atol=0):
        return None
    return Outcome(problem=f"on {what}: protocol_time_s({one:.10g}, regimes), one size alone, returned {got!r}; "
                           f"expected the time of that size, {want:.6g} s")


def check_protocol_time_s(fn) -> Outcome:
    """The model's time at every size of :func:`protocol_cases`, given as an array, and for one size alone."""
    cases = protocol_cases()
    for regimes, sizes, what in cases:
        problem = _sizes_problem(fn, regimes, sizes, what) or _one_size_problem(fn, regimes, what)
        if problem:
            return problem
    return Outcome(details={"cases": sum(sizes.size + 1 for _, sizes, _ in cases)})


# --- cases drawn when a class is graded (commlab labs check --seed) -------------------------------------------

def drawn_bus_factor(fn, seed: int) -> Outcome:
    """F(n) at eight rank counts drawn from 2 to 4096."""
    rng = np.random.default_rng(seed)
    return check_bus_factor(fn, sorted({int(n) for n in rng.integers(2, 4097, size=8)}))


def drawn_least_squares_alpha_beta(fn, seed: int) -> Outcome:
    """The fit on two sweeps drawn from the seed: a line with 2 % noise (alpha 1-100 us, B 1-400 GB/s), and one
    whose small sizes are slower than its line (a free fit would give alpha < 0 or a skewed alpha)."""
    rng = np.random.default_rng(seed)
    cases = []
    for k in range(2):
        nbytes = 4.0 ** np.arange(int(rng.integers(2, 6)), int(rng.integers(11, 15)))
        alpha, bw = 10 ** rng.uniform(-6, -4), 10 ** rng.uniform(9, 11.6)
        t_s = (alpha + nbytes / bw) * (1 + 0.02 * rng.standard_normal(nbytes.size))
        if k == 1:
            t_s = np.where(nbytes < nbytes[2], t_s * 0.2, t_s)
        cases.append((nbytes, np.abs(t_s), f"sweep drawn from seed {seed} (#{k + 1})"))
    return check_least_squares_alpha_beta(fn, cases)
