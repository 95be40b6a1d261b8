"""What travels between a rank and the process that launched it: framed messages (the store's port, the
result), and lines of output re-printed with a ``[rank r]`` prefix.

A message is ``8-byte big-endian length + cloudpickle bytes``. Rank 0 first sends ``("port", port)`` (the
port of the TCPStore it hosts, which the launcher passes on to the other ranks); every rank ends with
``("ok", value)`` or ``("error", summary, traceback_text)``. The length prefix means the parent knows a
message is complete without waiting for end-of-file (another launch's forked child may hold a copy of the
pipe for a while).
"""
from __future__ import annotations

import os
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

_HEADER = struct.Struct(">Q")


def write_message(fd: int, obj: object) -> None:
    """Pickle ``obj`` with cloudpickle and write it, framed, to file descriptor ``fd``."""
    import cloudpickle

    data = cloudpickle.dumps(obj)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@dataclass
class MessageStream:
    """Cuts framed messages out of the bytes read from a pipe, in order."""

    buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list:
        """Add bytes; return the messages that became complete (usually none or one)."""
        import pickle

        self.buffer += data
        done = []
        while len(self.buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self.buffer)
            if len(self.buffer) < _HEADER.size + length:
                break
            done.append(pickle.loads(bytes(self.buffer[_HEADER.size:_HEADER.size + length])))
            del self.buffer[:_HEADER.size + length]
        return done


@dataclass
class Inbox:
    """The messages arriving on one pipe, read on demand (a rank reads its launcher's messages this way)."""

    fd: int
    stream: MessageStream = field(default_factory=MessageStream)
    pending: list = field(default_factory=list)

    def next(self, timeout_s: float):
        """Block until the next message has arrived (at most ``timeout_s``) and return it."""
        import select
        import time

        deadline = time.monotonic() + timeout_s
        while not self.pending:
            ready, _, _ = select.select([self.fd], [], [], max(deadline - time.monotonic(), 0.0))
            if not ready:
                raise TimeoutError(f"no message from the launcher within {timeout_s:g} s")
            data = os.read(self.fd, 1 << 16)
            if not data:
                raise EOFError("the launcher closed the pipe before sending its message")
            self.pending += self.stream.feed(data)
        return self.pending.pop(0)


@dataclass
class LineRelay:
    """Re-prints the output of one rank's stdout or stderr, one line at a time, as ``[rank r] line``.

    ``keep`` remembers the last lines (the tail of stderr goes into the error of a rank that died). While
    ``capture`` is a list, lines go there instead of being printed (the stack dump asked for at a timeout).
    """

    rank: int
    to_stderr: bool
    keep: int = 200
    pending: bytes = b""
    tail: list[str] = field(default_factory=list)
    capture: list[str] | None = None
    on_line: Callable[[int, str, bool], bool] | None = None
    """``on_line(rank, line, to_stderr) -> bool``: sees each line first; True means consumed, not printed."""

    def feed(self, data: bytes) -> None:
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()
        for line in lines:
            self._emit(line.decode("utf-8", errors="replace"))

    def flush(self) -> None:
        if self.pending:
            self._emit(self.pending.decode("utf-8", errors="replace"))
            self.pending = b""

    def _emit(self, line: str) -> None:
        if self.capture is not None:
            self.capture.append(line)
            return
        if self.on_line is not None and self.on_line(self.rank, line, self.to_stderr):
            return
        stream = sys.stderr if self.to_stderr else sys.stdout
        print(f"[rank {self.rank}] {line}", file=stream, flush=True)
        self.tail.append(line)
        del self.tail[:-self.keep]
