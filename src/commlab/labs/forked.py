"""What a process forked from a grading run's fork server does first (:mod:`commlab.labs.grade`): a session of
its own, death with its parent, and its copy of the server's "alive" pipe closed (so that the server, and with
it this process, ends with the grading run)."""
from __future__ import annotations

import os
import signal


def ends_with_parent() -> None:
    """In a grader process, first: a session of its own, and killed when its parent is (Ctrl-C, a kill of the
    grading run): its sandboxes end with it (bubblewrap's --die-with-parent)."""
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)          # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


def let_the_server_end() -> None:
    """Close this process's copy of the fork server's "alive" pipe (multiprocessing hands every forked process
    one, and the server ends only when every copy is closed): the server then ends with the grading run, and this
    process with the server (its PR_SET_PDEATHSIG), even when the grading run is killed."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(fd, int):
        try:
            os.close(fd)
        except OSError:
            pass
        server._forkserver_alive_fd = None  # type: ignore[union-attr]
