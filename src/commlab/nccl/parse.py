"""A whole nccl-tests log read into an :class:`NcclTestsLog`: which collective and how many ranks, one sweep or
several, the bandwidth rule, and every line that could not be read, with why.

``parse_log`` keeps every row it can read, reports every row-like line it cannot (with its line number and
why: too few columns, ``nan``, a negative time, an NCCL message glued to it), and checks each row against
nccl-tests' rule ``busbw = algbw * F(n)`` (nccl-tests' doc/PERFORMANCE.md, F from
:func:`commlab.collectives.busbw_factor`). Legacy all_gather / reduce_scatter runs (before 2020-06-19) print
``algbw = S(n-1)/n/t`` and ``busbw = algbw``; the reader recognises that rule from the numbers.

It does not misread in silence: the header's units are read (``(ms)``, ``(MB/s)`` are converted), rows whose algbw
is not size / time are refused (:mod:`commlab.nccl.tables`), repeated tables are read once or the first of them
with a note, and interleaved rows or two collectives in one file are refused with a CommlabError naming the
lines. Which collective ran and over how many ranks is :mod:`commlab.nccl.identify`'s.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace

from commlab.collectives import busbw_factor, canonical
from commlab.errors import CommlabError, check_n_ranks
from commlab.nccl.format import avg_busbw_GBps, out_of_bounds
from commlab.nccl.lines import (Comments, Layout, Line, ParsedRow, classify, layout_from_header,
                                layout_from_tokens, parse_row, read_comment, split_glued, units_from_header)
from commlab.nccl.records import Row
from commlab.nccl.identify import (arbitrate, bandwidth_rule, bw_pairs, collective_from_text,  # noqa: F401
                                   collectives_from_columns, half_unit, implied_ranks, metadata_collective,
                                   n_ranks_from_text, ranks_hint, starting_collective)
from commlab.nccl.tables import Table, check_units, one_table, split_tables  # noqa: F401


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
