"""The checks of the labs' "your turn" tasks, one module per lab (:mod:`commlab.labs.registry` lists them).

Every check, ``check_<task>``, takes the learner's function(s) and returns a
:class:`commlab.labs.checking.Outcome` whose ``problem`` is one sentence naming the first thing that is wrong
("" when right), so that the notebook's check cell (``assert outcome.ok, outcome.problem``), the lab's script
and ``commlab labs check`` say the same thing.
Checks call the learner's code inside ``try``: a ``NotImplementedError`` says the cell is not written yet,
any other exception is reported with its type and message. They never print.
"""
from __future__ import annotations

from commlab.labs.checking import Outcome


def not_written(name: str, exc: BaseException) -> Outcome:
    """The skeleton still raises: say so, with the skeleton's own message."""
    return Outcome(problem=f"{name} is not written yet ({exc}): fill in the cell marked 'your turn' and run it")


def raised(call: str, exc: BaseException) -> Outcome:
    """The learner's function raised: name the call and the exception."""
    return Outcome(problem=f"{call} raised {type(exc).__name__}: {exc}")


def call(name: str, fn, *args, what: str = ""):
    """``(value, None)`` from ``fn(*args)``, or ``(None, Outcome)`` saying why it failed."""
    try:
        return fn(*args), None
    except NotImplementedError as exc:
        return None, not_written(name, exc)
    except Exception as exc:  # noqa: BLE001 - the learner's mistake, reported in words
        return None, raised(what or f"{name}{args!r}", exc)
