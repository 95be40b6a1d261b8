"""A whole nccl-tests log read into an :class:`NcclTestsLog`: which collective and how many ranks, one sweep or
several, the bandwidth rule, and every line that could not be read, with why.

Tell from a log's text and rows which collective ran, over how many ranks, and under which bandwidth rule.

Collective, in order of trust: the caller; a ``# collective:`` comment; nccl-tests' own
``# Collective test starting: X_perf``; a command line naming ``X_perf``; the columns. The columns separate
the families by ``redop`` (reducing or not), ``root`` (-1 or a rank) and ``size / (count * itemsize)``
(1, or N where the `size` column is the whole buffer); inside a family (all_gather / all_to_all,
gather / scatter) the table is nearly silent (alltoall prints ``N/A`` for its in-place check), but the bus
factor (N-1)/N is the same, so every check still holds.

Ranks: the caller; the ``# Rank`` lines of ``# Using devices`` (one per rank); a ``# nranks:`` comment;
``nThread x nGpus`` of the preamble when no rank lines were printed (one process assumed).

Is what was read one sweep? Tables repeated, interleaved or of two collectives, and units that do not fit.

A log can hold more than one table: nccl-tests' ``-N`` run cycles, ``-d all`` or ``-o all`` print the sweep
again from the smallest size; a log pasted twice holds the same table twice; two ranks printing at once (no
``MPI_Comm`` rank filter, two processes on one terminal) interleave their rows; a file can hold two
collectives' runs. Read as one run, any of these changes the peak, the fit and the verdict in silence.

:func:`split_tables` cuts the rows where a new table starts (a header or a ``# Collective test starting``
line between two rows, or a size that does not grow) and :func:`one_table` decides: one table is read as it
is; copies of one table are read once; several sweeps of one collective keep the first (with a note naming
the others); rows that repeat sizes without restarting the sweep (interleaved or duplicated rows) and tables
of different collectives are refused with a :class:`~commlab.errors.CommlabError` naming the lines.

:func:`check_units` holds every precise row to ``algbw = size / time`` (nccl-tests' ``getBw``; the legacy
all_gather / reduce_scatter rule gives (N-1)/N of it): a log whose numbers are a thousand times off (a time
column in ms, a bandwidth in MB/s under a ``(us)`` / ``(GB/s)`` header) is refused.

Hold the log's rank count against its own busbw column.

A published log's ``# Rank`` list can be cut short by whoever pasted it (NVIDIA/nccl-tests issue 322 shows
ranks 0-99 of a 1024-rank run): the largest listed rank then gives a wrong n, and every row's busbw disagrees
with ``algbw * F(n)`` (nccl-tests' doc/PERFORMANCE.md). The busbw column is nccl-tests' own statement of F(n),
so it arbitrates: where the ``# Rank`` lines fail it on every row and a ``# nranks:`` comment passes it, the
comment wins; where nothing the text says passes it, the note gives the n the column implies (an interval:
F(n) flattens as n grows, and the printed digits bound it).

Read an nccl-tests log (modern or legacy, wrapped by a launcher or not) into rows and what they mean.

``parse_log`` keeps every row it can read, reports every row-like line it cannot (with its line number and
why: too few columns, ``nan``, a negative time, an NCCL message glued to it), and checks each row against
nccl-tests' rule ``busbw = algbw * F(n)`` (nccl-tests' doc/PERFORMANCE.md, F from
:func:`commlab.collectives.busbw_factor`). Legacy all_gather / reduce_scatter runs (before 2020-06-19) print
``algbw = S(n-1)/n/t`` and ``busbw = algbw``; the reader recognises that rule from the numbers.

It does not misread in silence: the header's units are read (``(ms)``,
``(MB/s)`` are converted), rows whose algbw is not size / time are refused, repeated tables are read once or
the first of them with a note, and interleaved rows or two collectives in one file are refused with a
CommlabError naming the lines.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace

from commlab.collectives import busbw_factor, canonical, spec
from commlab.errors import CommlabError, check_n_ranks
from commlab.nccl.format import avg_busbw_GBps, out_of_bounds
from commlab.nccl.lines import (Comments, ITEMSIZE, Layout, Line, ParsedRow, classify, layout_from_header,
                                layout_from_tokens, parse_row, read_comment, split_glued, units_from_header)
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


@dataclass(frozen=True)
class Table:
    """Rows ``start`` to ``stop`` (indices into the rows read) form one sweep."""

    start: int
    stop: int
    first_line: int
    last_line: int
    collective: str | None
    """Named by the ``# Collective test starting`` line before it, if any."""

    def rows(self, rows: list[Row]) -> list[Row]:
        return rows[self.start:self.stop]

    @property
    def lines(self) -> str:
        return f"lines {self.first_line}-{self.last_line}"


def split_tables(rows: list[Row], row_lines: list[int], breaks: list[tuple[int, str | None]]) -> list[Table]:
    """Cut ``rows`` (read at ``row_lines``) into tables. ``breaks``: (line, collective or None) of every
    header line and ``# Collective test starting`` line, in order."""
    tables: list[Table] = []
    start, k, named, latest = 0, 0, None, None
    for i, line in enumerate(row_lines):
        crossed = False
        while k < len(breaks) and breaks[k][0] < line:
            crossed, latest, k = True, breaks[k][1] or latest, k + 1
        if i == 0:
            named = latest
        elif crossed or _restarts(rows[i - 1], rows[i]):
            tables.append(Table(start, i, row_lines[start], row_lines[i - 1], named))
            start, named = i, latest
    if rows:
        tables.append(Table(start, len(rows), row_lines[start], row_lines[-1], named))
    return tables


def _restarts(before: Row, row: Row) -> bool:
    """True when ``row`` cannot follow ``before`` in one sweep: its size does not grow. Size 0 may repeat:
    nccl-tests rounds the smallest requested sizes down to 0 elements (log 15: two rows of size 0)."""
    return row.size_bytes < before.size_bytes or (row.size_bytes == before.size_bytes and row.size_bytes > 0)


def _family(rows: list[Row]) -> tuple[str, ...]:
    return collectives_from_columns(rows)


def _refuse_interleaved(tables: list[Table], rows: list[Row]) -> None:
    first = tables[0].rows(rows)[0].size_bytes
    odd = next((t for t in tables[1:] if t.rows(rows)[0].size_bytes != first), None)
    if odd is None:
        return
    size = rows[odd.start].size_bytes
    earlier = [t for t in tables if t.start < odd.start and any(r.size_bytes == size for r in t.rows(rows))]
    where = (f" (first at line {earlier[0].first_line + [r.size_bytes for r in earlier[0].rows(rows)].index(size)})"
             if earlier else "")
    raise CommlabError(
        f"size {size} appears again at line {odd.first_line}{where} without the sweep starting "
        "over: rows of two tables are interleaved (two ranks printing at once?) or duplicated. commlab does "
        "not read such rows as one run; keep one rank's output (e.g. mpirun --tag-output, then one tag)")


def _refuse_two_collectives(tables: list[Table], rows: list[Row]) -> None:
    names = [t.collective or "/".join(_family(t.rows(rows))) or "?" for t in tables]
    if len(set(names) - {"?"}) > 1:
        parts = [f"{name} ({t.lines})" for name, t in zip(names, tables)]
        raise CommlabError(f"the log holds runs of different collectives: {', '.join(parts)}; one summary of "
                           "them would mix them: put each collective's run in a file of its own")


def one_table(rows: list[Row], tables: list[Table]) -> tuple[Table | None, str | None]:
    """(the table to read, a note) for the tables found; CommlabError for interleaved rows or mixed
    collectives (see the module docstring)."""
    if len(tables) <= 1:
        return (tables[0] if tables else None), None
    _refuse_two_collectives(tables, rows)
    _refuse_interleaved(tables, rows)
    first = tables[0]
    others = ", ".join(t.lines for t in tables[1:])
    if all(t.rows(rows) == first.rows(rows) for t in tables[1:]):
        return first, (f"the same table appears {len(tables)} times ({first.lines}, {others}): it is read once")
    return first, (f"{len(tables)} sweeps in one log (nccl-tests -N, -d all or -o all, or runs appended): only the "
                   f"first ({first.lines}) is read; the others ({others}) are left out: read each on its own")


def check_units(rows: list[Row], row_lines: list[int]) -> None:
    """CommlabError when the precise rows do not satisfy algbw ~ size / time (see the module docstring)."""
    implied = [(m.algbw_GBps * 1e9 * m.time_us * 1e-6 / r.size_bytes, line)
               for r, line in zip(rows, row_lines) for m in (r.oop, r.ip)
               if m is not None and r.size_bytes > 0 and m.algbw_GBps >= 1.0 and m.time_us >= 10.0]
    if not implied:
        return
    implied.sort()
    factor, line = implied[len(implied) // 2]
    low, high = IMPLIED_FACTOR_BAND
    if not low <= factor <= high:
        raise CommlabError(
            f"the rows' algbw is not size / time: at line {line} algbw x time / size = {factor:.3g} (1 expected, "
            "as nccl-tests computes algbw); the time or bandwidth columns are not in the units the header "
            "gives ((us) and (GB/s) for nccl-tests): correct the header's units or the values")


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


FORMATS = ("modern", "legacy")


@dataclass
class NcclTestsLog:
    """A parsed nccl-tests log."""

    collective: str | None
    """Canonical name (commlab.collectives); None when neither the text nor the caller says."""
    n_ranks: int | None
    """N for the bus factor; None when neither the text nor the caller says."""
    format: str
    """"modern" (``#wrong``, ``redop`` and ``root`` columns) or "legacy" (``error`` column)."""
    rows: list[Row]
    unreadable: list[tuple[int, str]]
    """(line number, text) of every row-like line that could not be read (a run cut off mid-row, ...)."""
    preamble: dict
    avg_busbw_GBps: float | None
    """The footer's ``Avg bus bandwidth`` when printed, else the mean of the rows' busbw."""
    out_of_bounds: int | None
    notes: list[str] = field(default_factory=list)
    row_lines: list[int] = field(default_factory=list)
    """Line number of each row, in the order of ``rows``."""
    bandwidth_rule: str = "modern"
    """"legacy" where all_gather / reduce_scatter use algbw = S(n-1)/n/t and busbw = algbw."""
    busbw_mismatches: list[int] = field(default_factory=list)
    """Line numbers of rows whose busbw is not algbw * F(n) within printing precision."""
    legacy_errors: list[tuple[float | None, ...]] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    footer_avg_busbw_GBps: float | None = None
    collective_candidates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise CommlabError(f"format must be one of {FORMATS}, got {self.format!r}")

    @property
    def computed_avg_busbw_GBps(self) -> float | None:
        """The plain mean of busbw over every out-of-place and in-place row (None without rows)."""
        return avg_busbw_GBps(self.rows) if self.rows else None


def _table_layout(lines: list[Line], header: Layout | None) -> tuple[Layout, bool]:
    """The layout to read rows with and whether the table has in-place columns."""
    counts = [len(line.text.split()) for line in lines if line.kind == "row"]
    in_place = any(c >= 11 for c in counts) or not counts
    if header is not None:
        header = _blank_column(header, counts)
        if not header.has_check:
            in_place = any(c >= header.n_head + 2 * header.measure_width for c in counts) or not counts
        return header, in_place
    guesses = Counter(layout_from_tokens(line.text.split()) for line in lines
                      if line.kind == "row" and len(line.text.split()) in (7, 8, 9, 11, 12, 13))
    return (guesses.most_common(1)[0][0] if guesses else Layout()), in_place


def _blank_column(header: Layout, counts: list[int]) -> Layout:
    """The header's layout, or, where no row has its width but every row has one column fewer, the header
    without its ``redop`` (or else ``root``) column: legacy alltoall tables print ``redop`` in the header and
    leave it blank in the rows."""
    def widths(lay: Layout) -> set[int]:
        return {lay.n_head + lay.measure_width * k for k in (1, 2)}

    if not counts or any(c in widths(header) for c in counts):
        return header
    for alt in (replace(header, has_redop=False), replace(header, has_root=False)):
        if alt != header and all(c in widths(alt) for c in counts):
            return alt
    return header


@dataclass
class _Reading:
    """What one pass over the lines found."""

    comments: Comments
    layout: Layout
    parsed: list[ParsedRow]
    row_lines: list[int]
    unreadable: list[tuple[int, str]]
    notes: list[str]
    breaks: list[tuple[int, str | None]] = field(default_factory=list)
    """(line, collective or None) of header and ``# Collective test starting`` lines: where tables start."""

    @property
    def format(self) -> str:
        lay = self.layout
        return "legacy" if lay.legacy_error or not (lay.has_redop and lay.has_root) else "modern"


def _line_notes(lines: list[Line]) -> list[str]:
    """Notes on the lines that are neither comments nor rows."""
    kinds = Counter(line.kind for line in lines)
    notes = []
    if kinds["nccl_debug"]:
        notes.append(f"{kinds['nccl_debug']} NCCL debug lines skipped (NCCL_DEBUG output)")
    if kinds["elision"]:
        notes.append(f"{kinds['elision']} elided stretch(es) ('...') in the log: rows are missing there")
    for line in [line for line in lines if line.kind == "other"][:3]:
        notes.append(f"line {line.number}: not part of the table: {line.text.strip()[:80]!r}")
    return notes


def _break_of(text: str) -> tuple[bool, str | None]:
    """(starts a table, collective named): a header line, nccl-tests' ``Collective test starting`` or a
    fixture's ``# collective:`` line."""
    starting = starting_collective(text) or metadata_collective(text)
    return (starting is not None or layout_from_header(text) is not None), starting


def _header(lines: list[Line], reading: _Reading) -> Layout | None:
    """Read the comments into ``reading``; the layout named by the first header line, with its units."""
    header, units = None, None
    for line in lines:
        if line.kind != "comment":
            continue
        header = header or layout_from_header(line.text)
        units = units or units_from_header(line.text)
        read_comment(line.text, reading.comments)
        starts, name = _break_of(line.text)
        if starts:
            reading.breaks.append((line.number, name))
    if header is not None and units is not None:
        header = replace(header, time_scale_us=units[0], bw_scale_GBps=units[1])
    if units is not None and units != (1.0, 1.0):
        reading.notes.append(f"units from the header: time x {units[0]:g} -> us, bandwidth x {units[1]:g} -> GB/s")
    return header


def _read_row(line: Line, reading: _Reading, in_place: bool) -> None:
    text, glued = split_glued(line.text)
    try:
        parsed = parse_row(text, reading.layout, in_place)
    except ValueError as exc:
        why = f"{exc}; an NCCL message is glued to it: {glued[:80]!r}" if glued else str(exc)
        reading.unreadable.append((line.number, line.raw))
        reading.notes.append(f"line {line.number}: row not read ({why})")
        return
    reading.parsed.append(parsed)
    reading.row_lines.append(line.number)
    if glued:
        reading.notes.append(f"line {line.number}: an NCCL message is glued to the end of this row (read without "
                             f"it): {glued[:100]!r}")


def _read_lines(lines: list[Line]) -> _Reading:
    reading = _Reading(Comments(), Layout(), [], [], [], [])
    header = _header(lines, reading)
    reading.layout, in_place = _table_layout(lines, header)
    for line in lines:
        if line.kind == "row":
            _read_row(line, reading, in_place)
    reading.notes += _line_notes(lines)
    return reading


def _one_table(reading: _Reading) -> bool:
    """Keep the rows of one sweep (see commlab.nccl.parse); True when tables that differ from it were left
    out (then the footer, which belongs to the last, is not this table's)."""
    rows = [p.row for p in reading.parsed]
    tables = split_tables(rows, reading.row_lines, reading.breaks)
    table, note = one_table(rows, tables)
    if note is not None:
        reading.notes.append(note)
    if table is None or len(tables) == 1:
        return False
    reading.parsed = reading.parsed[table.start:table.stop]
    reading.row_lines = reading.row_lines[table.start:table.stop]
    return any(t.rows(rows) != table.rows(rows) for t in tables)


def _choose_collective(caller: str | None, comments: Comments, lines: list[Line], rows: list[Row],
                       notes: list[str]) -> tuple[str | None, tuple[str, ...]]:
    from_text = collective_from_text(comments.texts, comments.metadata, [ln.text for ln in lines])
    candidates = collectives_from_columns(rows)
    chosen = canonical(caller) if caller is not None else from_text
    if caller is not None and from_text is not None and from_text != chosen:
        notes.append(f"the log names {from_text}, the caller said {chosen}; using {chosen}")
    if chosen is None and candidates:
        chosen = candidates[0]
        alt = f" (or {', '.join(candidates[1:])}: same columns and bus factor)" if len(candidates) > 1 else ""
        notes.append(f"collective {chosen} guessed from the columns{alt}")
    elif chosen is not None and candidates and chosen not in candidates:
        notes.append(f"the columns look like {' or '.join(candidates)}, not {chosen}")
    return chosen, candidates


def _choose_n(caller: int | None, comments: Comments, rows: list[Row], collective: str | None,
              notes: list[str]) -> int | None:
    from_text, source = n_ranks_from_text(comments.ranks, comments.metadata, comments.preamble)
    if caller is not None:
        n = check_n_ranks(caller)
        if from_text is not None and from_text != n:
            notes.append(f"{source} give n = {from_text}, the caller said {n}; using {n}")
        return n
    if from_text is not None:
        notes.append(f"n = {from_text} from {source}")
        return from_text
    hint = ranks_hint(rows, collective)
    tail = f"; the size and count columns suggest n = {hint}" if hint else ""
    notes.append(f"the number of ranks is not in the log (no '# Rank' lines){tail}")
    return None


def _check_busbw(parsed: list[ParsedRow], row_lines: list[int], collective: str | None, n: int | None,
                 rule: str, layout: Layout) -> list[int]:
    """Line numbers of rows where busbw differs from algbw * F(n) by more than the printing precision."""
    if collective is None or n is None:
        return []
    factor = 1.0 if rule == "legacy" else busbw_factor(collective, n)
    bad = []
    for p, number in zip(parsed, row_lines):
        for k, m in enumerate((p.row.oop, p.row.ip)):
            if m is None:
                continue
            start = layout.n_head + layout.measure_width * k
            alg_tok, bus_tok = p.tokens[start + 1], p.tokens[start + 2]
            scale = layout.bw_scale_GBps
            tol = (half_unit(alg_tok) * factor + half_unit(bus_tok)) * scale + 1e-9
            if abs(m.busbw_GBps - m.algbw_GBps * factor) > tol:
                bad.append(number)
                break
    return bad


def _held_to_busbw(n: int, reading: _Reading, name: str | None) -> int:
    """The text's n, or the '# nranks:' comment's where only that one fits the busbw column
    (:func:`commlab.nccl.parse.arbitrate`)."""
    rows, c = [p.row for p in reading.parsed], reading.comments
    _, source = n_ranks_from_text(c.ranks, c.metadata, c.preamble)
    meta = c.metadata.get("nranks", "").split()
    meta_n = int(meta[0]) if meta and meta[0].isdigit() and int(meta[0]) >= 1 else None
    check = lambda k: _check_busbw(reading.parsed, reading.row_lines, name, k,  # noqa: E731
                                   bandwidth_rule(rows, name, k), reading.layout)
    return arbitrate(n, source, meta_n, check, name, bw_pairs(reading.parsed, reading.layout), reading.notes)


def _footer_values(comments: Comments, rows: list[Row], trusted: bool,
                   notes: list[str]) -> tuple[float | None, int | None]:
    """(avg busbw, out-of-bounds count): the footer's where printed (and ``trusted``: one table was read),
    else computed from the rows. A footer that is not a finite number is noted and not used."""
    avg = comments.avg_busbw_GBps if trusted else None
    if avg is not None and not math.isfinite(avg):
        notes.append(f"the footer's 'Avg bus bandwidth' is {avg}: not used; the mean of the rows is given instead")
        avg = None
    if avg is None and rows:
        avg = avg_busbw_GBps(rows)
    oob = comments.out_of_bounds if trusted else None
    if oob is None and any(m is not None and m.wrong is not None for r in rows for m in (r.oop, r.ip)):
        oob = out_of_bounds(rows)
    return avg, oob


def _check_rows(reading: _Reading, name: str | None, n: int | None) -> tuple[str, list[int]]:
    """(bandwidth rule, busbw mismatch lines), with notes added for the reader."""
    rows = [p.row for p in reading.parsed]
    rule = bandwidth_rule(rows, name, n)
    if rule == "legacy":
        reading.notes.append("legacy bandwidth rule: algbw = S(n-1)/n/t and busbw = algbw "
                             "(nccl-tests before 2020-06)")
    mismatches = _check_busbw(reading.parsed, reading.row_lines, name, n, rule, reading.layout)
    if mismatches:
        reading.notes.append(f"{len(mismatches)} row(s) with busbw != algbw * F(n), first at line "
                             f"{mismatches[0]}: check n_ranks and the collective")
    if not rows:
        reading.notes.append("no table rows found")
    return rule, mismatches


def parse_log(text: str, n_ranks: int | None = None, collective: str | None = None) -> NcclTestsLog:
    """Read nccl-tests output ``text``; ``n_ranks`` and ``collective`` override what the text says."""
    if not isinstance(text, str):
        raise CommlabError(f"parse_log needs the log as text (str), got {type(text).__name__}")
    lines = classify(text)
    reading = _read_lines(lines)
    others_left_out = _one_table(reading)
    comments, rows = reading.comments, [p.row for p in reading.parsed]
    check_units(rows, reading.row_lines)
    name, candidates = _choose_collective(collective, comments, lines, rows, reading.notes)
    n = _choose_n(n_ranks, comments, rows, name, reading.notes)
    if n_ranks is None and n is not None:
        n = _held_to_busbw(n, reading, name)
    rule, mismatches = _check_rows(reading, name, n)
    avg, oob = _footer_values(comments, rows, not others_left_out, reading.notes)
    return NcclTestsLog(
        collective=name, n_ranks=n, format=reading.format, rows=rows, unreadable=reading.unreadable,
        preamble=comments.preamble, avg_busbw_GBps=avg, out_of_bounds=oob, notes=reading.notes,
        row_lines=reading.row_lines, bandwidth_rule=rule, busbw_mismatches=mismatches,
        legacy_errors=[p.errors for p in reading.parsed], metadata=comments.metadata, devices=comments.devices,
        footer_avg_busbw_GBps=comments.avg_busbw_GBps if avg == comments.avg_busbw_GBps else None,
        collective_candidates=candidates)
