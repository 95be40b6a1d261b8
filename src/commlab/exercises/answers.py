"""Reading a learner's answer: a number in the stated unit, or a string with its own unit.

``54``, ``"54"``, ``"54 ms"``, ``"0.054 s"``, ``"54.4ms"`` and ``"54000 us"`` all read as the same time when
the exercise asks for milliseconds. Strings go through :func:`commlab.units.parse_quantity`; a bare number
(or a numeric string) is taken in the exercise's unit. "12.5%" is a percentage; "7x" a plain ratio.
Anything else (empty text, words, NaN, infinity, None, a bool, a list, "5 GB" where a time is asked) raises a
:class:`~commlab.errors.CommlabError` whose message says what is accepted.

>>> read_answer("54 ms", "ms"), read_answer("0.054 s", "ms"), read_answer(54, "ms")
(54.0, 54.0, 54.0)
>>> read_answer("3.6 Tb/s", "GB/s"), read_answer("12.5%", "%"), read_answer("7x", "")
(450.0, 12.5, 7.0)
>>> read_answer("5 GB", "s")
Traceback (most recent call last):
...
commlab.errors.CommlabError: '5 GB' is a size, but this answer is a time in s (for example "0.054 s" or "54 ms")
"""
from __future__ import annotations

import math
import numbers
import re

from commlab import units
from commlab.errors import CommlabError

#: unit -> (dimension as in commlab.units.Quantity, value of one unit in SI base units)
UNITS = {
    "s": ("s", 1.0), "ms": ("s", 1e-3), "us": ("s", 1e-6),
    "GB/s": ("bytes/s", units.GB), "Gb/s": ("bytes/s", units.GB / units.BITS_PER_BYTE),
    "bytes": ("bytes", 1.0), "KB": ("bytes", units.KB), "MB": ("bytes", units.MB), "GB": ("bytes", units.GB),
    "": ("1", 1.0), "%": ("1", 0.01),
}
_DIMENSION_WORDS = {"s": "a time", "bytes/s": "a bandwidth", "bytes": "a size", "1": "a plain number"}
_EXAMPLES = {"s": '"0.054 s" or "54 ms"', "bytes/s": '"450 GB/s" or "3.6 Tb/s"',
             "bytes": '"24.5 GB" or "1.5 GiB"', "1": '"7", "0.25" or "12.5%"'}
_RATIO_RE = re.compile(r"^\s*(.+?)\s*[x×]\s*$")
#: "8 bytes" / "8 byte": spelled out, so that the lower-case b is not read as bits
_BYTES_WORD_RE = re.compile(r"(?<=[\dkKMGTPi\s])bytes?(?=\s*(?:/\s*s)?\s*$)", re.IGNORECASE)


def describe_unit(unit: str) -> str:
    """Words for a unit: "a time in ms", "a plain number"."""
    dimension, _ = UNITS[unit]
    word = _DIMENSION_WORDS[dimension]
    return f"{word} in {unit}" if unit else word


def _reject(answer: object) -> CommlabError:
    shown = answer if isinstance(answer, str) else f"{type(answer).__name__} {answer!r}"
    return CommlabError(f"cannot read {shown!r} as an answer; give a number in the stated unit or text with a "
                        'unit, such as 54, "54 ms", "450 GB/s", "24.5 GB", "12.5%"')


def _number(answer: numbers.Real, unit: str) -> float:
    """A Python or numpy real number, taken in the exercise's unit."""
    value = float(answer)
    if not math.isfinite(value):
        raise CommlabError(f"{answer!r} is not a finite number; give a number in {unit or 'no unit'}")
    return value


def _from_text(text: str, unit: str) -> float:
    """Parse text with or without a unit into the exercise's unit."""
    stripped = text.strip()
    if not stripped:
        raise CommlabError("the answer is empty; type a number, with a unit if you like (\"54 ms\")")
    ratio = _RATIO_RE.match(stripped)
    if ratio and UNITS[unit][0] == "1":
        stripped = ratio.group(1)
    quantity = units.parse_quantity(_BYTES_WORD_RE.sub("B", stripped))
    if quantity.dimension == "1" and not stripped.endswith("%"):
        return quantity.value  # a bare number is in the stated unit
    dimension, scale = UNITS[unit]
    if quantity.dimension != dimension:
        raise CommlabError(
            f"{text.strip()!r} is {_DIMENSION_WORDS[quantity.dimension]}, but this answer is {describe_unit(unit)} "
            f"(for example {_EXAMPLES[dimension]})")
    return quantity.value / scale


def read_answer(answer: object, unit: str) -> float:
    """The answer as a float in ``unit``, or a CommlabError saying why it cannot be read."""
    if unit not in UNITS:
        raise CommlabError(f"unknown unit {unit!r}; expected one of {sorted(UNITS)}")
    if isinstance(answer, bool) or answer is None:
        raise _reject(answer)
    if isinstance(answer, numbers.Real):
        return _number(answer, unit)
    if isinstance(answer, str):
        if len(answer) > 200:
            raise CommlabError(f"the answer is {len(answer)} characters long; give a number with a unit")
        return _from_text(answer, unit)
    raise _reject(answer)


def format_answer(value: float, unit: str, digits: int = 4) -> str:
    """A value in ``unit`` as text that :func:`read_answer` reads back: "54.44 ms", "24.5 GB", "12.5%".

    >>> format_answer(54.44, "ms"), format_answer(28, ""), format_answer(12.5, "%")
    ('54.44 ms', '28', '12.5%')
    """
    text = f"{float(value):.{digits}g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{float(mantissa):g}e{int(exponent)}"
    if unit == "%":
        return f"{text}%"
    return f"{text} {unit}" if unit else text
