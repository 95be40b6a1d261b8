"""Is what was read one sweep? Tables repeated, interleaved or of two collectives, and units that do not fit.

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
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.nccl.identify import IMPLIED_FACTOR_BAND, collectives_from_columns
from commlab.nccl.records import Row


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
