"""Starting one rank as a process, forked or spawned, with four pipes to and from the launcher.

Each rank gets its own pipes: control (launcher to rank), stdout, stderr and results (rank to launcher);
the launcher keeps its ends and closes the rank's ends at once. A forked rank runs
:func:`commlab.launch.worker.forked_main` with the function object itself; a spawned rank is
``python -c ...spawned_main()``, which reads the cloudpickled function from its stdin (the control pipe), so
a function defined in a notebook cell travels by value.

Every rank leads a session of its own (``os.setsid`` in a forked rank, ``start_new_session`` for a spawned
one), so its process group holds the rank and whatever it starts; :meth:`RankProcess.end_group` signals the
whole group, and no process a rank started outlives the launch.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from multiprocessing.process import BaseProcess

from commlab.launch.wire import write_message
from commlab.launch.worker import RankSpec, forked_main

_SPAWN_CODE = "from commlab.launch.worker import spawned_main; spawned_main()"


@dataclass
class RankProcess:
    """The launcher's handle on one rank: its pid, the read ends of its pipes, and the process object."""

    rank: int
    process: BaseProcess | subprocess.Popen
    """A ``multiprocessing.Process`` (fork) or a ``subprocess.Popen`` (spawn)."""
    ctl_fd: int
    """Write end of the control pipe: the launcher sends the store's port (and, spawned, the function)."""
    out_fd: int
    err_fd: int
    res_fd: int

    @property
    def pid(self) -> int:
        pid = self.process.pid
        if pid is None:                                   # a multiprocessing.Process before start()
            raise RuntimeError(f"rank {self.rank}'s process has not started")
        return pid

    def poll(self) -> int | None:
        """Exit status (negative: killed by that signal), or None while it runs; reaps a finished child."""
        if isinstance(self.process, subprocess.Popen):
            return self.process.poll()
        return self.process.exitcode

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the rank alone (SIGUSR1 asks for its stack: its children must not get that)."""
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass  # it exited between the poll and the kill

    def end_group(self, sig: int) -> None:
        """Send ``sig`` to the rank's process group: the rank and every process it started. A rank that has
        not yet made its own group (just forked) gets the signal alone."""
        if not hasattr(os, "killpg"):  # pragma: no cover - Windows
            self.signal(sig)
            return
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            self.signal(sig)
        except PermissionError:
            pass  # the group id was reused by another user's process: not ours to signal

    def wait(self, timeout_s: float) -> int | None:
        if isinstance(self.process, subprocess.Popen):
            try:
                return self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                return None
        self.process.join(timeout_s)
        return self.process.exitcode

    def stop(self, grace_s: float = 1.0) -> None:
        """SIGTERM to the group, then SIGKILL after ``grace_s``; returns once the rank is reaped and its
        group has been sent SIGKILL (what it started dies with it)."""
        self.end_group(signal.SIGTERM)
        if self.wait(grace_s) is None:
            self.end_group(signal.SIGKILL)
            self.wait(30.0)
        self.end_group(signal.SIGKILL)


def _pipes() -> list[tuple[int, int]]:
    """(read, write) pairs for control (launcher to rank), stdout, stderr and result (rank to launcher)."""
    return [os.pipe() for _ in range(4)]


def _close_all(pipes) -> None:
    for pair in pipes:
        for fd in pair:
            os.close(fd)


def _keep_launcher_ends(rank: int, process, pipes) -> RankProcess:
    """Close the rank's ends here (so a dead rank's pipes reach end-of-file) and keep the launcher's."""
    (ctl_r, ctl_w), (out_r, out_w), (err_r, err_w), (res_r, res_w) = pipes
    for fd in (ctl_r, out_w, err_w, res_w):
        os.close(fd)
    for fd in (out_r, err_r, res_r):
        os.set_blocking(fd, False)
    return RankProcess(rank, process, ctl_w, out_r, err_r, res_r)


def start_forked(fn, args: tuple, kwargs: dict, spec: RankSpec) -> RankProcess:
    """Fork one rank (Linux, before CUDA is initialised): the child shares the parent's imported modules."""
    import multiprocessing

    pipes = _pipes()
    (ctl_r, ctl_w), (out_r, out_w), (err_r, err_w), (res_r, res_w) = pipes
    process = multiprocessing.get_context("fork").Process(
        target=forked_main, name=f"commlab-rank-{spec.rank}",
        args=(fn, args, kwargs, spec, (ctl_r, out_w, err_w, res_w), (ctl_w, out_r, err_r, res_r)))
    try:
        process.start()
    except BaseException:
        _close_all(pipes)
        raise
    return _keep_launcher_ends(spec.rank, process, pipes)


def start_spawned(payload: bytes, spec: RankSpec) -> RankProcess:
    """Start one rank as a fresh interpreter; its stdin is the control pipe, which first carries
    ``(sys.path, spec, payload)``."""
    pipes = _pipes()
    (ctl_r, ctl_w), (out_r, out_w), (err_r, err_w), (res_r, res_w) = pipes
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        process = subprocess.Popen([sys.executable, "-c", _SPAWN_CODE, str(res_w)], stdin=ctl_r,
                                   stdout=out_w, stderr=err_w, pass_fds=(res_w,), env=env,
                                   start_new_session=True)
    except BaseException:
        _close_all(pipes)
        raise
    handle = _keep_launcher_ends(spec.rank, process, pipes)
    try:
        write_message(ctl_w, (list(sys.path), spec, payload))
    except BrokenPipeError:
        pass  # the rank died before reading; the launcher reports its exit status
    return handle
