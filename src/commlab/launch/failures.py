"""How a failed launch is reported: which rank failed, how (exception, exit, signal, timeout), and where.

:class:`RankError` is a ``RuntimeError``, not a :class:`~commlab.errors.CommlabError`: the failure happened
inside the reader's own code on some rank, and its traceback is the useful part, so it is shown whole
rather than squeezed into one line. Its message names every failed rank; the cause comes first with its
full traceback, the others with one line each.

The cause is found by what each failure says, not by the order the launcher noticed them in (a peer's error
can reach the launcher before the exit status of the rank that was killed): an error that only says a peer
went away (gloo's "Connection closed by peer", NCCL's "remote process exited", a broken pipe) is a
consequence; a rank killed by a signal, or one that raised anything else, is a cause. When every failure is
such a consequence and some rank had already returned its value, that rank left the group early (it skipped
a collective its peers were waiting in) and is named as the cause.
"""
from __future__ import annotations

import signal
from dataclasses import dataclass

#: Kinds of failure, in the words of the error message.
KINDS = ("exception", "exit", "timeout", "stopped", "left")
#: Words (lower case) of an error that only says a peer is gone: gloo's pair.cc, NCCL, sockets, the store.
PEER_LOST = ("connection closed by peer", "connection reset by peer", "broken pipe", "remote process exited",
             "ncclremoteerror", "remote worker crashing", "connection refused", "socket closed", "econnreset")


@dataclass(frozen=True)
class RankFailure:
    """What went wrong on one rank."""

    rank: int
    kind: str
    """One of ``KINDS``: raised an exception, exited or was killed, ran past the timeout, was stopped by the
    launcher because another rank failed first, or left: returned while its peers still waited for it."""
    summary: str
    """One line: ``ValueError: boom``, ``killed by signal SIGKILL (9)``, ..."""
    detail: str = ""
    """The rank's formatted traceback, or its Python stack when it was stopped at the timeout."""

    @property
    def peer_lost(self) -> bool:
        """True for an exception that only says a peer went away (a consequence of another failure).

        >>> RankFailure(0, "exception", "RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:1").peer_lost
        True
        """
        text = self.summary.lower()
        return self.kind == "exception" and any(words in text for words in PEER_LOST)


LEFT_EARLY = ("it returned its value while other ranks still waited for it in a collective (every rank must "
              "make the same collective calls, in the same order)")


def order_failures(noticed: list[tuple[RankFailure, float]], returned: list[int]) -> list[RankFailure]:
    """The failures, cause first: (failure, when the launcher noticed it) pairs and the ranks that returned a
    value. Causes (deaths, genuine exceptions, timeouts) before peer-lost errors, then stopped ranks; within
    each, the order they were noticed in. When only peer-lost errors are left, the ranks that returned come
    first as having left early (see the module docstring).

    >>> lost = RankFailure(0, "exception", "RuntimeError: Connection closed by peer")
    >>> killed = RankFailure(2, "exit", "killed by signal SIGKILL (9)")
    >>> [f.rank for f in order_failures([(lost, 1.0), (killed, 2.0)], [])]
    [2, 0]
    >>> [(f.rank, f.kind) for f in order_failures([(lost, 1.0)], [1])]
    [(1, 'left'), (0, 'exception')]
    """
    def group(failure: RankFailure) -> int:
        return 2 if failure.kind == "stopped" else 1 if failure.peer_lost else 0

    ordered = [f for f, _ in sorted(noticed, key=lambda pair: (group(pair[0]), pair[1], pair[0].rank))]
    if ordered and group(ordered[0]) == 1 and returned:
        ordered = [RankFailure(r, "left", LEFT_EARLY) for r in sorted(returned)] + ordered
    return ordered


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
    verb = "left early" if first.kind == "left" else "failed"
    lines = [f"rank {first.rank} of {n_ranks} ({backend}) {verb}: {first.summary}"]
    shown = first if first.detail else next((f for f in failures[1:] if f.detail and f.kind != "stopped"), None)
    if shown is not None:
        where = "" if shown is first else f" (where it was when rank {first.rank} {verb})"
        lines += [f"--- rank {shown.rank}{where} ---", shown.detail.rstrip()]
    later = [f for f in failures[1:] if f.kind != "stopped"]
    if later:
        lines.append("then (a consequence of the first failure, most likely):")
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
        """The rank that caused the failure (see :func:`order_failures`)."""
        return self.failures[0].rank

    @property
    def ranks(self) -> list[int]:
        """Every rank that failed on its own (not those stopped because of another), first one first."""
        return [f.rank for f in self.failures if f.kind != "stopped"]

    @property
    def timed_out(self) -> bool:
        """True when the launch ran past its timeout (a deadlock, more often than not)."""
        return any(f.kind == "timeout" for f in self.failures)
