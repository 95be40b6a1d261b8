"""Hold the log's rank count against its own busbw column.

A published log's ``# Rank`` list can be cut short by whoever pasted it (NVIDIA/nccl-tests issue 322 shows
ranks 0-99 of a 1024-rank run): the largest listed rank then gives a wrong n, and every row's busbw disagrees
with ``algbw * F(n)`` (nccl-tests' doc/PERFORMANCE.md). The busbw column is nccl-tests' own statement of F(n),
so it arbitrates: where the ``# Rank`` lines fail it on every row and a ``# nranks:`` comment passes it, the
comment wins; where nothing the text says passes it, the note gives the n the column implies (an interval:
F(n) flattens as n grows, and the printed digits bound it).
"""
from __future__ import annotations

import math

from commlab.collectives import busbw_factor

#: The largest n the implied-interval search considers (nccl-tests prints no bigger runs than this).
MAX_RANKS = 1 << 20


def _factor_bounds(pairs: list[tuple[float, float, float, float]]) -> tuple[float, float] | None:
    """(low, high) of busbw / algbw over rows given as (algbw, busbw, half unit of algbw, of busbw)."""
    low, high = 0.0, math.inf
    for alg, bus, d_alg, d_bus in pairs:
        if alg - d_alg <= 0:
            continue
        low = max(low, (bus - d_bus) / (alg + d_alg))
        high = min(high, (bus + d_bus) / (alg - d_alg))
    return (low, high) if math.isfinite(high) and low <= high else None


def _first_n(collective: str, target: float, lo: int = 2, hi: int = MAX_RANKS) -> int:
    """The smallest n in [lo, hi] with F(n) >= target (F grows with n), or hi + 1."""
    if busbw_factor(collective, hi) < target:
        return hi + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if busbw_factor(collective, mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def implied_ranks(collective: str, pairs: list[tuple[float, float, float, float]]) -> tuple[int, int] | None:
    """The interval of n whose F(n) matches every row's printed busbw / algbw, or None where the column says
    nothing about n (F constant: broadcast, reduce) or no n fits.

    >>> implied_ranks("all_reduce", [(55.48, 110.84, 0.005, 0.005), (182.46, 364.57, 0.005, 0.005)])
    (1000, 1056)
    >>> implied_ranks("broadcast", [(10.0, 10.0, 0.005, 0.005)]) is None
    True
    """
    if busbw_factor(collective, 2) == busbw_factor(collective, MAX_RANKS):
        return None
    bounds = _factor_bounds(pairs)
    if bounds is None:
        return None
    first = _first_n(collective, bounds[0])
    last = _first_n(collective, math.nextafter(bounds[1], math.inf)) - 1
    return (first, last) if first <= min(last, MAX_RANKS) else None


def bw_pairs(parsed, layout) -> list[tuple[float, float, float, float]]:
    """(algbw, busbw, half unit of each as printed) in GB/s for every measurement of ``parsed`` rows
    (:class:`commlab.nccl.table.ParsedRow`) with algbw of at least 1 GB/s, where the printed ratio is
    precise."""
    from commlab.nccl.detect import half_unit

    out = []
    for p in parsed:
        for k, m in enumerate((p.row.oop, p.row.ip)):
            if m is None or m.algbw_GBps < 1.0:
                continue
            alg_tok, bus_tok = p.tokens[layout.n_head + 4 * k + 1], p.tokens[layout.n_head + 4 * k + 2]
            scale = layout.bw_scale_GBps
            out.append((m.algbw_GBps, m.busbw_GBps, half_unit(alg_tok) * scale, half_unit(bus_tok) * scale))
    return out


def arbitrate(n: int, source: str, metadata_n: int | None, check, collective: str | None,
              pairs: list[tuple[float, float, float, float]], notes: list[str]) -> int:
    """The n to use: ``n`` (from ``source``) unless it fails the busbw check (``check(n)`` lists the
    mismatching rows) where ``metadata_n`` (a ``# nranks:`` comment) passes it; notes say which and why, and
    give the n the busbw column implies when what is kept still fails it."""
    if not check(n):
        return n
    if metadata_n is not None and metadata_n != n and not check(metadata_n):
        notes.append(f"{source} give n = {n}, but every busbw fits the '# nranks:' comment's n = {metadata_n} "
                     f"and not {n} (a shortened rank list?): using {metadata_n}")
        return metadata_n
    span = implied_ranks(collective, pairs) if collective else None
    if span is not None and not span[0] <= n <= span[1]:
        said = f"n = {span[0]}" if span[0] == span[1] else f"n between {span[0]} and {span[1]}"
        notes.append(f"the busbw column implies {said}, not the n = {n} of {source}: give the true count "
                     f"with --ranks N")
    return n
