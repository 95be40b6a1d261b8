"""Naming the likely mistake when an answer is off by a known factor.

The ratio answer / expected is compared with each candidate factor f (and 1/f) using the exercise's own
tolerance (at least 0.5%); a declared mistake matches in its own direction only (its factor is what the
slip does to the answer), a generic one either way. Candidates come in order of preference: the exercise's
declared likely mistakes first, then the generic slips of the book: 8 (bits vs bytes, chapter 2),
2 (bidirectional vs unidirectional, chapter 1), the ring factors 2(N-1)/N and (N-1)/N and a factor of N
when the question has N ranks (chapters 4-05), 1000 vs 1024 and their squares and cubes (KB/KiB, MB/MiB,
GB/GiB), a unit prefix (1000, 1e6) and fraction vs percent (100). A factor within the tolerance of 1 cannot
be told from a right answer (N = 2 makes 2(N-1)/N = 1) and is skipped. When several candidates give the same
factor (N = 8 and bits vs bytes), the first in that order is named and the others are listed.

>>> m = find_mistake(8.0, (), generic_mistakes("GB/s", None), 0.02)
>>> m.mistake.name, m.direction
('bits vs bytes', 1)
>>> m = find_mistake(1 / 8, (), generic_mistakes("GB", 8), 0.02)
>>> m.mistake.name, [other.name for other in m.also]
('bits vs bytes', ['factor of N'])
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab import units
from commlab.exercises.model import Mistake

_MIN_TOLERANCE = 0.005


@dataclass(frozen=True)
class Match:
    """The mistake that explains an answer, and any others that give the same factor."""

    mistake: Mistake
    direction: int
    """+1: the answer is the right one times the factor; -1: divided by it."""
    declared: bool
    """True when the exercise itself lists this mistake as likely."""
    also: tuple[Mistake, ...] = ()
    """Other slips with the same factor for these numbers (named in the feedback, not preferred)."""


def _ring_mistakes(n_ranks: int) -> tuple[Mistake, ...]:
    n = n_ranks
    return (
        Mistake(2 * (n - 1) / n, "ring factor 2(N-1)/N",
                f"a ring all-reduce sends 2(N-1)/N = {2 * (n - 1) / n:.3g} of the buffer per rank: the factor "
                "was left out, or applied where it does not belong"),
        Mistake((n - 1) / n, "ring factor (N-1)/N",
                f"a ring reduce-scatter or all-gather sends (N-1)/N = {(n - 1) / n:.3g} of the buffer per rank "
                "(an all-reduce does both, 2(N-1)/N): the factor was left out or used once too often"),
        Mistake(float(n), "factor of N",
                f"off by N = {n}: per rank vs all ranks together, or one chunk (S/N) vs the whole buffer S"),
    )


def generic_mistakes(unit: str, n_ranks: int | None) -> tuple[Mistake, ...]:
    """The book's generic slips for an answer in ``unit`` to a question with ``n_ranks`` ranks (or none)."""
    rate_or_time = unit.endswith("/s") or unit in ("s", "ms", "us", "ns", "%", "")
    head: tuple[Mistake, ...] = (
        Mistake(units.BITS_PER_BYTE, "bits vs bytes", "a byte is 8 bits: 400 Gb/s is 50 GB/s (chapter 2)"),)
    if rate_or_time:  # both directions added only makes sense for a bandwidth, or a time or ratio derived from one
        head += (Mistake(2.0, "bidirectional vs unidirectional",
                         "vendors print both directions added; one transfer runs at the one-direction figure "
                         "(chapter 1)"),)
    ring = _ring_mistakes(n_ranks) if n_ranks else ()
    tail = (
        Mistake(units.KiB / units.KB, "1000 vs 1024 (KB vs KiB)", "KB is 1000 bytes, KiB is 1024 bytes"),
        Mistake(units.MiB / units.MB, "1000^2 vs 1024^2 (MB vs MiB)", "MB is 1000^2 bytes, MiB is 1024^2 bytes"),
        Mistake(units.GiB / units.GB, "1000^3 vs 1024^3 (GB vs GiB)", "GB is 1000^3 bytes, GiB is 1024^3 bytes"),
        Mistake(1e3, "unit prefix (factor 1000)", "check the unit asked for: ms vs s, us vs ms, MB vs GB"),
        Mistake(1e6, "unit prefix (factor 10^6)", "check the unit asked for: us vs s, MB vs TB, bytes vs MB"),
    )
    percent = (Mistake(100.0, "fraction vs percent", "the answer is asked in percent: 0.125 is 12.5%"),)
    return head + ring + tail + (percent if unit == "%" else ())


def _direction(ratio: float, factor: float, tol: float, both_ways: bool) -> int:
    if abs(ratio / factor - 1) <= tol:
        return 1
    if both_ways and abs(ratio * factor - 1) <= tol:
        return -1
    return 0


def find_mistake(ratio: float, declared: tuple[Mistake, ...], generic: tuple[Mistake, ...],
                 tolerance: float) -> Match | None:
    """The preferred mistake whose factor explains ``ratio`` = answer / expected, or None."""
    tol = max(tolerance, _MIN_TOLERANCE)
    hits = []
    for is_declared, candidates in ((True, declared), (False, generic)):
        for mistake in candidates:
            if abs(mistake.factor - 1) <= tol or abs(1 / mistake.factor - 1) <= tol:
                continue  # indistinguishable from a right answer for these numbers
            direction = _direction(ratio, mistake.factor, tol, both_ways=not is_declared)
            if direction:
                hits.append((mistake, direction, is_declared))
    if not hits:
        return None
    first, direction, is_declared = hits[0]
    names = {first.name}
    also = []
    for mistake, _, _ in hits[1:]:
        if mistake.name not in names:
            names.add(mistake.name)
            also.append(mistake)
    return Match(first, direction, is_declared, tuple(also))
