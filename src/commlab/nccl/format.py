"""Write a table exactly as nccl-tests prints it, so that commlab's own benchmark reads like the real tool.

The layout is the one of nccl-tests 2.13 to 2.16 (the "modern" fixtures under
``commlab/data/nccl/nccl-tests``; nccl-tests' ``src/common.cu``):

* a row is ``"%12li  %12li  %8s  %6s  %6i"`` (size, count, type, redop, root) followed, for out-of-place and
  then in-place, by ``"  %7s  %6s  %6s  %5g"`` (time, algbw, busbw, #wrong; ``N/A`` where checking was off);
* time in microseconds: 2 decimals under 100 us, 1 under 10 000 us, none above (nccl-tests' ``timeStr``);
* bandwidths in GB/s with 2 decimals, falling back to 1, 0 decimals or an exponent when the number does not fit
  its 6 characters (nccl-tests' ``getFloatStr``);
* footer ``# Out of bounds values : N OK|FAILED`` and ``# Avg bus bandwidth    : %g``, the plain mean of busbw
  over every out-of-place and in-place measurement.

The writer adds nccl-tests' own ``# Collective test starting: <op>_perf`` line (printed by nccl-tests 2.17 and
later) so that :func:`commlab.nccl.parse.parse_log` can tell the collective from the text alone.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from commlab.errors import CommlabError, check_n_ranks
from commlab.nccl.records import Measure, Row

#: The three header lines of the modern table (nccl-tests 2.13 to 2.16 ``printf`` formats), trailing blanks
#: removed as in the fixtures.
HEADER_LINES = tuple(line.rstrip() for line in (
    "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place" % (("",) * 5),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s"
    % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
       "time", "algbw", "busbw", "#wrong"),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s"
    % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""),
))

#: The nccl-tests binary of each collective (commlab's canonical name -> ``<binary>_perf``).
PERF_BINARY = {
    "all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "all_to_all": "alltoall", "gather": "gather",
    "scatter": "scatter", "sendrecv": "sendrecv",
}

#: nccl-tests' defaults for the preamble fields a caller leaves out (its ``-w``, ``-n``, ``-a``, ``-c``, ``-G``).
PREAMBLE_DEFAULTS = {"n_threads": 1, "n_gpus": 1, "warmup_iters": 5, "iters": 20, "agg_iters": 1,
                     "validation": 1, "graph": 0}


def fit_number(value: float, width: int, decimals: int = 2) -> str:
    """``value`` right-aligned in ``width`` characters: ``decimals`` decimals, fewer (down to 0) when that
    does not fit, an exponent as the last resort (nccl-tests' ``getFloatStr`` in ``src/util.cu``).

    >>> fit_number(449.73, 6), fit_number(1234.567, 6), fit_number(123456.7, 6), fit_number(12345678.0, 6)
    ('449.73', '1234.6', '123457', ' 1e+07')
    """
    for d in range(decimals, -1, -1):
        text = f"{value:{width}.{d}f}"
        if len(text) <= width:
            return text
    return f"{value:{width}.1e}" if width >= 7 else f"{value:{width}.0e}"


def format_time_us(t_us: float) -> str:
    """The 7-character time column: 2 decimals below 100 us, 1 below 10 000 us, none above, as nccl-tests
    2.13-2.16 print it (``timeStr`` in ``src/common.cu``; e.g. ``12.90``, ``7163.5``, ``13989``)."""
    decimals = 2 if t_us < 100.0 else 1 if t_us < 10000.0 else 0
    return fit_number(t_us, 7, decimals)


def format_measure(m: Measure) -> str:
    """One out-of-place or in-place block: ``"  %7s  %6s  %6s  %5g"`` (``  N/A`` where checking was off)."""
    wrong = "%5s" % "N/A" if m.wrong is None else "%5g" % m.wrong
    return "  %s  %s  %s  %s" % (format_time_us(m.time_us), fit_number(m.algbw_GBps, 6),
                                 fit_number(m.busbw_GBps, 6), wrong)


def format_row(row: Row) -> str:
    """One table row as nccl-tests prints it (no newline); also used to print a benchmark's progress."""
    head = "%12d  %12d  %8s  %6s  %6d" % (row.size_bytes, row.count, row.type, row.redop, row.root)
    tail = format_measure(row.ip) if row.ip is not None else ""
    return head + format_measure(row.oop) + tail


def avg_busbw_GBps(rows: Sequence[Row]) -> float:
    """nccl-tests' ``Avg bus bandwidth``: the plain mean of busbw over every out-of-place and in-place
    measurement (``bw[0] / bw_count`` in ``src/common.cu``); 0.0 for no rows."""
    values = [m.busbw_GBps for r in rows for m in (r.oop, r.ip) if m is not None]
    return sum(values) / len(values) if values else 0.0


def out_of_bounds(rows: Sequence[Row]) -> int:
    """How many measurements reported wrong elements (the count behind ``Out of bounds values``)."""
    return sum(1 for r in rows for m in (r.oop, r.ip) if m is not None and m.wrong)


def _step_text(rows: Sequence[Row]) -> str:
    """The ``step:`` field: ``F(factor)`` when sizes grow by a constant factor, else ``B(bytes)``."""
    sizes = sorted({r.size_bytes for r in rows if r.size_bytes > 0})
    if len(sizes) >= 2 and all(b % a == 0 and b // a == sizes[1] // sizes[0] for a, b in zip(sizes, sizes[1:])):
        return f"{sizes[1] // sizes[0]}(factor)"
    if len(sizes) >= 2:
        return f"{sizes[1] - sizes[0]}(bytes)"
    return "1(factor)"


def format_preamble(preamble: Mapping, rows: Sequence[Row]) -> str:
    """The ``# nThread ...`` line; fields the caller leaves out take nccl-tests' defaults (min/max bytes and
    the step from the rows)."""
    p = {**PREAMBLE_DEFAULTS, **dict(preamble)}
    sizes = [r.size_bytes for r in rows] or [0]
    return ("# nThread %d nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d "
            "agg iters: %d validation: %d graph: %d") % (
        p["n_threads"], p["n_gpus"], p.get("min_bytes", min(sizes)), p.get("max_bytes", max(sizes)),
        p.get("step", _step_text(rows)), p["warmup_iters"], p["iters"], p["agg_iters"], p["validation"],
        p["graph"])


def format_device(rank: int, device: str | Mapping | None) -> str:
    """One ``#  Rank`` line. ``device`` is a description (the GPU or CPU name), a mapping with ``pid``,
    ``host``, ``device``, ``bus_id``, ``name``, or None; what is not known is printed as ``-``."""
    d = dict(device) if isinstance(device, Mapping) else {"name": "(not recorded)" if device is None else str(device)}
    return "#  Rank %2d Group  0 Pid %6s on %10s device %2s [%s] %s" % (
        rank, d.get("pid", "-"), d.get("host", "-"), d.get("device", "-"), d.get("bus_id", "-"),
        d.get("name", "-"))


def _check_args(op: str, n_ranks: int, rows, devices) -> str:
    from commlab.collectives import canonical

    name = canonical(op)
    check_n_ranks(n_ranks)
    if devices is not None and len(devices) != n_ranks:
        raise CommlabError(f"devices must list one entry per rank: got {len(devices)} for n_ranks={n_ranks}")
    bad = [r for r in rows if not isinstance(r, Row)]
    if bad:
        raise CommlabError(f"rows must be commlab.nccl.records.Row objects, got {type(bad[0]).__name__}")
    return name


def format_avg_line(rows: Sequence[Row], min_busbw_GBps: float | None = None) -> str:
    """``# Avg bus bandwidth    : %g``, with nccl-tests' ``OK`` / ``FAILED`` when a minimum is given
    (``NCCL_TESTS_MIN_BW``: FAILED under 90 % of it; ``writeResultFooter`` in ``src/util.cu``).

    >>> row = Row(8, 2, "float", "sum", -1, Measure(10.0, 1.0, 2.0, 0))
    >>> format_avg_line([row]), format_avg_line([row], 2.5), format_avg_line([row], 2.2)
    ('# Avg bus bandwidth    : 2', '# Avg bus bandwidth    : 2 FAILED', '# Avg bus bandwidth    : 2 OK')
    """
    line = "# %-20s : %g" % ("Avg bus bandwidth", avg_busbw_GBps(rows))
    if min_busbw_GBps is None:
        return line
    return line + (" FAILED" if avg_busbw_GBps(rows) < min_busbw_GBps * 0.9 else " OK")


def format_table(op: str, n_ranks: int, rows: list[Row], *, preamble: dict | None = None,
                 devices: list[str] | None = None, first_line: str | None = None, note: str | None = None,
                 min_busbw_GBps: float | None = None) -> str:
    """The whole nccl-tests output for ``rows`` of collective ``op`` over ``n_ranks`` ranks.

    ``preamble`` holds the ``# nThread`` fields (keys ``n_threads``, ``n_gpus``, ``min_bytes``, ``max_bytes``,
    ``step``, ``warmup_iters``, ``iters``, ``agg_iters``, ``validation``, ``graph``); without it the line is
    left out rather than invented. ``devices`` describes each rank (see :func:`format_device`); the
    ``# Using devices`` block always has one line per rank, which is how a reader learns ``n_ranks``.
    ``first_line`` goes first (nccl-tests' ``# nccl-tests version ...`` line), ``note`` (a ``#`` line) after
    the rows, ``min_busbw_GBps`` adds OK / FAILED to the average (:func:`format_avg_line`).
    """
    name = _check_args(op, n_ranks, rows, devices)
    binary = PERF_BINARY.get(name, name) + "_perf"
    lines = [first_line] if first_line else []
    lines.append(f"# Collective test starting: {binary}")
    if preamble is not None:
        lines.append(format_preamble(preamble, rows))
    lines += ["#", "# Using devices"]
    lines += [format_device(r, None if devices is None else devices[r]) for r in range(n_ranks)]
    lines += ["#", *HEADER_LINES]
    lines += [format_row(r) for r in rows]
    if note:
        lines.append(note)
    wrong = out_of_bounds(rows)
    lines.append("# %-20s : %d %s" % ("Out of bounds values", wrong, "FAILED" if wrong else "OK"))
    lines.append(format_avg_line(rows, min_busbw_GBps))
    lines += ["#", f"# Collective test concluded: {binary}"]
    return "\n".join(lines) + "\n"
