"""The one error class a user can cause.

Every bad value a reader, an instructor or a script can pass (a size that does not parse, an unknown link,
``--ranks 0``) raises :class:`CommlabError`, whose message names the value and what is accepted. The command
line prints it on one line; a notebook shows it without a long traceback into commlab's internals.
"""


class CommlabError(ValueError):
    """A user-caused error; the message says what was given and what is accepted."""


def check_choice(what: str, value: object, choices) -> None:
    """Raise CommlabError unless ``value`` is one of ``choices``.

    >>> check_choice("algorithm", "ring", ("ring", "tree"))
    >>> check_choice("algorithm", "rnig", ("ring", "tree"))
    Traceback (most recent call last):
    ...
    commlab.errors.CommlabError: unknown algorithm 'rnig'; expected one of: ring, tree
    """
    if value not in choices:
        raise CommlabError(f"unknown {what} {value!r}; expected one of: {', '.join(map(str, choices))}")


def check_n_ranks(n_ranks: object, low: int = 1, high: int | None = None) -> int:
    """Return ``n_ranks`` as an int, or raise CommlabError naming it and the accepted range.

    >>> check_n_ranks(4)
    4
    >>> check_n_ranks(0)
    Traceback (most recent call last):
    ...
    commlab.errors.CommlabError: n_ranks must be a whole number >= 1, got 0
    """
    if (not isinstance(n_ranks, int) or isinstance(n_ranks, bool) or n_ranks < low
            or (high is not None and n_ranks > high)):
        span = f">= {low}" if high is None else f"from {low} to {high}"
        raise CommlabError(f"n_ranks must be a whole number {span}, got {n_ranks!r}")
    return n_ranks
