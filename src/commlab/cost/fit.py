"""Fitting alpha and beta to measured (size, time) pairs, and where two algorithms cross (chapters 02, 06, 08).

The fit minimises the relative error of t = alpha + beta * S (each point weighted by 1/t), because sweeps
span six decades of size and an unweighted fit would ignore every small message. Neither parameter may be
negative: if the free fit gives a negative one, it is pinned to zero and the other refitted.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commlab.cost import alpha_beta as ab
from commlab.errors import CommlabError
from commlab.units import GB


@dataclass(frozen=True)
class AlphaBeta:
    """t = alpha_s + beta_s_per_byte * nbytes."""

    alpha_s: float
    beta_s_per_byte: float
    r2: float
    """Coefficient of determination of the fit on relative residuals (1 is perfect)."""

    @property
    def bw_GBps(self) -> float:
        """1 / beta in GB/s (infinite when beta is zero)."""
        return float("inf") if self.beta_s_per_byte == 0 else 1.0 / self.beta_s_per_byte / GB

    def time_s(self, nbytes):
        return self.alpha_s + self.beta_s_per_byte * np.asarray(nbytes, dtype=float)


def _solve(design: np.ndarray, weights: np.ndarray, t: np.ndarray) -> np.ndarray:
    coef, *_ = np.linalg.lstsq(design * weights[:, None], t * weights, rcond=None)
    return coef


def fit_alpha_beta(nbytes, t_s) -> AlphaBeta:
    """Least-squares alpha and beta of t = alpha + beta S on relative error, both kept >= 0.

    >>> fit = fit_alpha_beta([1e3, 1e6, 1e9], [1e-5 + 1e-9, 1e-5 + 1e-6, 1e-5 + 1e-3])
    >>> round(fit.alpha_s * 1e6, 3), round(fit.bw_GBps, 3)
    (10.0, 1000.0)
    """
    s, t = np.asarray(nbytes, dtype=float).ravel(), np.asarray(t_s, dtype=float).ravel()
    good = np.isfinite(s) & np.isfinite(t) & (t > 0) & (s >= 0)
    s, t = s[good], t[good]
    if len(s) < 2 or len(np.unique(s)) < 2:
        raise CommlabError(f"need at least two distinct sizes with positive times to fit alpha and beta, got {len(s)}")
    w = 1.0 / t
    alpha, beta = _solve(np.column_stack([np.ones_like(s), s]), w, t)
    if alpha < 0:
        alpha, beta = 0.0, float(_solve(s[:, None], w, t)[0])
    if beta < 0:
        alpha, beta = float(_solve(np.ones((len(s), 1)), w, t)[0]), 0.0
    residual = (t - (alpha + beta * s)) * w
    spread = np.log(t) - np.mean(np.log(t))
    r2 = 1.0 - float(np.sum(residual**2)) / max(float(np.sum(spread**2)), 1e-300)
    return AlphaBeta(float(max(alpha, 0.0)), float(max(beta, 0.0)), r2)


def crossover_nbytes(algo_a: str, algo_b: str, n_ranks: int, alpha_s: float, bw_Bps: float,
                     low: float = 1.0, high: float = 1e15) -> float:
    """Smallest size in [low, high] where ``algo_a`` and ``algo_b`` take equal time (nan if they never cross).

    >>> round(crossover_nbytes("ring", "tree", 64, 5e-6, 50e9) / 1e6, 2)   # MB: tree wins below, ring above
    2.84
    """
    sizes = np.geomspace(max(low, 1e-3), high, 4001)

    def diff(x):
        return ab.all_reduce_time_s(algo_a, x, n_ranks, alpha_s, bw_Bps) - ab.all_reduce_time_s(
            algo_b, x, n_ranks, alpha_s, bw_Bps)

    d = diff(sizes)
    sign_change = np.nonzero(np.sign(d[:-1]) * np.sign(d[1:]) < 0)[0]
    if len(sign_change) == 0:
        exact = np.nonzero(d == 0)[0]
        return float(sizes[exact[0]]) if len(exact) else float("nan")
    lo, hi = sizes[sign_change[0]], sizes[sign_change[0] + 1]
    for _ in range(100):
        mid = np.sqrt(lo * hi)
        if np.sign(diff(mid)) == np.sign(diff(lo)):
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi))
