"""How a failed launch is reported: which rank failed, how (exception, exit, signal, timeout), and where.

:class:`RankError` is a ``RuntimeError``, not a :class:`~commlab.errors.CommlabError`: the failure happened
inside the reader's own code on some rank, and its traceback is the useful part, so it is shown whole
rather than squeezed into one line. Its message names every failed rank; the first failure (the cause, in
the order the launcher saw them) comes with its full traceback, the others with one line each (a peer's
"Connection closed by peer" is usually a consequence of the first failure).
"""
from __future__ import annotations

import signal
from dataclasses import dataclass

#: Kinds of failure, in the words of the error message.
KINDS = ("exception", "exit", "timeout", "stopped")


@dataclass(frozen=True)
class RankFailure:
    """What went wrong on one rank."""

    rank: int
    kind: str
    """One of ``KINDS``: raised an exception, exited or was killed, ran past the timeout, or was stopped
    by the launcher because another rank failed first."""
    summary: str
    """One line: ``ValueError: boom``, ``killed by signal SIGKILL (9)``, ..."""
    detail: str = ""
    """The rank's formatted traceback, or its Python stack when it was stopped at the timeout."""


def describe_exit(code: int) -> str:
    """Words for a process exit status (negative: killed by that signal, as ``Popen.returncode``).

    >>> describe_exit(-9), describe_exit(3)
    ('killed by signal SIGKILL (9)', 'exited with code 3 before returning a result (os._exit, sys.exit or a crash)')
    """
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        what = "crashed with a segmentation fault" if name == "SIGSEGV" else "killed by signal"
        return f"{what} {name} ({-code})"
    return f"exited with code {code} before returning a result (os._exit, sys.exit or a crash)"


def _rank_list(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def _shorten(text: str, width: int = 200) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def format_failures(failures: list[RankFailure], n_ranks: int, backend: str) -> str:
    """The message of :class:`RankError` (see the module docstring)."""
    first = failures[0]
    lines = [f"rank {first.rank} of {n_ranks} ({backend}) failed: {first.summary}"]
    if first.detail:
        lines += [f"--- rank {first.rank} ---", first.detail.rstrip()]
    later = [f for f in failures[1:] if f.kind != "stopped"]
    if later:
        lines.append("then (often a consequence of the first failure):")
        lines += [f"  rank {f.rank}: {_shorten(f.summary)}" for f in later]
    stopped = [f.rank for f in failures if f.kind == "stopped"]
    if stopped:
        verb = "was" if len(stopped) == 1 else "were"
        lines.append(f"{_rank_list(stopped)} had not finished and {verb} stopped")
    return "\n".join(lines)


class RankError(RuntimeError):
    """One or more ranks of a launch failed; ``failures`` says which and how (first = the cause)."""

    def __init__(self, failures: list[RankFailure], n_ranks: int, backend: str):
        self.failures = list(failures)
        self.n_ranks = n_ranks
        self.backend = backend
        super().__init__(format_failures(self.failures, n_ranks, backend))

    def __reduce__(self):
        return (type(self), (self.failures, self.n_ranks, self.backend))

    @property
    def rank(self) -> int:
        """The rank whose failure the launcher noticed first (usually the cause)."""
        return self.failures[0].rank

    @property
    def ranks(self) -> list[int]:
        """Every rank that failed on its own (not those stopped because of another), first one first."""
        return [f.rank for f in self.failures if f.kind != "stopped"]

    @property
    def timed_out(self) -> bool:
        """True when the launch ran past its timeout (a deadlock, more often than not)."""
        return any(f.kind == "timeout" for f in self.failures)
