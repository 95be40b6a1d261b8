"""Which collective a log ran, over how many ranks, and under which bandwidth rule, from its text and rows.

Collective, in order of trust: the caller; a ``# collective:`` comment; nccl-tests' own
``# Collective test starting: X_perf``; a command line naming ``X_perf``; the columns. The columns separate
the families by ``redop`` (reducing or not), ``root`` (-1 or a rank) and ``size / (count * itemsize)``
(1, or N where the `size` column is the whole buffer); inside a family (all_gather / all_to_all,
gather / scatter) the table is nearly silent (alltoall prints ``N/A`` for its in-place check), but the bus
factor (N-1)/N is the same, so every check still holds.

Ranks: the caller; the ``# Rank`` lines of ``# Using devices`` (one per rank); a ``# nranks:`` comment;
``nThread x nGpus`` of the preamble when no rank lines were printed (one process assumed).

The rank count is held against the log's own busbw column. A published log's ``# Rank`` list can be cut short by
whoever pasted it (a 1024-rank run pasted with ranks 0-99 only): the largest listed rank then gives a wrong n, and
every row's busbw disagrees with ``algbw * F(n)`` (nccl-tests' doc/PERFORMANCE.md). The busbw column is
nccl-tests' own statement of F(n), so it arbitrates (:func:`arbitrate`): where the ``# Rank`` lines fail it on
every row and a ``# nranks:`` comment passes it, the comment wins; where nothing the text says passes it, the note
gives the n the column implies (:func:`implied_ranks`: an interval, F(n) flattens as n grows, and the printed
digits bound it).
"""
from __future__ import annotations

import math
import re

from commlab.collectives import busbw_factor, canonical, spec
from commlab.errors import CommlabError
from commlab.nccl.lines import (
    ITEMSIZE,
)
from commlab.nccl.records import Row

_PERF = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|gather|scatter|"
                   r"sendrecv)_perf\b")
_STARTING = re.compile(r"Collective test starting:\s*(\w+)")


def starting_collective(text: str) -> str | None:
    """The collective of nccl-tests' ``# Collective test starting: X_perf`` line, else None.

    >>> starting_collective("# Collective test starting: all_gather_perf"), starting_collective("# size")
    ('all_gather', None)
    """
    match = _STARTING.search(text)
    if match is None:
        return None
    try:
        return canonical(match.group(1).removesuffix("_perf"))
    except CommlabError:
        return match.group(1)


def metadata_collective(text: str) -> str | None:
    """The collective of a fixture's ``# collective: X`` line, else None."""
    match = re.match(r"^#\s*collective:\s*(\w+)", text)
    if match is None:
        return None
    try:
        return canonical(match.group(1))
    except CommlabError:
        return match.group(1)


def collective_from_text(comments: list[str], metadata: dict[str, str], all_text: list[str]) -> str | None:
    """The collective named by metadata, nccl-tests' starting line or a command line, else None."""
    if "collective" in metadata:
        return canonical(metadata["collective"].split()[0])
    for text in comments:
        match = _STARTING.search(text)
        if match:
            return canonical(match.group(1))
    for text in all_text:
        match = _PERF.search(text)
        if match:
            return canonical(match.group(1))
    return None


def _size_ratio(rows: list[Row]) -> int | None:
    """size / (count * itemsize) of the first row with elements, as an integer, else None."""
    for r in rows:
        itemsize = ITEMSIZE.get(r.type)
        if r.count > 0 and itemsize:
            return round(r.size_bytes / (r.count * itemsize))
    return None


def collectives_from_columns(rows: list[Row]) -> tuple[str, ...]:
    """The collectives whose columns match ``rows``; the first is the one to assume. Empty if unknown."""
    if not rows:
        return ()
    reduces = any(r.redop != "none" for r in rows)
    rooted = any(r.root >= 0 for r in rows)
    ratio = _size_ratio(rows)
    if ratio is None:
        return ()
    whole = ratio > 1
    table = {
        (True, False, False): ("all_reduce",), (True, False, True): ("reduce_scatter",),
        (True, True, False): ("reduce",), (True, True, True): ("reduce",),
        (False, True, False): ("broadcast",), (False, True, True): ("scatter", "gather"),
        (False, False, False): ("sendrecv",), (False, False, True): ("all_gather", "all_to_all"),
    }
    found = table[(reduces, rooted, whole)]
    if found == ("all_gather", "all_to_all") and _in_place_unchecked(rows):
        return ("all_to_all", "all_gather")
    return found


def _in_place_unchecked(rows: list[Row]) -> bool:
    """True where every in-place #wrong is N/A while out-of-place ones are counted: nccl-tests' alltoall
    cannot check its in-place result (log 18)."""
    ip = [r.ip.wrong for r in rows if r.ip is not None]
    return bool(ip) and all(w is None for w in ip) and any(r.oop.wrong is not None for r in rows)


def ranks_hint(rows: list[Row], collective: str | None) -> int | None:
    """N implied by size / (count * itemsize) where the `size` column is the whole buffer, else None."""
    if collective is None or not spec(collective).whole_buffer_size:
        return None
    ratio = _size_ratio(rows)
    return ratio if ratio and ratio > 1 else None


def n_ranks_from_text(rank_lines: list[int], metadata: dict[str, str], preamble: dict) -> tuple[int | None, str]:
    """(n, where it came from) from the ``# Rank`` lines, ``# nranks:`` or nThread x nGpus; (None, "")."""
    if rank_lines:
        return max(rank_lines) + 1, "the '# Rank' lines"
    if "nranks" in metadata:
        try:
            return int(metadata["nranks"].split()[0]), "the '# nranks:' comment"
        except ValueError:
            raise CommlabError(f"'# nranks:' must be a whole number, got {metadata['nranks']!r}") from None
    if "n_threads" in preamble and "n_gpus" in preamble:
        return preamble["n_threads"] * preamble["n_gpus"], "nThread x nGpus (one process assumed)"
    return None, ""


def implied_factor(size_bytes: int, time_us: float, algbw_GBps: float) -> float:
    """algbw * t / size: 1 under the modern rule (algbw = S/t), (N-1)/N under the legacy all_gather /
    reduce_scatter rule (algbw = S(N-1)/N/t, nccl-tests before its 2020-06-19 change to the busbw rule)."""
    return algbw_GBps * 1e9 * time_us * 1e-6 / size_bytes


def bandwidth_rule(rows: list[Row], collective: str | None, n_ranks: int | None) -> str:
    """"legacy" when all_gather / reduce_scatter rows follow algbw = S(N-1)/N/t with busbw = algbw, else
    "modern". Only rows with algbw >= 1 GB/s vote: their printed algbw is precise to 0.5 % or better."""
    if collective not in ("all_gather", "reduce_scatter") or not n_ranks or n_ranks < 2:
        return "modern"
    legacy_k = (n_ranks - 1) / n_ranks
    votes = [abs(k - legacy_k) < abs(k - 1.0)
             for r in rows for m in (r.oop, r.ip)
             if m is not None and m.algbw_GBps >= 1.0 and r.size_bytes > 0
             for k in [implied_factor(r.size_bytes, m.time_us, m.algbw_GBps)]]
    return "legacy" if votes and sum(votes) * 2 > len(votes) else "modern"


def half_unit(token: str) -> float:
    """Half a unit of the last printed digit of a number as printed (``0.005`` for ``449.73``).

    >>> half_unit("449.73"), half_unit("13989"), half_unit("1.2e+07")
    (0.005, 0.5, 500000.0)
    """
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals) * 10.0 ** (int(exponent) if exponent else 0)


#: algbw * time / size of a row read in the right units: 1 (modern), (N-1)/N >= 1/2 (legacy all_gather /
#: reduce_scatter); printing rounds by under 1 % for the rows checked. Outside this band the units are wrong.
IMPLIED_FACTOR_BAND = (0.45, 1.6)


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
    (:class:`commlab.nccl.lines.ParsedRow`) with algbw of at least 1 GB/s, where the printed ratio is
    precise."""
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
