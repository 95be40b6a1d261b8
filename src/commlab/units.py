"""Sizes, bandwidths and times: parsing and formatting. The only home of unit constants.

Conventions (chapter 02 teaches them; nccl-tests and vendors use the same):

* ``KB``, ``MB``, ``GB``, ``TB`` are decimal: 1e3, 1e6, 1e9, 1e12 bytes.
* ``KiB``, ``MiB``, ``GiB``, ``TiB`` are binary: 1024, 1024**2, ...
* a bare ``K``, ``M``, ``G``, ``T`` suffix is binary, as in nccl-tests' ``-b 8 -e 128M`` flags.
* a lower-case ``b`` means bits: "400Gb" is 400e9 bits = 5e10 bytes; "400Gb/s" is 5e10 bytes per second.
* bandwidths in GB/s are 1e9 bytes per second (nccl-tests' algbw and busbw use the same unit).

>>> parse_nbytes("64M"), parse_nbytes("1.5GiB"), parse_nbytes("14GB"), parse_nbytes("400Gb"), parse_nbytes("8")
(67108864, 1610612736, 14000000000, 50000000000, 8)
>>> parse_bandwidth_Bps("400Gb/s") == parse_bandwidth_Bps("50 GB/s") == 5e10
True
>>> parse_time_s("54 ms"), parse_time_s("3us")
(0.054, 3e-06)
>>> format_time(0.0544), format_bandwidth(450e9), format_nbytes(24.5e9)
('54.4 ms', '450 GB/s', '24.5 GB')
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from commlab.errors import CommlabError

KB, MB, GB, TB = 1e3, 1e6, 1e9, 1e12
KiB, MiB, GiB, TiB = 1024, 1024**2, 1024**3, 1024**4
BITS_PER_BYTE = 8

_DECIMAL = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"": 1, "K": KiB, "k": KiB, "M": MiB, "G": GiB, "T": TiB}
#: seconds per unit as (multiply, divide): dividing by 1e3 keeps "54 ms" exactly 0.054
_TIME = {"s": (1.0, 1.0), "sec": (1.0, 1.0), "ms": (1.0, 1e3), "us": (1.0, 1e6), "µs": (1.0, 1e6),
         "μs": (1.0, 1e6), "ns": (1.0, 1e9), "min": (60.0, 1.0), "h": (3600.0, 1.0)}
_NUMBER = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
_UNIT = r"(bytes?|Bytes?|B|bits?|b)"
_SIZE_RE = re.compile(rf"^\s*{_NUMBER}\s*([kKMGTP]?)(i?){_UNIT}?\s*$")
_RATE_RE = re.compile(rf"^\s*{_NUMBER}\s*([kKMGTP]?)(i?){_UNIT}\s*(?:/\s*s|ps)\s*$")
_TIME_RE = re.compile(rf"^\s*{_NUMBER}\s*(s|sec|ms|us|µs|μs|ns|min|h)?\s*$")

SIZE_FORMS = '"8", "64M" (binary), "1.5GiB", "14GB" (decimal), "400Gb" (bits)'
RATE_FORMS = '"50 GB/s", "400Gb/s", "450GBps", "25 GiB/s"'
TIME_FORMS = '"54 ms", "0.054 s", "3 us", "3µs", "120ns" (a bare number is seconds)'


@dataclass(frozen=True)
class Quantity:
    """A parsed value in SI base units: bytes, bytes/s, seconds, or a plain number ("1")."""

    value: float
    dimension: str


def _finite(value: float, text: object) -> float:
    if not math.isfinite(value):
        raise CommlabError(f"{text!r} is not a finite number")
    return value


def _scale(prefix: str, binary_marker: str, unit: str, bare_is_binary: bool) -> float:
    """Multiplier of a size prefix: binary with "i", binary for a bare K/M/G when asked, else decimal."""
    unit = unit or ""
    binary = binary_marker == "i" or (bare_is_binary and unit == "")
    factor = _BINARY[prefix] if binary else _DECIMAL[prefix]
    return factor / BITS_PER_BYTE if unit in ("b", "bit", "bits") else factor


def _number_input(value: object, what: str, forms: str) -> float | None:
    """A plain int/float passes through (units implied); other non-strings are refused; None: ``value`` is a
    str, to be parsed."""
    if isinstance(value, bool) or value is None:
        raise CommlabError(f"expected {what} such as {forms}, got {value!r}")
    if isinstance(value, (int, float)):
        return _finite(float(value), value)
    if not isinstance(value, str):
        raise CommlabError(f"expected {what} such as {forms}, got {type(value).__name__} {value!r}")
    return None


def parse_nbytes(text: str | int | float) -> int:
    """Parse a size into bytes (see the module docstring for the conventions).

    Refuses negative sizes and sizes that are not a whole number of bytes.

    >>> parse_nbytes("1K"), parse_nbytes("1KB"), parse_nbytes("1KiB"), parse_nbytes("8b")
    (1024, 1000, 1024, 1)
    """
    number = _number_input(text, "a size", SIZE_FORMS)
    if number is None:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise CommlabError(f"cannot read size {text!r}; expected a size such as {SIZE_FORMS}")
        value, prefix, imark, unit = m.groups()
        number = _finite(float(value), text) * _scale(prefix, imark, unit, bare_is_binary=True)
    if number < 0:
        raise CommlabError(f"size must not be negative, got {text!r}")
    if abs(number - round(number)) > 1e-6 * max(1.0, abs(number)):
        raise CommlabError(f"size {text!r} is not a whole number of bytes ({number} bytes)")
    return int(round(number))


def parse_bandwidth_Bps(text: str | int | float) -> float:
    """Parse a bandwidth into bytes per second; a bare number is taken as GB/s (1e9 B/s).

    >>> parse_bandwidth_Bps("3.6 Tb/s")
    450000000000.0
    """
    number = _number_input(text, "a bandwidth", RATE_FORMS)
    if number is not None:
        value_Bps = number * GB
    else:
        m = _RATE_RE.match(str(text))
        if not m:
            raise CommlabError(f"cannot read bandwidth {text!r}; expected a bandwidth such as {RATE_FORMS}")
        value, prefix, imark, unit = m.groups()
        value_Bps = _finite(float(value), text) * _scale(prefix, imark, unit, bare_is_binary=False)
    if value_Bps < 0:
        raise CommlabError(f"bandwidth must not be negative, got {text!r}")
    return value_Bps


def parse_time_s(text: str | int | float) -> float:
    """Parse a time into seconds; a bare number is seconds.

    >>> parse_time_s("0.054 s"), parse_time_s("120ns"), parse_time_s(2)
    (0.054, 1.2e-07, 2.0)
    """
    number = _number_input(text, "a time", TIME_FORMS)
    if number is None:
        m = _TIME_RE.match(str(text))
        if not m:
            raise CommlabError(f"cannot read time {text!r}; expected a time such as {TIME_FORMS}")
        value, unit = m.groups()
        multiply, divide = _TIME[unit or "s"]
        number = _finite(float(value), text) * multiply / divide
    if number < 0:
        raise CommlabError(f"time must not be negative, got {text!r}")
    return number


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse a number with an optional unit, returning its value in SI base units and its dimension.

    Tries a bandwidth, a time, then a size; a bare number is dimensionless; "12.5%" is the number 0.125.

    >>> parse_quantity("450 GB/s"), parse_quantity("54 ms"), parse_quantity("24.5 GB")
    (Quantity(value=450000000000.0, dimension='bytes/s'), Quantity(value=0.054, dimension='s'), \
Quantity(value=24500000000.0, dimension='bytes'))
    >>> parse_quantity("12.5%"), parse_quantity(3)
    (Quantity(value=0.125, dimension='1'), Quantity(value=3.0, dimension='1'))
    """
    number = _number_input(text, "a number with a unit", '"54 ms", "450 GB/s", "24.5 GB", "12.5%", "3"')
    if number is not None:
        return Quantity(number, "1")
    stripped = str(text).strip()
    if re.fullmatch(_NUMBER, stripped):
        return Quantity(_finite(float(stripped), text), "1")
    if stripped.endswith("%") and re.fullmatch(_NUMBER, stripped[:-1].strip()):
        return Quantity(_finite(float(stripped[:-1]), text) / 100.0, "1")
    for parse, dimension in ((parse_bandwidth_Bps, "bytes/s"), (parse_time_s, "s")):
        try:
            return Quantity(parse(stripped), dimension)
        except CommlabError:
            pass
    m = _SIZE_RE.match(stripped)
    if m and re.search(r"[A-Za-z]", stripped):
        value, prefix, imark, unit = m.groups()
        nbytes = _finite(float(value), text) * _scale(prefix, imark, unit, bare_is_binary=False)
        return Quantity(nbytes, "bytes")
    raise CommlabError(
        f"cannot read {text!r}; expected a number with a unit such as \"54 ms\", \"450 GB/s\", \"24.5 GB\""
    )


def _trim(value: float, digits: int = 3) -> str:
    """A number with `digits` significant digits, without trailing zeros."""
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{float(mantissa):g}e{int(exponent)}"
    return text


def format_nbytes(nbytes: float, binary: bool = False, digits: int = 3) -> str:
    """Format a size: decimal units (B, KB, MB, GB, TB) by default, binary (KiB, MiB, ...) on request.

    >>> format_nbytes(1536, binary=True), format_nbytes(14e9), format_nbytes(8)
    ('1.5 KiB', '14 GB', '8 B')
    """
    units = (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)) if binary else (
        ("TB", TB), ("GB", GB), ("MB", MB), ("KB", KB))
    for name, scale in units:
        if abs(nbytes) >= scale:
            return f"{_trim(nbytes / scale, digits)} {name}"
    return f"{_trim(nbytes, digits)} B"


def format_bandwidth(bw_Bps: float, digits: int = 3) -> str:
    """Format bytes per second in GB/s-style decimal units.

    >>> format_bandwidth(5e10), format_bandwidth(1.2e6)
    ('50 GB/s', '1.2 MB/s')
    """
    for name, scale in (("TB/s", TB), ("GB/s", GB), ("MB/s", MB), ("KB/s", KB)):
        if abs(bw_Bps) >= scale:
            return f"{_trim(bw_Bps / scale, digits)} {name}"
    return f"{_trim(bw_Bps, digits)} B/s"


def format_time(t_s: float, digits: int = 3) -> str:
    """Format seconds with the largest unit that keeps the number at or above 1.

    >>> format_time(4.9), format_time(3.2e-6), format_time(0.000_25)
    ('4.9 s', '3.2 us', '250 us')
    """
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(t_s) >= scale:
            return f"{_trim(t_s / scale, digits)} {name}"
    return f"{_trim(t_s / 1e-9, digits)} ns"


def gbps_to_GBps(gbit_per_s: float) -> float:
    """Gigabits per second to gigabytes per second: divide by 8 (chapter 02).

    >>> gbps_to_GBps(400)
    50.0
    """
    return gbit_per_s / BITS_PER_BYTE
