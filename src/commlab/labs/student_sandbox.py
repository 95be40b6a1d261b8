"""One sandbox for all the labs of one student, under bubblewrap (the grader's side of :mod:`commlab.labs.zygote`).

:func:`start` makes the sandbox from a keeper process forked by the grading run's fork server (a process of one
thread, so that the sandbox's ``preexec_fn`` never runs in a forked copy of the threaded grading run); the
keeper ends the sandbox when it is told to, when the grading run ends (``PR_SET_PDEATHSIG``) or when the run is
killed. The sandbox binds the student's folder on the host (:attr:`StudentSandbox.root`) at
:data:`commlab.labs.sandbox.CHANNEL`; each lab's grader process makes its own folder there (a fresh copy of the
student's files, the lab's sockets) and asks the sandbox's first process to fork the lab (:class:`LabProcess`).
A sandbox is used for a further lab only while its first process lives and has cleared the namespace after the
last lab (:meth:`StudentSandbox.usable`); else the student's next lab gets a fresh one.
"""
from __future__ import annotations

import os
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from commlab.labs import zygote

#: How long a fresh sandbox may take to import what the labs need and listen, seconds.
READY_S = 60.0
#: How long the grader waits for the sandbox's first process to answer, seconds.
ANSWER_S = 10.0
CTL = "ctl.sock"


def _keeper(root: str, package: str, limits: dict | None, prefix: str, preload: str, log_path: str, conn) -> None:
    """In a process forked by the fork server: start the sandbox, then end it when told (or when the run ends)."""
    from commlab.labs import sandbox
    from commlab.labs.forked import ends_with_parent, let_the_server_end

    ends_with_parent()
    let_the_server_end()
    box = None
    try:
        home = Path(root) / "home"
        home.mkdir()
        with open(log_path, "ab") as log:
            box = sandbox.start("commlab.labs.zygote", [f"{sandbox.CHANNEL}/{CTL}", preload], package=Path(package),
                                home=home, channel=Path(root), log=log,
                                limits=sandbox.Limits(**limits) if limits else sandbox.Limits(), name=prefix)
        conn.send(("started", box.process.pid))
        conn.recv()                              # "stop", or EOF when the grading run ends
    except (EOFError, OSError):
        pass
    finally:
        if box is not None:
            box.kill()
        os._exit(0)


@dataclass
class StudentSandbox:
    """A started sandbox of one student: its folder on the host, its first process's socket, its keeper."""

    root: Path
    keeper: Any
    """The keeper process (a ``multiprocessing`` process of the run's fork server)."""
    conn: Any
    """The keeper's end of a pipe: "stop" ends the sandbox."""

    @property
    def ctl(self) -> Path:
        return self.root / CTL

    def spec(self) -> dict:
        """What a lab's grader process needs to run its lab here (``spec["zygote"]``)."""
        return {"ctl": str(self.ctl), "root": str(self.root)}

    def usable(self) -> bool:
        """The keeper and the sandbox's first process live, and no process of an earlier lab is left."""
        if not self.keeper.is_alive():
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(ANSWER_S)
                sock.connect(str(self.ctl))
                zygote.send(sock, {"ping": True})
                answer, _ = zygote.receive(sock, bytearray())
        except (OSError, ValueError):
            return False
        return bool(answer and answer.get("pong") and answer.get("others") == 0)

    def stop(self) -> None:
        from commlab.labs.sandbox import remove_tree

        try:
            self.conn.send("stop")
        except (OSError, ValueError):
            pass
        self.keeper.join(15)
        if self.keeper.is_alive():
            self.keeper.kill()
            self.keeper.join()
        self.conn.close()
        remove_tree(self.root)


def start(context, work: Path, package: Path, limits, prefix: str, preload: str) -> StudentSandbox | None:
    """A fresh sandbox for one student's labs, or None where it did not come up (the labs then start their own)."""
    root = Path(tempfile.mkdtemp(prefix="student-", dir=work))
    mine, theirs = context.Pipe()
    keeper = context.Process(target=_keeper, args=(str(root), str(package), asdict(limits) if limits else None,
                                                   prefix, preload, str(root) + ".log", theirs), daemon=False)
    keeper.start()
    theirs.close()
    made = StudentSandbox(root, keeper, mine)
    end = time.monotonic() + READY_S
    while time.monotonic() < end:
        if made.ctl.is_socket():
            return made
        if not keeper.is_alive():
            break
        time.sleep(0.02)
    made.stop()
    return None


class LabProcess:
    """A lab's process in its student's sandbox, as a lab's grader process sees it: ``poll()`` its exit status
    (None while it runs), ``kill()`` it and everything it started."""

    def __init__(self, ctl: str, request: dict, log_path: str):
        self.returncode: int | None = None
        self.process = self                      # what the grader's code reads of a box
        self.buffer = bytearray()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(ANSWER_S)
        self.sock.connect(ctl)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            zygote.send(self.sock, {"start": request}, (fd,))
        finally:
            os.close(fd)
        answer, _ = zygote.receive(self.sock, self.buffer)
        if not answer or "pid" not in answer:
            raise OSError(f"the student's sandbox did not start the lab: {answer!r}")
        self.pid = int(answer["pid"])

    def _read(self, timeout_s: float) -> dict | None:
        self.sock.settimeout(timeout_s)
        try:
            message, _ = zygote.receive(self.sock, self.buffer)
        except (TimeoutError, BlockingIOError):
            return {}
        except (OSError, ValueError):
            message = None
        if message is None and self.returncode is None:
            self.returncode = -9                 # the sandbox's first process is gone, and the lab with it
        elif message and "exit" in message:
            self.returncode = int(message["exit"])
        return message

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read(0.0001)
        return self.returncode

    def kill(self) -> None:
        try:
            zygote.send(self.sock, {"end": True})
            end = time.monotonic() + zygote.CLEAR_S + ANSWER_S
            while time.monotonic() < end:
                message = self._read(max(0.01, end - time.monotonic()))
                if message is None or "clean" in (message or {}):
                    break
        except OSError:
            pass
        finally:
            self.sock.close()
