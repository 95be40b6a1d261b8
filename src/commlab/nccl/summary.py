"""What an nccl-tests run says in a few numbers, and whether its peak is what the link should give.

* peak busbw: the largest busbw over every out-of-place and in-place measurement;
* half-peak size: the smallest `size` whose busbw (the better of out-of-place and in-place) reaches half the
  peak, the message size from which the link is half used (Hockney's n_1/2);
* alpha-beta fit: ``t = alpha + beta * S`` over the out-of-place (size, time) points, by
  :func:`commlab.cost.fit_alpha_beta`;
* avg busbw: the footer's value, else the plain mean nccl-tests would print.

:func:`verdict` holds the peak busbw against a link's **unidirectional** bandwidth (nccl-tests'
doc/PERFORMANCE.md: "busbw is what to hold against a link's unidirectional bandwidth"). Thresholds, from the real
fixtures:

* above the link, ratio > 1.00: impossible for point-to-point traffic, so the switch reduces (NVLS on NVSwitch,
  SHARP / CollNet in InfiniBand) or the link named is not the one used. 8x H100 with NVLS reaches 483 GB/s
  against NVLink 4's 450 GB/s (log 07, 107 %);
* healthy, 0.70 <= ratio <= 1.00: ring all_reduce on a good NVSwitch box reaches 78-82 % (4x A100 235 GB/s of
  NVLink 3's 300, log 01; 4x H100 371 GB/s of 450, log 03);
* low, ratio < 0.70: something is in the way. 2x RTX 2080 Ti without P2P reach 4 GB/s, 25 % of PCIe 3's
  16 GB/s (log 14, traffic staged through host memory); 4x A100 with NCCL_P2P_DISABLE=1 reach 5.2 GB/s,
  under 2 % of NVLink 3 (log 02).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.nccl.format import avg_busbw_GBps
from commlab.nccl.parse import NcclTestsLog
from commlab.nccl.records import Row

#: Ratio of peak busbw to the link's unidirectional bandwidth at or above which a run is healthy.
HEALTHY_RATIO = 0.70
#: Ratio above which the peak exceeds the link (in-switch reduction, or the wrong link).
ABOVE_RATIO = 1.00
VERDICTS = ("healthy", "low", "above the link")


def _best_busbw(row: Row) -> float:
    return max(m.busbw_GBps for m in (row.oop, row.ip) if m is not None)


def peak_busbw_GBps(rows: list[Row]) -> float:
    """The largest busbw over every out-of-place and in-place measurement."""
    if not rows:
        raise CommlabError("no rows to take a peak from: the log has no readable table rows")
    return max(_best_busbw(r) for r in rows)


def half_peak_size_bytes(rows: list[Row]) -> int:
    """The smallest `size` whose busbw reaches half the peak (rows taken in size order)."""
    half = peak_busbw_GBps(rows) / 2.0
    return min(r.size_bytes for r in rows if _best_busbw(r) >= half)


@dataclass(frozen=True)
class Summary:
    """The few numbers the command line and the book print for a run."""

    collective: str | None
    n_ranks: int | None
    format: str
    n_rows: int
    peak_busbw_GBps: float
    peak_size_bytes: int
    half_peak_size_bytes: int
    alpha_s: float | None
    """Fitted fixed cost per operation (None with fewer than two sizes above zero)."""
    beta_s_per_byte: float | None
    avg_busbw_GBps: float


def fit_rows(rows: list[Row]):
    """``commlab.cost.fit_alpha_beta`` over the out-of-place (size, time) points with size > 0, or None
    when fewer than two distinct sizes are left."""
    import numpy as np

    from commlab.cost import fit_alpha_beta

    points = sorted({(r.size_bytes, r.oop.time_us) for r in rows if r.size_bytes > 0})
    if len({s for s, _ in points}) < 2:
        return None
    nbytes = np.array([s for s, _ in points], dtype=float)
    t_s = np.array([t for _, t in points], dtype=float) * 1e-6
    return fit_alpha_beta(nbytes, t_s)


def _check_readable(log: NcclTestsLog) -> None:
    """CommlabError when most row-like lines could not be read: a peak, a fit and a verdict from the few
    that could would describe a run that is mostly not there."""
    bad = len(log.unreadable)
    if bad and bad >= len(log.rows):
        number, text = log.unreadable[0]
        why = next((n.split("(", 1)[1].rstrip(")") for n in log.notes if n.startswith(f"line {number}: row not read")),
                   "see the notes")
        raise CommlabError(
            f"{bad} of {bad + len(log.rows)} table rows could not be read (first at line {number}: {why}): no "
            "summary or verdict from the few that could; fix or cut the unreadable lines")


def _finite_or_none(value) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def summarize(log: NcclTestsLog) -> Summary:
    """The :class:`Summary` of a parsed log; CommlabError when it has no rows, or when most of its rows could
    not be read."""
    rows = log.rows
    peak = peak_busbw_GBps(rows)
    _check_readable(log)
    fit = fit_rows(rows)
    avg = log.avg_busbw_GBps if log.avg_busbw_GBps is not None else avg_busbw_GBps(rows)
    return Summary(
        collective=log.collective, n_ranks=log.n_ranks, format=log.format, n_rows=len(rows),
        peak_busbw_GBps=peak, peak_size_bytes=min(r.size_bytes for r in rows if _best_busbw(r) == peak),
        half_peak_size_bytes=half_peak_size_bytes(rows),
        alpha_s=None if fit is None else _finite_or_none(fit.alpha_s),
        beta_s_per_byte=None if fit is None else _finite_or_none(fit.beta_s_per_byte), avg_busbw_GBps=float(avg))


@dataclass(frozen=True)
class Verdict:
    """A peak busbw held against a link."""

    verdict: str
    percent: float
    """Peak busbw as a percentage of the link's unidirectional bandwidth."""
    link: str
    unidir_GBps: float
    explanation: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise CommlabError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "percent": self.percent, "link": self.link,
                "unidir_GBps": self.unidir_GBps, "explanation": self.explanation}


def _explain(verdict: str, title: str) -> str:
    if verdict == "above the link":
        return (f"above what {title} carries one way: the switch reduces (NVLS, SHARP/CollNet) "
                "or the traffic does not use this link")
    if verdict == "healthy":
        return f"within the {HEALTHY_RATIO:.0%}-{ABOVE_RATIO:.0%} of {title} a healthy run reaches"
    return (f"under {HEALTHY_RATIO:.0%} of {title}: check P2P (NCCL_P2P_DISABLE, ACS), the transport "
            "NCCL chose (NCCL_DEBUG=INFO) and the topology")


def verdict(peak_busbw_GBps: float, link: str) -> Verdict:
    """Judge a peak busbw (GB/s) against ``commlab.hardware.link(link).unidir_GBps``; thresholds and their
    justification in the module docstring."""
    from commlab.hardware import link as find_link

    spec = find_link(link)
    peak = float(peak_busbw_GBps)
    if not peak >= 0.0:
        raise CommlabError(f"peak busbw must be a number >= 0 GB/s, got {peak_busbw_GBps!r}")
    ratio = peak / spec.unidir_GBps
    name = "above the link" if ratio > ABOVE_RATIO else "healthy" if ratio >= HEALTHY_RATIO else "low"
    return Verdict(verdict=name, percent=100.0 * ratio, link=spec.name, unidir_GBps=spec.unidir_GBps,
                   explanation=_explain(name, spec.title))
