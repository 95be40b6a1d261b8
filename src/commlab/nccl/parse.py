"""Read an nccl-tests log (modern or legacy, wrapped by a launcher or not) into rows and what they mean.

``parse_log`` keeps every row it can read, reports every row-like line it cannot (with its line number), and
checks each row against nccl-tests' rule ``busbw = algbw * F(n)`` (NCCL_TESTS.md "Bandwidths", F from
:func:`commlab.collectives.busbw_factor`). Legacy all_gather / reduce_scatter runs (before 2020-06-19) print
``algbw = S(n-1)/n/t`` and ``busbw = algbw``; the reader recognises that rule from the numbers.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from commlab.collectives import busbw_factor, canonical
from commlab.errors import CommlabError, check_n_ranks
from commlab.nccl import detect
from commlab.nccl.comments import Comments, read_comment
from commlab.nccl.format import avg_busbw_GBps, out_of_bounds
from commlab.nccl.lines import Line, classify
from commlab.nccl.records import Row
from commlab.nccl.table import Layout, ParsedRow, layout_from_header, layout_from_tokens, parse_row

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
        return header, in_place
    guesses = Counter(layout_from_tokens(line.text.split()) for line in lines
                      if line.kind == "row" and len(line.text.split()) in (7, 8, 9, 11, 12, 13))
    return (guesses.most_common(1)[0][0] if guesses else Layout()), in_place


@dataclass
class _Reading:
    """What one pass over the lines found."""

    comments: Comments
    layout: Layout
    parsed: list[ParsedRow]
    row_lines: list[int]
    unreadable: list[tuple[int, str]]
    notes: list[str]

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


def _read_lines(lines: list[Line]) -> _Reading:
    comments, header = Comments(), None
    for line in lines:
        if line.kind == "comment":
            header = header or layout_from_header(line.text)
            read_comment(line.text, comments)
    layout, in_place = _table_layout(lines, header)
    reading = _Reading(comments, layout, [], [], [], [])
    for line in lines:
        if line.kind != "row":
            continue
        try:
            reading.parsed.append(parse_row(line.text, layout, in_place))
            reading.row_lines.append(line.number)
        except ValueError as exc:
            reading.unreadable.append((line.number, line.raw))
            reading.notes.append(f"line {line.number}: row not read ({exc})")
    reading.notes += _line_notes(lines)
    return reading


def _choose_collective(caller: str | None, comments: Comments, lines: list[Line], rows: list[Row],
                       notes: list[str]) -> tuple[str | None, tuple[str, ...]]:
    from_text = detect.collective_from_text(comments.texts, comments.metadata, [ln.text for ln in lines])
    candidates = detect.collectives_from_columns(rows)
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
    from_text, source = detect.n_ranks_from_text(comments.ranks, comments.metadata, comments.preamble)
    if caller is not None:
        n = check_n_ranks(caller)
        if from_text is not None and from_text != n:
            notes.append(f"{source} give n = {from_text}, the caller said {n}; using {n}")
        return n
    if from_text is not None:
        notes.append(f"n = {from_text} from {source}")
        return from_text
    hint = detect.ranks_hint(rows, collective)
    tail = f"; the size and count columns suggest n = {hint}" if hint else ""
    notes.append(f"the number of ranks is not in the log (no '# Rank' lines){tail}")
    return None


def _check_busbw(parsed: list[ParsedRow], row_lines: list[int], collective: str | None, n: int | None,
                 rule: str, layout_head: int) -> list[int]:
    """Line numbers of rows where busbw differs from algbw * F(n) by more than the printing precision."""
    if collective is None or n is None:
        return []
    factor = 1.0 if rule == "legacy" else busbw_factor(collective, n)
    bad = []
    for p, number in zip(parsed, row_lines):
        for k, m in enumerate((p.row.oop, p.row.ip)):
            if m is None:
                continue
            alg_tok, bus_tok = p.tokens[layout_head + 4 * k + 1], p.tokens[layout_head + 4 * k + 2]
            tol = detect.half_unit(alg_tok) * factor + detect.half_unit(bus_tok) + 1e-9
            if abs(m.busbw_GBps - m.algbw_GBps * factor) > tol:
                bad.append(number)
                break
    return bad


def _footer_values(comments: Comments, rows: list[Row]) -> tuple[float | None, int | None]:
    """(avg busbw, out-of-bounds count): the footer's where printed, else computed from the rows."""
    avg = comments.avg_busbw_GBps
    if avg is None and rows:
        avg = avg_busbw_GBps(rows)
    oob = comments.out_of_bounds
    if oob is None and any(m is not None and m.wrong is not None for r in rows for m in (r.oop, r.ip)):
        oob = out_of_bounds(rows)
    return avg, oob


def _check_rows(reading: _Reading, name: str | None, n: int | None) -> tuple[str, list[int]]:
    """(bandwidth rule, busbw mismatch lines), with notes added for the reader."""
    rows = [p.row for p in reading.parsed]
    rule = detect.bandwidth_rule(rows, name, n)
    if rule == "legacy":
        reading.notes.append("legacy bandwidth rule: algbw = S(n-1)/n/t and busbw = algbw "
                             "(nccl-tests before 2020-06)")
    mismatches = _check_busbw(reading.parsed, reading.row_lines, name, n, rule, reading.layout.n_head)
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
    comments, rows = reading.comments, [p.row for p in reading.parsed]
    name, candidates = _choose_collective(collective, comments, lines, rows, reading.notes)
    n = _choose_n(n_ranks, comments, rows, name, reading.notes)
    rule, mismatches = _check_rows(reading, name, n)
    avg, oob = _footer_values(comments, rows)
    return NcclTestsLog(
        collective=name, n_ranks=n, format=reading.format, rows=rows, unreadable=reading.unreadable,
        preamble=comments.preamble, avg_busbw_GBps=avg, out_of_bounds=oob, notes=reading.notes,
        row_lines=reading.row_lines, bandwidth_rule=rule, busbw_mismatches=mismatches,
        legacy_errors=[p.errors for p in reading.parsed], metadata=comments.metadata, devices=comments.devices,
        footer_avg_busbw_GBps=comments.avg_busbw_GBps, collective_candidates=candidates)
