"""The protocol-aware fitted model: a measured curve as up to three regimes, each ``t = alpha + S / B``.

NCCL does not run one algorithm at every size. Its tuner (``src/graph/tuning.cc``) picks, per call, the
(algorithm, protocol) pair it predicts fastest: LL (8-byte stores with a flag: lowest latency, half the
bandwidth), LL128 (128-byte lines, 120 bytes of payload) and Simple (bulk copies with a fence per step: full
bandwidth, the highest latency), and Ring, Tree or NVLS. A measured curve is therefore a sequence of regimes,
each with its own fixed cost ``alpha`` (s) and bandwidth ``B`` (bytes/s of the ``size`` column, i.e. algbw)::

    t(S) = alpha_k + S / B_k      for S in regime k's size range [b_{k-1}, b_k)

The boundaries ``b_k`` are fitted too: NCCL switches where its *predicted* times cross, which is not always
where the measured lines cross (shipped log 13 jumps up by 35 us at 1 MiB; log 20 drops at 32 MiB). Where the
two fitted lines do cross between the last size of one regime and the first of the next, the boundary is put
at the crossing, so there the model is the faster of the two lines, as NCCL means it to be.

At most 3 regimes: 3 alphas, 3 bandwidths and 2 boundaries, 8 numbers (:attr:`ProtocolFit.params`).

The fit, robust to the noise real logs have (a 22 us outlier at 32 B in shipped log 07, odd/even alternation in
log 23): it minimises the sum of **absolute relative** errors ``|t_model / t - 1|`` (least absolute
deviations, which follow the median, not the outliers). For a line ``alpha + beta S`` that problem is a linear
programme whose optimum lies on a vertex: a line through two measured points, or through one point with
``alpha = 0`` or ``beta = 0``. So every candidate line is enumerated once, the cost of every candidate on
every contiguous run of sizes comes from cumulative sums, and the best split into regimes is a small dynamic
programme over the sorted sizes: exact, with no starting guess, in milliseconds for 30 rows.

The goals hold the tail as well as the median (90th percentile <= 12%). Where the least-absolute fit leaves
more than a tenth of the rows beyond :data:`TAIL_MARGIN` (10%), on a log of up to :data:`TAIL_MAX_ROWS` rows,
the fit is redone with a loss that bends there (``|e| + TAIL_WEIGHT x max(|e| - TAIL_MARGIN, 0)``, still a
linear programme, whose vertices are lines that meet two rows at a relative error of 0 or +-TAIL_MARGIN), and
the fit further inside both goals is kept.

Regimes are named by the sizes they cover (:data:`LABELS`: ``small``, ``medium``, ``large``), not by a
protocol: the fit sees where a curve's slope changes, not what NCCL ran there. A regime may be one protocol or
another algorithm altogether (the 8x H100 run's large regime is NVLS), and LL128 may never run (it is off on
PCIe paths before Hopper). What NCCL chose comes from a log with NCCL_DEBUG tuning lines
(:mod:`commlab.nccl.debuglog`) or from the replay of the machine (:func:`commlab.tuner.predict.predict`). The keys of
:attr:`ProtocolFit.params` keep the names they were published with (``alpha_LL_us``, ... in NCCL's protocol
order, :data:`PARAM_KEYS`) so that the JSON of ``commlab nccl-tests`` and ``commlab scorecard`` reads as before;
they name a position, not a protocol.

>>> sizes = 2.0 ** np.arange(3, 31)
>>> t_s = np.minimum(5e-6 + sizes / 20e9, 20e-6 + sizes / 200e9)      # two regimes, known
>>> fit = fit_protocol_model(sizes, t_s, max_regimes=2)
>>> [(r.label, round(r.alpha_s * 1e6, 3), round(r.bw_GBps, 3)) for r in fit.regimes]
[('small', 5.0, 20.0), ('large', 20.0, 200.0)]
>>> sorted(fit.params)[:2]
['alpha_LL_us', 'alpha_Simple_us']
>>> float(np.max(np.abs(fit.time_s(sizes) / t_s - 1))) < 1e-12
True
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commlab.errors import CommlabError

#: Most regimes a fit uses (the issue's "up to three"): 3 alphas + 3 bandwidths + 2 boundaries = 8 numbers.
MAX_REGIMES = 3
#: Fewest rows a regime may hold: two points determine an alpha and a bandwidth.
MIN_ROWS_PER_REGIME = 2
#: Rows per regime on average before another regime is allowed (3 regimes need 9 rows, 2 need 6): a regime
#: must be checked by at least one row beyond the two that determine it.
ROWS_PER_REGIME = 3
#: Fewest rows any fit needs: one regime (alpha, B) and one row to check it.
MIN_ROWS = 3
#: The regimes' names, by the sizes they cover: the fit does not know which protocol ran (module docstring).
LABELS = {1: ("all",), 2: ("small", "large"), 3: ("small", "medium", "large")}
#: The names of the regimes in :attr:`ProtocolFit.params` keys, kept from the first release for the JSON's readers:
#: NCCL's protocols in size order, a position and not a claim about what ran.
PARAM_KEYS = {1: ("Simple",), 2: ("LL", "Simple"), 3: ("LL", "LL128", "Simple")}


@dataclass(frozen=True)
class Regime:
    """One regime: ``t = alpha_s + nbytes * beta_s_per_byte`` over the sizes from ``first_nbytes`` on."""

    label: str
    """The regime's name by its sizes (small, medium, large; all for one regime): see the module docstring."""
    alpha_s: float
    beta_s_per_byte: float
    first_nbytes: float
    """The boundary where this regime starts (0 for the first)."""
    n_rows: int
    """Measured rows the regime was fitted on."""

    @property
    def bw_GBps(self) -> float:
        """B = 1 / beta in GB/s of the size column (algbw); infinite for a regime whose time does not grow."""
        return float("inf") if self.beta_s_per_byte == 0 else 1.0 / self.beta_s_per_byte / 1e9

    def time_s(self, nbytes) -> np.ndarray:
        return self.alpha_s + self.beta_s_per_byte * np.asarray(nbytes, dtype=float)


@dataclass(frozen=True)
class ProtocolFit:
    """A fitted protocol-aware model; ``time_s`` and ``regime_index`` take numpy arrays."""

    regimes: tuple[Regime, ...]
    n_rows: int
    mean_abs_error: float
    """Mean of |t_model / t - 1| over the rows fitted (what the first fit minimises)."""

    @property
    def boundaries_nbytes(self) -> tuple[float, ...]:
        return tuple(r.first_nbytes for r in self.regimes[1:])

    def regime_index(self, nbytes) -> np.ndarray:
        """Which regime (0-based) each size falls in."""
        return np.searchsorted(np.asarray(self.boundaries_nbytes), np.asarray(nbytes, dtype=float), side="right")

    def regime_label(self, nbytes) -> np.ndarray:
        return np.array([r.label for r in self.regimes])[self.regime_index(nbytes)]

    def time_s(self, nbytes) -> np.ndarray:
        s = np.asarray(nbytes, dtype=float)
        alpha = np.array([r.alpha_s for r in self.regimes])
        beta = np.array([r.beta_s_per_byte for r in self.regimes])
        k = self.regime_index(s)
        return alpha[k] + beta[k] * s

    def nbytes_at_fraction(self, fraction: float) -> float:
        """The size from which the last regime's algbw, ``S / (alpha + S / B)``, reaches ``fraction`` of its
        bandwidth B: ``fraction * alpha * B / (1 - fraction)`` (Hockney's n_1/2 at 0.5): where the curve
        flattens (0.9) or is half way (0.5), from the model rather than the nearest measured row."""
        if not 0.0 < fraction < 1.0:
            raise CommlabError(f"fraction must be between 0 and 1 (exclusive), got {fraction!r}")
        last = self.regimes[-1]
        if last.beta_s_per_byte == 0:
            return 0.0
        return fraction * last.alpha_s / last.beta_s_per_byte / (1.0 - fraction)

    @property
    def params(self) -> dict[str, dict]:
        """Every fitted number with its name and unit (at most 8): alpha in us, B in GB/s (algbw; null when
        infinite), boundaries in bytes."""
        out: dict[str, dict] = {}
        keys = PARAM_KEYS[len(self.regimes)]
        for key, r in zip(keys, self.regimes):
            bw = r.bw_GBps
            out[f"alpha_{key}_us"] = {"value": r.alpha_s * 1e6, "unit": "us"}
            out[f"bw_{key}_GBps"] = {"value": None if np.isinf(bw) else bw, "unit": "GB/s"}
        for a, b, r in zip(keys, keys[1:], self.regimes[1:]):
            out[f"switch_{a}_{b}_bytes"] = {"value": r.first_nbytes, "unit": "bytes"}
        return out

    def describe(self) -> list[str]:
        """One line per regime, for the command line."""
        lines = []
        for k, r in enumerate(self.regimes):
            upto = (f"up to {_fmt_b(self.regimes[k + 1].first_nbytes)}" if k + 1 < len(self.regimes)
                    else "and above")
            start = "from 0" if k == 0 else f"from {_fmt_b(r.first_nbytes)}"
            bw = "no growth" if np.isinf(r.bw_GBps) else f"B = {r.bw_GBps:.4g} GB/s"
            lines.append(f"{r.label:<7s} {start} {upto}: alpha = {r.alpha_s * 1e6:.4g} us, {bw} "
                         f"({r.n_rows} rows)")
        return lines


def _fmt_b(nbytes: float) -> str:
    from commlab.units import format_nbytes

    return format_nbytes(nbytes, binary=True)


def _clean(nbytes, t_s) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (size, time) with size > 0 and finite time > 0; CommlabError naming what is missing."""
    s, t = np.asarray(nbytes, dtype=float).ravel(), np.asarray(t_s, dtype=float).ravel()
    if s.shape != t.shape:
        raise CommlabError(f"need one time per size, got {s.size} sizes and {t.size} times")
    keep = np.isfinite(s) & np.isfinite(t) & (s > 0) & (t > 0)
    if s.size and not np.any(t[np.isfinite(t)] > 0):
        raise CommlabError(f"all {s.size} times are zero or negative: nothing to fit")
    s, t = s[keep], t[keep]
    if len(np.unique(s)) < 2:
        got = "no size" if len(s) == 0 else f"only the size {int(s[0])}"
        raise CommlabError(f"the protocol-aware fit needs at least {MIN_ROWS} rows with different sizes > 0 and "
                           f"times > 0; got {got}")
    if len(s) < MIN_ROWS:
        raise CommlabError(f"the protocol-aware fit needs at least {MIN_ROWS} rows with sizes > 0 and times > 0 "
                           f"(an alpha and a bandwidth, and one row to check them); got {len(s)}")
    order = np.argsort(s, kind="stable")
    return s[order], t[order]


#: Above this many rows, candidate lines join only rows at most LOCAL_PAIRS apart (a long linear-step sweep
#: would otherwise give n^2 candidates); the fit is then near-optimal instead of exact.
EXACT_ROWS = 96
LOCAL_PAIRS = 24
#: Where the tail loss bends: rows whose relative error exceeds it cost TAIL_WEIGHT times more per unit. The
#: least-absolute-error fit follows the median; where it leaves more than a tenth of the rows beyond this
#: margin, the fit is redone with the bent loss, which trades a little median for the tail (the issue's goals
#: hold both: median <= 5%, 90th percentile <= 12%), and the fit further inside both goals is kept.
TAIL_MARGIN = 0.10
#: The goals a fit is held to: median relative error <= 5%, 90th percentile <= 12%. Between the two
#: fits, the one further inside both (the larger ratio to its goal, smaller) is kept.
MEDIAN_GOAL, P90_GOAL = 0.05, 0.12
TAIL_WEIGHT = 4.0
#: The bent-loss refit has 9 times the candidate lines; it runs on logs of at most this many rows (a sweep with
#: ``-f 2`` from 8 B to 16 GiB has 32), so that a long linear-step sweep stays within a second.
TAIL_MAX_ROWS = 64
#: Work per block of candidates in the segment-cost table (floats), to bound memory on long logs.
_BLOCK_FLOATS = 2_000_000


def _candidates(s: np.ndarray, t: np.ndarray, margins: tuple[float, ...] = (0.0,)) -> tuple[np.ndarray, np.ndarray]:
    """Every vertex line (alpha >= 0, beta >= 0) of the fit's linear programme: through two rows, or through
    one row with alpha = 0 or beta = 0, each row met at a relative error from ``margins`` (0 for the least
    absolute error; also +-c where the loss bends at c, :data:`TAIL_MARGIN`)."""
    i, j = np.triu_indices(len(s), 1)
    ok = s[j] > s[i]
    if len(s) > EXACT_ROWS:
        ok &= (j - i) <= LOCAL_PAIRS
    i, j = i[ok], j[ok]
    alphas, betas = [], []
    for ei in margins:
        for ej in margins:
            ti, tj = t[i] * (1.0 + ei), t[j] * (1.0 + ej)
            beta = (tj - ti) / (s[j] - s[i])
            alpha = ti - beta * s[i]
            keep = (alpha >= 0) & (beta >= 0)
            alphas.append(alpha[keep])
            betas.append(beta[keep])
    for e in margins:                                                  # + flat lines and lines through 0
        alphas += [t * (1.0 + e), np.zeros(len(s))]
        betas += [np.zeros(len(s)), t * (1.0 + e) / s]
    return np.concatenate(alphas), np.concatenate(betas)


def _loss(err: np.ndarray, tail_weight: float) -> np.ndarray:
    """Per row: |e|, plus ``tail_weight`` x (|e| - TAIL_MARGIN) where |e| exceeds TAIL_MARGIN."""
    if tail_weight == 0.0:
        return err
    return err + tail_weight * np.maximum(err - TAIL_MARGIN, 0.0)


def _segment_costs(s, t, alphas, betas, tail_weight: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """cost[i, j]: least loss (:func:`_loss`) of one line over rows i..j-1, and which candidate gives it."""
    n = len(s)
    cost = np.full((n + 1, n + 1), np.inf)
    best = np.zeros((n + 1, n + 1), dtype=int)
    block = max(1, _BLOCK_FLOATS // (n + 1) ** 2)
    for lo in range(0, len(alphas), block):
        a, b = alphas[lo:lo + block], betas[lo:lo + block]
        err = _loss(np.abs((a[:, None] + b[:, None] * s[None, :]) / t[None, :] - 1.0), tail_weight)
        cum = np.concatenate([np.zeros((len(a), 1)), np.cumsum(err, axis=1)], axis=1)
        seg = cum[:, None, :] - cum[:, :, None]                      # [candidate, i, j]
        pick = np.argmin(seg, axis=0)
        value = np.take_along_axis(seg, pick[None], axis=0)[0]
        better = value < cost
        cost[better], best[better] = value[better], pick[better] + lo
    return cost, best


def _split(cost: np.ndarray, s: np.ndarray, m: int, min_rows: int) -> tuple[float, list[int]]:
    """Least total cost of m contiguous regimes of >= ``min_rows`` rows, cut only between different sizes;
    returns (cost, cut positions including 0 and n)."""
    n = len(s)
    can_cut = np.ones(n + 1, dtype=bool)
    can_cut[1:n] = s[1:] > s[:-1]
    best = np.full((m + 1, n + 1), np.inf)
    back = np.zeros((m + 1, n + 1), dtype=int)
    best[0, 0] = 0.0
    for k in range(1, m + 1):
        for j in range(k * min_rows, n + 1):
            if not can_cut[j]:
                continue
            starts = np.arange((k - 1) * min_rows, j - min_rows + 1)
            starts = starts[can_cut[starts]]
            if len(starts) == 0:
                continue
            totals = best[k - 1, starts] + cost[starts, j]
            pick = int(np.argmin(totals))
            best[k, j], back[k, j] = totals[pick], starts[pick]
    cuts, j = [n], n
    for k in range(m, 0, -1):
        j = int(back[k, j])
        cuts.append(j)
    return float(best[m, n]), cuts[::-1]


def _boundary(prev: tuple[float, float], nxt: tuple[float, float], s_last: float, s_first: float) -> float:
    """Where regime k+1 starts: the lines' crossing if it lies between the two rows, else their geometric mean."""
    (a0, b0), (a1, b1) = prev, nxt
    if b0 != b1:
        cross = (a1 - a0) / (b0 - b1)
        if s_last < cross < s_first:
            return float(cross)
    return float(np.sqrt(s_last * s_first))


def max_regimes_for(n_rows: int) -> int:
    """Regimes a log of ``n_rows`` rows may use: one per ROWS_PER_REGIME rows, at most MAX_REGIMES."""
    return int(max(1, min(MAX_REGIMES, n_rows // ROWS_PER_REGIME)))


def fit_protocol_model(nbytes, t_s, max_regimes: int | None = None,
                       min_rows_per_regime: int = MIN_ROWS_PER_REGIME) -> ProtocolFit:
    """Fit up to ``max_regimes`` (default: what the rows allow, :func:`max_regimes_for`) regimes to a curve,
    each of at least ``min_rows_per_regime`` rows (default :data:`MIN_ROWS_PER_REGIME`).

    ``nbytes`` is nccl-tests' ``size`` column, ``t_s`` the time in seconds; rows with size 0 are left out
    (nccl-tests times an empty call there). Raises CommlabError naming what is missing when fewer than
    MIN_ROWS usable rows or fewer than two different sizes remain, or when every time is zero.
    """
    s, t = _clean(nbytes, t_s)
    allowed = max_regimes_for(len(s))
    m = allowed if max_regimes is None else int(max(1, min(max_regimes, allowed)))
    if not isinstance(min_rows_per_regime, int) or isinstance(min_rows_per_regime, bool) or min_rows_per_regime < 1:
        raise CommlabError(f"min_rows_per_regime must be a whole number >= 1, got {min_rows_per_regime!r}")
    fit = _fit(s, t, m, (0.0,), 0.0, min_rows_per_regime)
    if len(s) <= TAIL_MAX_ROWS and _p90(fit, s, t) > TAIL_MARGIN:
        tail = _fit(s, t, m, (0.0, TAIL_MARGIN, -TAIL_MARGIN), TAIL_WEIGHT, min_rows_per_regime)
        if _against_goals(tail, s, t) < _against_goals(fit, s, t):
            fit = tail
    return fit


def _p90(fit: ProtocolFit, s: np.ndarray, t: np.ndarray) -> float:
    return float(np.percentile(relative_errors(fit.time_s(s), t), 90))


def _against_goals(fit: ProtocolFit, s: np.ndarray, t: np.ndarray) -> float:
    """The larger of median / MEDIAN_GOAL and p90 / P90_GOAL: below 1 where both goals hold."""
    e = relative_errors(fit.time_s(s), t)
    return max(float(np.median(e)) / MEDIAN_GOAL, float(np.percentile(e, 90)) / P90_GOAL)


def _fit(s: np.ndarray, t: np.ndarray, m: int, margins: tuple[float, ...], tail_weight: float,
         min_rows: int) -> ProtocolFit:
    alphas, betas = _candidates(s, t, margins)
    cost, best = _segment_costs(s, t, alphas, betas, tail_weight)
    while True:
        total, cuts = _split(cost, s, m, min_rows)
        if np.isfinite(total) or m == 1:
            break
        m -= 1                                   # too few distinct sizes to cut into m regimes
    labels = LABELS[m]
    lines = [(float(alphas[best[i, j]]), float(betas[best[i, j]])) for i, j in zip(cuts[:-1], cuts[1:])]
    regimes = []
    for k, ((i, j), (a, b)) in enumerate(zip(zip(cuts[:-1], cuts[1:]), lines)):
        first = 0.0 if k == 0 else _boundary(lines[k - 1], (a, b), s[i - 1], s[i])
        regimes.append(Regime(labels[k], a, b, first, int(j - i)))
    mean_abs = float(np.mean(relative_errors(ProtocolFit(tuple(regimes), len(s), 0.0).time_s(s), t)))
    return ProtocolFit(tuple(regimes), len(s), mean_abs)


def relative_errors(model_t_s, measured_t_s) -> np.ndarray:
    """|model / measured - 1| per row."""
    return np.abs(np.asarray(model_t_s, dtype=float) / np.asarray(measured_t_s, dtype=float) - 1.0)
