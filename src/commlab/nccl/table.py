"""Read one nccl-tests table row into a :class:`~commlab.nccl.records.Row`, modern or legacy layout.

Modern rows (nccl-tests 2.13 and later) are ``size count type redop root`` then ``time algbw busbw #wrong``
for out-of-place and in-place. Legacy rows (nccl-tests before 2.13) drop ``redop`` where the
collective does not reduce and ``root`` where it has none, and print an ``error`` column (the largest
absolute difference, e.g. ``2e-07``) instead of ``#wrong``. A :class:`Layout` says which columns a table has;
it comes from the header line when there is one, else from the row's own number of fields.

The units come from the header's third line (``(B) (elements) (us) (GB/s) (GB/s)``): nccl-tests always prints
microseconds and GB/s, but an edited or converted log may say ``(ms)`` or ``(MB/s)``; such values are converted
to microseconds and GB/s, and a unit commlab does not know is refused. A row whose time or bandwidths are
not finite numbers >= 0 (``nan``, ``inf``, ``-3.2``) is not read: strict JSON has no NaN, and a negative time
is no measurement.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.nccl.records import Measure, Row

#: Time units of the header -> microseconds; bandwidth units -> GB/s (1e9 bytes per second).
TIME_UNITS_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6}
BW_UNITS_GBPS = {"B/s": 1e-9, "KB/s": 1e-6, "MB/s": 1e-3, "GB/s": 1.0, "TB/s": 1e3, "KiB/s": 1024 / 1e9,
                 "MiB/s": 1024**2 / 1e9, "GiB/s": 1024**3 / 1e9}

#: Element sizes of the data types nccl-tests names (``-d``), for the size/count consistency checks.
ITEMSIZE = {"int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8,
            "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2,
            "fp8_e4m3": 1, "fp8_e5m2": 1, "f8e4m3": 1, "f8e5m2": 1}
_EXPONENT_ONLY = re.compile(r"^\d(?:\.\d+)?e[+-]\d+$")


@dataclass(frozen=True)
class Layout:
    """Which optional columns a table has and what its check column holds."""

    has_redop: bool = True
    has_root: bool = True
    legacy_error: bool = False
    """True where the fourth measure column is legacy ``error`` (a float), False for ``#wrong`` (a count)."""
    has_check: bool = True
    """False where the header names no ``#wrong``/``error`` column (a table trimmed to time, algbw, busbw)."""
    time_scale_us: float = 1.0
    """Microseconds per unit of the time columns (1 for nccl-tests' ``(us)``)."""
    bw_scale_GBps: float = 1.0
    """GB/s per unit of the bandwidth columns (1 for nccl-tests' ``(GB/s)``)."""

    @property
    def n_head(self) -> int:
        """Columns before the first measure block."""
        return 3 + int(self.has_redop) + int(self.has_root)

    @property
    def measure_width(self) -> int:
        """Columns of one measure block: time, algbw, busbw and, when the table has it, the check column."""
        return 4 if self.has_check else 3


MODERN = Layout()


def layout_from_header(text: str) -> Layout | None:
    """The layout named by a ``#  size  count  type ...`` header line, or None if ``text`` is not one.

    >>> layout_from_header("#  size  count  type  redop  root  time  algbw  busbw #wrong") == Layout()
    True
    >>> layout_from_header("#  size  count  type  time  algbw  busbw  error").legacy_error
    True
    >>> layout_from_header("#  size  count  type  redop  root  time  algbw  busbw").measure_width
    3
    """
    words = text.lstrip("#").split()
    if len(words) < 3 or words[:2] != ["size", "count"]:
        return None
    has_check = any(w.lstrip("#") in ("wrong", "error") for w in words)
    return Layout(has_redop="redop" in words, has_root="root" in words, legacy_error="error" in words,
                  has_check=has_check)


def units_from_header(text: str) -> tuple[float, float] | None:
    """(microseconds per time unit, GB/s per bandwidth unit) of a ``# (B) (elements) (us) (GB/s) ...`` line,
    None when ``text`` is not the units line; CommlabError for a unit that is not known.

    >>> units_from_header("#  (B)  (elements)  (us)  (GB/s)  (GB/s)   (us)  (GB/s)  (GB/s)")
    (1.0, 1.0)
    >>> units_from_header("#  (B)  (elements)  (ms)  (MB/s)  (MB/s)")
    (1000.0, 0.001)
    """
    units = re.findall(r"\(([^)]*)\)", text)
    if len(units) < 3 or units[:2] != ["B", "elements"]:
        return None
    times, rates = set(units[2::3]), set(units[3::3]) | set(units[4::3])
    unknown = sorted((times - set(TIME_UNITS_US)) | (rates - set(BW_UNITS_GBPS)))
    if unknown or len(times) != 1 or len(rates) != 1:
        raise CommlabError(
            f"the table header gives units {', '.join('(' + u + ')' for u in units[2:])}: commlab reads one time "
            f"unit of {', '.join(TIME_UNITS_US)} and one bandwidth unit of {', '.join(BW_UNITS_GBPS)}"
            + (f"; {', '.join(unknown)} is not one of them" if unknown else ""))
    return TIME_UNITS_US[times.pop()], BW_UNITS_GBPS[rates.pop()]


def layout_from_tokens(tokens: list[str]) -> Layout:
    """Guess the layout of a row seen without a header: the measure blocks come in fours, so the number of
    leading columns is what is left over; ``redop`` is the non-numeric one."""
    n_head = 3 + (len(tokens) - 3) % 4
    has_redop = n_head >= 4 and not _is_number(tokens[3])
    has_root = n_head == 5 or (n_head == 4 and not has_redop)
    legacy = bool(_EXPONENT_ONLY.match(tokens[-1])) if len(tokens) > n_head else False
    return Layout(has_redop=has_redop, has_root=has_root, legacy_error=legacy)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _wrong(token: str, legacy: bool) -> tuple[int | None, float | None]:
    """(#wrong, legacy error) from the check column."""
    if token.upper() == "N/A":
        return None, None
    if legacy:
        return None, float(token)
    value = float(token)
    if not (value >= 0) or value == float("inf") or value != int(value):
        raise ValueError(f"#wrong must be a whole count, got {token!r}")
    return int(value), None


def _finite(token: str, what: str) -> float:
    value = float(token)
    if not (value >= 0.0 and value != float("inf")):
        raise ValueError(f"{what} {token!r} is not a finite number >= 0")
    return value


def _measure(tokens: list[str], layout: Layout) -> tuple[Measure, float | None]:
    time_us = _finite(tokens[0], "time") * layout.time_scale_us
    algbw, busbw = (_finite(t, name) * layout.bw_scale_GBps for t, name in zip(tokens[1:3], ("algbw", "busbw")))
    if not layout.has_check:
        return Measure(time_us=time_us, algbw_GBps=algbw, busbw_GBps=busbw, wrong=None), None
    wrong, error = _wrong(tokens[3], layout.legacy_error)
    if error is not None and error != error:
        raise ValueError(f"error {tokens[3]!r} is not a number")
    return Measure(time_us=time_us, algbw_GBps=algbw, busbw_GBps=busbw, wrong=wrong), error


@dataclass(frozen=True)
class ParsedRow:
    """A row with what the Row record does not hold: the printed tokens and the legacy error values."""

    row: Row
    tokens: tuple[str, ...]
    errors: tuple[float | None, ...]


def parse_row(text: str, layout: Layout, in_place: bool = True) -> ParsedRow:
    """Read one row; raise ValueError (with the reason) when it does not have the layout's columns.

    ``in_place`` says the table has in-place columns, so a row with only the out-of-place block is a row
    cut off, not a complete one.
    """
    tokens = text.split()
    n_measures = 2 if in_place else 1
    width = layout.measure_width
    expected = layout.n_head + width * n_measures
    if len(tokens) != expected:
        raise ValueError(f"expected {expected} columns, found {len(tokens)}")
    size, count = int(tokens[0]), int(tokens[1])
    redop = tokens[3] if layout.has_redop else "none"
    if _is_number(redop):
        raise ValueError(f"redop column holds a number ({redop!r})")
    root = int(tokens[layout.n_head - 1]) if layout.has_root else -1
    measures, errors = [], []
    for k in range(n_measures):
        start = layout.n_head + width * k
        m, e = _measure(tokens[start:start + width], layout)
        measures.append(m)
        errors.append(e)
    row = Row(size_bytes=size, count=count, type=tokens[2], redop=redop, root=root, oop=measures[0],
              ip=measures[1] if n_measures == 2 else None)
    return ParsedRow(row=row, tokens=tuple(tokens), errors=tuple(errors))
