"""Inside one student's sandbox: a process that has imported torch once and forks each of the student's labs.

Importing torch takes about 2 s of CPU, and six of the labs import it in the student's process. Under
bubblewrap a student's labs therefore share one sandbox (their own, never another student's), whose first
process (PID 2 of its PID namespace, under bubblewrap's init) runs :func:`main`: it imports torch, then
answers the grader of one lab at a time on a Unix socket. For each lab it forks a process that does what a
fresh sandbox would (:func:`commlab.labs.sandboxed.main`: the student's module imported in a folder of its own,
the lab's output to the lab's log, whose descriptor the grader hands over), and when the lab ends (the grader
says so, or its connection closes) it kills every other process of the namespace with ``kill(-1, SIGKILL)``
(``kill(2)``: every process the caller may signal but itself and the namespace's init) until none is left, and
says whether that worked. A lab that could not be cleared, or a sandbox whose first process is gone, is never
used again: the grader starts a fresh sandbox for the next lab (:mod:`commlab.labs.student_sandbox`).

What the labs of one student share is what they would share anyway as that student's code: the sandbox's
``/tmp`` and its first process, which a lab's code can kill (it then fails that lab and the next gets a fresh
sandbox). Nothing here ever runs without a PID namespace: ``kill(-1)`` outside one would reach every process
of the user.

The messages are one JSON object a line; the first, which starts a lab, carries the log's descriptor
(``SCM_RIGHTS``, :func:`socket.send_fds`).
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import time

#: How long the first process tries to clear the namespace after a lab, seconds.
CLEAR_S = 5.0


def send(sock: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    """One message (a JSON line), with ``fds`` passed along it."""
    data = (json.dumps(message) + "\n").encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.sendall(data)


def receive(sock: socket.socket, buffer: bytearray, max_fds: int = 0) -> tuple[dict | None, list[int]]:
    """The next message from ``sock`` (None at its end) and the descriptors that came with it."""
    fds: list[int] = []
    while b"\n" not in buffer:
        if max_fds:
            data, got, _, _ = socket.recv_fds(sock, 65536, max_fds)
            fds += got
        else:
            data = sock.recv(65536)
        if not data:
            return None, fds
        buffer += data
        if len(buffer) > 2**20:
            raise ValueError("a message longer than 1 MiB")
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return json.loads(line), fds


def others() -> list[int]:
    """The processes of this PID namespace other than its init and this one."""
    me = os.getpid()
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me))


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def clear(within_s: float = CLEAR_S) -> bool:
    """Kill every other process of the namespace, until none is left: True if that happened in time."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:             # nothing left that this process may signal
            pass
        _reap()
        if not others():
            return True
        time.sleep(0.01)
    return False


def _run_lab(request: dict, log_fd: int) -> None:
    """In the forked process of one lab: its log, its folder, then the sandboxed student (never returns)."""
    code = 1
    try:
        os.setsid()
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        os.chdir(request["home"])
        os.environ["HOME"] = request["home"]
        from commlab.labs import sandboxed

        code = sandboxed.main(request["channels"], request["lab"], request["module"], int(request["world"]))
    except BaseException:  # noqa: BLE001 - whatever happened goes to the lab's log; this process must end here
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve_lab(conn: socket.socket, server: socket.socket) -> None:
    """One lab: fork it, tell its exit, and clear the namespace when the grader is done with it."""
    buffer = bytearray()
    request, fds = receive(conn, buffer, max_fds=1)
    if request is None or "start" not in request or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        if request is not None and request.get("ping"):
            send(conn, {"pong": True, "others": len(others())})
        return
    pid = os.fork()
    if pid == 0:
        server.close()
        conn.close()
        _run_lab(request["start"], fds[0])
    os.close(fds[0])
    send(conn, {"pid": pid})
    told = False
    with selectors.DefaultSelector() as sel:
        sel.register(conn, selectors.EVENT_READ)
        while True:
            if not told:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done, status = pid, 0
                if done:
                    send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                    told = True
            if sel.select(timeout=0.05):
                message, _ = receive(conn, buffer)
                if message is None or message.get("end"):
                    break
    clean = clear()
    try:
        send(conn, {"clean": clean})
    except OSError:
        pass
    if not clean:                              # the grader will not use this sandbox again
        raise SystemExit(3)


def main(ctl_path: str, preload: str) -> int:
    """Import what the labs need, then serve one lab at a time on ``ctl_path`` (module docstring)."""
    if os.getpid() != 2 or not os.path.exists("/proc/1"):
        print("commlab.labs.zygote runs only as the first process of a sandbox's PID namespace", file=sys.stderr)
        return 2
    modules = preload.split(",")
    if "torch" in modules:
        import torch  # noqa: F401 - imported once here, so that no lab pays for it
        import torch.distributed  # noqa: F401
        import importlib

        for name in modules:               # the labs' slow first imports (commlab.labs.registry.Lab.imports)
            if name.startswith("torch.") and name.replace(".", "").replace("_", "").isalnum():
                importlib.import_module(name)
    import numpy  # noqa: F401

    from commlab.labs import mine, sandboxed, wire  # noqa: F401 - what every lab's process uses

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(ctl_path + ".tmp")
    server.listen(4)
    os.rename(ctl_path + ".tmp", ctl_path)     # the grader connects once the path exists
    while True:
        conn, _ = server.accept()
        with conn:
            try:
                _serve_lab(conn, server)
            except (OSError, ValueError):      # the grader's side went away mid-message: end that lab anyway
                if not clear():
                    return 3


if __name__ == "__main__":
    sys.modules["commlab.labs.zygote"] = sys.modules[__name__]
    sys.exit(main(sys.argv[1], sys.argv[2]))
