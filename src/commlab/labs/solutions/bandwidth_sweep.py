"""Reference solutions of the bandwidth sweep lab (labs/bandwidth_sweep.ipynb, labs/scripts/bandwidth_sweep.py).

The lab has the reader write two things an nccl-tests user does by hand:

* :func:`bus_factor`: nccl-tests' bus bandwidth factor F(n), so that ``busbw = algbw * F(n)``
  (nccl-tests ``doc/PERFORMANCE.md``; chapter 08);
* :func:`least_squares_alpha_beta`: the alpha-beta fit ``t = alpha + beta * S`` of a sweep, by least squares on
  the relative error (chapter 02), the same fit as :func:`commlab.cost.fit_alpha_beta`;
* :func:`protocol_time_s`: the time the protocol-aware model (:func:`commlab.cost.fit_protocol_model`) gives a
  size: the line of the regime whose size range holds it, not the fastest of the lines (the same as
  :meth:`commlab.cost.ProtocolFit.time_s`).

Only numpy is used here: these are what a reader can write in a notebook cell.
"""
from __future__ import annotations

import numpy as np

from commlab.errors import CommlabError

#: Collectives whose busbw factor is (n-1)/n: each rank receives the n-1 pieces it does not hold.
_GATHER_LIKE = ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter")


def bus_factor(op: str, n_ranks: int) -> float:
    """nccl-tests' F(n) for collective ``op`` (canonical commlab name) on ``n_ranks`` ranks.

    all_reduce 2(n-1)/n (a ring sends and receives 2(n-1)/n of the buffer); all_gather, reduce_scatter,
    all_to_all, gather, scatter (n-1)/n of the whole buffer; broadcast, reduce and sendrecv 1 (nccl-tests
    ``doc/PERFORMANCE.md``).

    >>> bus_factor("all_reduce", 8), bus_factor("all_gather", 4), bus_factor("broadcast", 4)
    (1.75, 0.75, 1.0)
    """
    n = int(n_ranks)
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in _GATHER_LIKE:
        return (n - 1) / n
    if op in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    raise CommlabError(f"unknown collective {op!r}; expected all_reduce, {', '.join(_GATHER_LIKE)}, broadcast, "
                       "reduce or sendrecv")


def _weighted_lstsq(columns: list[np.ndarray], t: np.ndarray) -> np.ndarray:
    """Least squares of t on ``columns`` with every row divided by t (relative error)."""
    design = np.column_stack(columns) / t[:, None]
    coef, *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    return coef


def least_squares_alpha_beta(nbytes, t_s) -> tuple[float, float]:
    """(alpha_s, beta_s_per_byte) of ``t = alpha + beta * S`` minimising the summed squared relative error.

    Relative error, sum(((t_i - alpha - beta S_i) / t_i)^2), because a sweep spans many decades of size: an
    unweighted fit would let the largest sizes decide alpha. Neither may be negative: when alpha comes out
    negative it is set to 0 and beta refitted alone; when beta then comes out negative it is set to 0 and
    alpha refitted alone (the rules of :func:`commlab.cost.fit_alpha_beta`).

    >>> a, b = least_squares_alpha_beta([1e3, 1e6, 1e9], [1e-5 + 1e-9, 1e-5 + 1e-6, 1e-5 + 1e-3])
    >>> round(a * 1e6, 6), round(1 / b / 1e9, 6)
    (10.0, 1000.0)
    """
    s = np.asarray(nbytes, dtype=float).ravel()
    t = np.asarray(t_s, dtype=float).ravel()
    alpha, beta = _weighted_lstsq([np.ones_like(s), s], t)
    if alpha < 0:
        alpha, beta = 0.0, float(_weighted_lstsq([s], t)[0])
    if beta < 0:
        alpha, beta = float(_weighted_lstsq([np.ones_like(s)], t)[0]), 0.0
    return float(alpha), float(beta)


def protocol_time_s(nbytes, regimes):
    """The protocol-aware model's time (s) of every size in ``nbytes`` (an array or one number).

    ``regimes`` are the fit's regimes in size order (:class:`commlab.cost.Regime`: ``first_nbytes``,
    ``alpha_s``, ``beta_s_per_byte``). Regime k holds the sizes from its ``first_nbytes`` (included) up to the
    next regime's (excluded), and there ``t = alpha_k + beta_k S``. A line says nothing outside its range: NCCL
    switches where its own *predicted* times cross, which is not always where the measured lines cross, so the
    fastest line at a size may belong to a regime that does not run there.

    >>> from commlab.cost import Regime
    >>> regimes = [Regime("LL", 5e-6, 1 / 20e9, 0.0, 3), Regime("Simple", 20e-6, 1 / 200e9, 4096.0, 3)]
    >>> [round(float(t) * 1e6, 4) for t in protocol_time_s([0, 4095, 4096], regimes)]
    [5.0, 5.2048, 20.0205]
    """
    s = np.asarray(nbytes, dtype=float)
    starts = np.array([r.first_nbytes for r in regimes[1:]], dtype=float)
    k = np.searchsorted(starts, s, side="right")          # a size equal to a start belongs to the new regime
    alpha = np.array([r.alpha_s for r in regimes], dtype=float)
    beta = np.array([r.beta_s_per_byte for r in regimes], dtype=float)
    return alpha[k] + beta[k] * s
