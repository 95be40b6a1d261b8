"""Read one nccl-tests table row into a :class:`~commlab.nccl.records.Row`, modern or legacy layout.

Modern rows (nccl-tests 2.13 and later) are ``size count type redop root`` then ``time algbw busbw #wrong``
for out-of-place and in-place. Legacy rows (NCCL_TESTS.md "Output format") drop ``redop`` where the
collective does not reduce and ``root`` where it has none, and print an ``error`` column (the largest
absolute difference, e.g. ``2e-07``) instead of ``#wrong``. A :class:`Layout` says which columns a table has;
it comes from the header line when there is one, else from the row's own number of fields.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from commlab.nccl.records import Measure, Row

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

    @property
    def n_head(self) -> int:
        """Columns before the first measure block."""
        return 3 + int(self.has_redop) + int(self.has_root)


MODERN = Layout()


def layout_from_header(text: str) -> Layout | None:
    """The layout named by a ``#  size  count  type ...`` header line, or None if ``text`` is not one.

    >>> layout_from_header("#  size  count  type  redop  root  time  algbw  busbw #wrong")
    Layout(has_redop=True, has_root=True, legacy_error=False)
    >>> layout_from_header("#  size  count  type  time  algbw  busbw  error")
    Layout(has_redop=False, has_root=False, legacy_error=True)
    """
    words = text.lstrip("#").split()
    if len(words) < 3 or words[:2] != ["size", "count"]:
        return None
    return Layout(has_redop="redop" in words, has_root="root" in words, legacy_error="error" in words)


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
    if value < 0 or value != int(value):
        raise ValueError(f"#wrong must be a whole count, got {token!r}")
    return int(value), None


def _measure(tokens: list[str], legacy: bool) -> tuple[Measure, float | None]:
    time_us, algbw, busbw = (float(t) for t in tokens[:3])
    wrong, error = _wrong(tokens[3], legacy)
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
    expected = layout.n_head + 4 * n_measures
    if len(tokens) != expected:
        raise ValueError(f"expected {expected} columns, found {len(tokens)}")
    size, count = int(tokens[0]), int(tokens[1])
    redop = tokens[3] if layout.has_redop else "none"
    if _is_number(redop):
        raise ValueError(f"redop column holds a number ({redop!r})")
    root = int(tokens[layout.n_head - 1]) if layout.has_root else -1
    measures, errors = [], []
    for k in range(n_measures):
        start = layout.n_head + 4 * k
        m, e = _measure(tokens[start:start + 4], layout.legacy_error)
        measures.append(m)
        errors.append(e)
    row = Row(size_bytes=size, count=count, type=tokens[2], redop=redop, root=root, oop=measures[0],
              ip=measures[1] if n_measures == 2 else None)
    return ParsedRow(row=row, tokens=tuple(tokens), errors=tuple(errors))
