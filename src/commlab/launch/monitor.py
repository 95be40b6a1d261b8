"""The launcher's watch over its ranks: stream their output, collect their results, notice failures.

One loop, in the caller's thread: wait (select) on every rank's pipes for at most 50 ms, re-print output
lines as ``[rank r] ...``, poll exit statuses. It ends when every rank has returned and exited; when a rank
fails (the others get ``grace_s`` to finish or fail on their own, then are stopped); or at the deadline,
when the ranks still running are asked for their Python stack (SIGUSR1, faulthandler) and stopped.
"""
from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass, field

from commlab.launch.failures import RankFailure, describe_exit
from commlab.launch.procs import RankProcess
from commlab.launch.wire import LineRelay, MessageStream, write_message

_POLL_S = 0.05
_STACK_WAIT_S = 1.0
#: How long ranks that have all returned get to exit before they are stopped (a lingering thread, say).
_EXIT_WAIT_S = 3.0
_WORKER_FILE = os.path.join("commlab", "launch", "worker.py")


@dataclass
class RankState:
    """What the launcher knows about one rank so far."""

    proc: RankProcess
    out: LineRelay
    err: LineRelay
    messages: MessageStream = field(default_factory=MessageStream)
    result: tuple | None = None
    """``("ok", value)`` or ``("error", summary, traceback)`` once the rank has sent it."""
    port: int | None = None
    """Rank 0 only: the port of the store it hosts."""
    exit_code: int | None = None
    failure: RankFailure | None = None
    failed_at: float = float("inf")
    """When the launcher noticed the failure (the first one noticed is reported as the cause)."""

    @classmethod
    def of(cls, proc: RankProcess, on_line=None) -> RankState:
        return cls(proc, LineRelay(proc.rank, to_stderr=False, on_line=on_line),
                   LineRelay(proc.rank, to_stderr=True, on_line=on_line))

    @property
    def rank(self) -> int:
        return self.proc.rank

    @property
    def finished(self) -> bool:
        return self.exit_code is not None or self.failure is not None

    @property
    def returned(self) -> bool:
        return self.result is not None

    def feed(self, data: bytes) -> None:
        """Bytes from the result pipe: the store's port (rank 0), then the result."""
        for message in self.messages.feed(data):
            if message[0] == "port":
                self.port = message[1]
            else:
                self.result = message

    def readers(self) -> dict[int, object]:
        return {self.proc.out_fd: self.out, self.proc.err_fd: self.err, self.proc.res_fd: self}


def _drain(fd: int, sink) -> bool:
    """Read what ``fd`` holds without blocking; False at end-of-file."""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        sink.feed(data)


def pump(states: list[RankState], open_fds: dict[int, object], wait_s: float) -> None:
    """Wait up to ``wait_s`` for output or results and hand what arrives to its relay or reader."""
    if open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], wait_s)
    else:
        ready = []
        time.sleep(wait_s)
    for fd in ready:
        if not _drain(fd, open_fds[fd]):
            del open_fds[fd]
    _pass_on_port(states)
    for st in states:
        if st.exit_code is None and (code := st.proc.poll()) is not None:
            for fd, sink in st.readers().items():
                if fd in open_fds and not _drain(fd, sink):
                    del open_fds[fd]
            st.exit_code = code
        if st.failure is None:
            _fail(st, _failure_of(st))


def _pass_on_port(states: list[RankState]) -> None:
    """Once rank 0 has said where its store listens, tell every other rank (once)."""
    port = states[0].port if states else None
    if port is None:
        return
    for st in states[1:]:
        if st.port is None and st.exit_code is None:
            st.port = port
            try:
                write_message(st.proc.ctl_fd, ("port", port))
            except OSError:
                pass  # that rank is gone; its exit status tells why


def _fail(st: RankState, failure: RankFailure | None) -> None:
    if failure is not None:
        st.failure, st.failed_at = failure, time.monotonic()


def _failure_of(st: RankState) -> RankFailure | None:
    if st.result is not None and st.result[0] == "error":
        _, summary, tb = st.result
        return RankFailure(st.rank, "exception", summary, tb)
    if st.exit_code is not None and not st.returned:
        return RankFailure(st.rank, "exit", describe_exit(st.exit_code), "\n".join(st.err.tail[-20:]))
    return None


def watch(states: list[RankState], timeout_s: float, grace_s: float) -> None:
    """Run the loop until every rank is done, a failure's grace has passed, or ``timeout_s`` from now."""
    deadline = time.monotonic() + timeout_s
    open_fds = {fd: sink for st in states for fd, sink in st.readers().items()}
    failed_at = returned_at = None
    while True:
        pump(states, open_fds, _POLL_S)
        now = time.monotonic()
        if all(st.finished for st in states):
            return
        if failed_at is None and any(st.failure for st in states):
            failed_at = now
        if failed_at is not None and now - failed_at > grace_s:
            _mark(states, "stopped", "had not finished when another rank failed")
            return
        if returned_at is None and all(st.returned for st in states):
            returned_at = now
        if returned_at is not None and (now - returned_at > _EXIT_WAIT_S or now > deadline):
            return  # every rank returned its value; the caller stops those that do not exit
        if now > deadline:
            _dump_stacks(states, open_fds, timeout_s)
            return


def _mark(states: list[RankState], kind: str, summary: str) -> None:
    for st in states:
        if not st.finished and not st.returned:
            _fail(st, RankFailure(st.rank, kind, summary))


def _dump_stacks(states: list[RankState], open_fds: dict[int, object], timeout_s: float) -> None:
    """Ask every rank still running for its Python stack (faulthandler on SIGUSR1) and keep it."""
    hung = [st for st in states if not st.finished and not st.returned]
    for st in hung:
        st.err.capture = []
        if hasattr(signal, "SIGUSR1"):
            st.proc.signal(signal.SIGUSR1)
    end = time.monotonic() + _STACK_WAIT_S
    while time.monotonic() < end:
        pump(states, open_fds, _POLL_S)
    for st in hung:
        stack = main_thread_stack(st.err.capture or [])
        st.err.capture = None
        if st.failure is None:
            where = stack.splitlines()[1].strip() if stack.count("\n") >= 1 else "its stack was not available"
            summary = f"did not finish within timeout_s={timeout_s:g} s; it was at {where}"
            _fail(st, RankFailure(st.rank, "timeout", summary, stack))


def main_thread_stack(lines: list[str]) -> str:
    """The faulthandler block of the rank's main work, innermost first, without the watchdog thread and
    without the launcher's frames below the reader's function.

    >>> main_thread_stack(['Thread 0x1 (most recent call first):', '  File "w.py", line 9 in _exit_when_orphaned',
    ...                    '', 'Current thread 0x2 (most recent call first):', '  File "cell", line 3 in ring'])
    'Current thread 0x2 (most recent call first):\\n  File "cell", line 3 in ring'
    """
    blocks: list[list[str]] = []
    block: list[str] = []
    for line in lines:
        if line.startswith(("Thread 0x", "Current thread 0x")) and block:
            blocks.append(block)
            block = []
        if line.strip():
            block.append(line)
    blocks.append(block)
    useful = [b for b in blocks if b and not any("_exit_when_orphaned" in x for x in b)]
    if not useful:
        return ""
    launcher = [i for i, x in enumerate(useful[0]) if _WORKER_FILE in x]
    return "\n".join(useful[0][:launcher[0]] if launcher else useful[0])
