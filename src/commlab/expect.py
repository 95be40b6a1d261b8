"""Checks for the book's teaching cells: each states the relation it holds and says what went wrong when it fails.

A chapter's ``assert`` keeps nbval honest, but a bare ``assert 3.2 < x < 3.7`` tells a learner nothing when it
fails. These helpers take the relation in words and a named tolerance, and fail with a message that prints the
values::

    >>> close(2 * 0.5, 1.0, rel=1e-12, what="t(n_1/2) = 2 alpha")
    >>> holds(3 > 2, "the tree needs fewer steps than the ring")
    >>> close(1.1, 1.0, rel=0.05, what="busbw at the link")
    Traceback (most recent call last):
    ...
    AssertionError: busbw at the link: got 1.1, expected 1 within 5% (off by 10%)
    >>> about(1.13 * 2**20, 1.1 * 2**20, "where LL retires on an H100 server")
    >>> equal(sorted({(0, 1), (2, 3)}), [(0, 1), (2, 3)], "the TP groups")
"""
from __future__ import annotations

import math

#: Relative tolerance for two routes to the same floating-point formula (rounding only).
FLOAT_REL = 1e-9


def close(actual: float, expected: float, rel: float = FLOAT_REL, what: str = "value") -> None:
    """Fail unless ``actual`` is within ``rel`` (a fraction) of ``expected``; the message names ``what``."""
    actual, expected = float(actual), float(expected)
    if math.isclose(actual, expected, rel_tol=rel, abs_tol=0.0 if expected else rel):
        return
    off = abs(actual / expected - 1) if expected else abs(actual)
    raise AssertionError(f"{what}: got {actual:.6g}, expected {expected:.6g} within {rel:.2g}"
                         if rel < 1e-3 else
                         f"{what}: got {actual:.6g}, expected {expected:.6g} within {rel:.0%} (off by {off:.0%})")


def holds(condition: bool, what: str) -> None:
    """Fail with ``what`` (the relation, in words, with its values) unless ``condition`` is true."""
    if not condition:
        raise AssertionError(f"does not hold: {what}")


#: How far a number may be from the rounded figure the prose gives for it ("about 1.1 MiB"): the prose keeps two
#: significant figures, so a tenth either way.
PROSE_REL = 0.1


def about(actual: float, stated: float, what: str, rel: float = PROSE_REL) -> None:
    """Fail unless ``actual`` is the figure the text states, ``stated``, to the text's rounding (``rel``)."""
    close(actual, stated, rel, f"{what} (the text says about {stated:.3g})")


def equal(actual: object, expected: object, what: str) -> None:
    """Fail unless ``actual == expected`` (exact: counts, names, rank lists); the message prints both.

    >>> equal(4 * 80, 320, "all-reduces per micro-batch: 4 per layer")
    >>> equal([2], [1, 2], "the ranks blocked in recv")
    Traceback (most recent call last):
    ...
    AssertionError: the ranks blocked in recv: got [2], expected [1, 2]
    """
    if not actual == expected:
        raise AssertionError(f"{what}: got {actual!r}, expected {expected!r}")
