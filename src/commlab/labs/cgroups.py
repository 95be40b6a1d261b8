"""The pids and memory cgroups of a sandbox (cgroup v1 or v2, below the grader's own cgroup), where the host
lets the grader make them: the number of processes and threads of a sandbox, and the memory of all of them
together, are capped, and whatever is left in them is killed when they are removed (the kernel's
``cgroup.procs``; Documentation/admin-guide/cgroup-v2.rst, "pids" and "memory")."""
from __future__ import annotations

import functools
import os
import signal
from pathlib import Path

from commlab.labs.limits import Limits


class Cgroups:
    """The pids and memory cgroups of one sandbox, where this host lets the grader make them (cgroup v1 or v2,
    below the grader's own); empty where it does not. Joined by the sandbox's first process before it starts,
    so everything it starts is counted (threads too), and removed, with whatever is left in them, at the end."""

    def __init__(self, limits: Limits, name: str):
        self.paths: list[Path] = []
        for controller, settings in (("pids", {"pids.max": str(limits.processes)}),
                                     ("memory", {"memory.limit_in_bytes": str(limits.sandbox_memory_bytes),
                                                 "memory.max": str(limits.sandbox_memory_bytes),
                                                 "memory.swap.max": "0"})):
            path = _make_cgroup(controller, name)
            if path is None:
                continue
            written = False
            for key, value in settings.items():
                try:
                    (path / key).write_text(value)
                    written = True
                except OSError:
                    pass
            if written:
                self.paths.append(path)
            else:
                _remove_cgroup(path)

    def join(self) -> None:
        """In the sandbox's first process, before exec."""
        for path in self.paths:
            try:
                (path / "cgroup.procs").write_text(str(os.getpid()))
            except OSError:
                pass

    def remove(self) -> None:
        for path in self.paths:
            _remove_cgroup(path)
        self.paths = []


def _own_cgroup(controller: str) -> Path | None:
    """Where this process sits in ``controller``'s hierarchy (v1), or in the unified one (v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, where = line.split(":", 2)
        if controller in controllers.split(","):
            base = Path("/sys/fs/cgroup") / controller
            return base / where.lstrip("/") if base.is_dir() else None
    for line in lines:
        if line.startswith("0::"):
            for base in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
                if (base / "cgroup.controllers").is_file():
                    return base / line[3:].lstrip("/")
    return None


def _make_cgroup(controller: str, name: str) -> Path | None:
    parent = _own_cgroup(controller)
    if parent is None:
        return None
    path = parent / name
    try:
        path.mkdir()
    except OSError:
        return None
    if (path / "cgroup.controllers").is_file() and controller not in (path / "cgroup.controllers").read_text():
        _remove_cgroup(path)             # v2 without the controller delegated here
        return None
    return path


def _remove_cgroup(path: Path) -> None:
    import time

    for _ in range(50):
        try:
            for pid in (path / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError, ValueError):
                    pass
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


@functools.lru_cache(maxsize=1)
def cgroups_work() -> bool:
    """Whether this host lets the grader make a pids cgroup for a sandbox."""
    probe = Cgroups(Limits(), f"commlab-probe-{os.getpid()}")
    works = bool(probe.paths)
    probe.remove()
    return works


def remove_cgroups(prefix: str) -> None:
    """Every cgroup named ``<prefix>...`` below the grader's own (those of a grader process that was killed)."""
    for controller in ("pids", "memory"):
        parent = _own_cgroup(controller)
        if parent is not None and parent.is_dir():
            for path in parent.glob(prefix + "*"):
                _remove_cgroup(path)


def remove_stale_cgroups() -> None:
    """The empty cgroups of grader processes that were killed before they could remove them (their names carry
    the pid of the process that made them: ``commlab-<run>-<pid>-<token>``)."""
    for controller in ("pids", "memory"):
        parent = _own_cgroup(controller)
        if parent is None or not parent.is_dir():
            continue
        for path in parent.glob("commlab-*-*-*"):
            try:
                pid = int(path.name.split("-")[-2])
                if Path(f"/proc/{pid}").exists() or (path / "cgroup.procs").read_text().strip():
                    continue
                path.rmdir()
            except (ValueError, OSError):
                continue
