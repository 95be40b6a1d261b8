"""The limits of one sandbox (:class:`Limits`) and how its first process applies them before exec: rlimits
(``setrlimit(2)``: address space, CPU seconds, file size, open files, core dumps, processes), a session of its
own, the cgroups it joins, and death with the grader (``PR_SET_PDEATHSIG``, ``prctl(2)``)."""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from commlab.errors import CommlabError


@dataclass(frozen=True)
class Limits:
    """The limits of one sandbox (each process in it, for the rlimits)."""

    memory_bytes: int = 2 * 2**30          # address space of one process (importing torch maps about 0.7 GiB)
    cpu_s: int = 600                       # CPU seconds of one process
    file_bytes: int = 64 * 2**20           # the largest file it may write (its log included)
    open_files: int = 256
    processes: int = 128                   # processes and threads of the sandbox (a pids cgroup; RLIMIT_NPROC too
                                           # for a user other than root)
    sandbox_memory_bytes: int = 6 * 2**30  # all its processes together (a memory cgroup)

    def __post_init__(self):
        for name in ("memory_bytes", "cpu_s", "file_bytes", "open_files", "processes", "sandbox_memory_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise CommlabError(f"Limits.{name} must be a whole number > 0, got {value!r}")


def _limit(kind: int, value: int) -> None:
    import resource

    try:
        _, hard = resource.getrlimit(kind)
        resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard),
                                  value if hard == resource.RLIM_INFINITY else min(value, hard)))
    except (ValueError, OSError):
        pass


def preexec(limits: Limits, cgroups=None):
    """The function a sandbox's first process runs before exec (``cgroups``: the
    :class:`commlab.labs.cgroups.Cgroups` it joins)."""
    def apply() -> None:
        import resource

        os.setsid()
        if cgroups is not None:
            cgroups.join()
        _limit(resource.RLIMIT_AS, limits.memory_bytes)
        _limit(resource.RLIMIT_CPU, limits.cpu_s)
        _limit(resource.RLIMIT_FSIZE, limits.file_bytes)
        _limit(resource.RLIMIT_NOFILE, limits.open_files)
        _limit(resource.RLIMIT_CORE, 0)
        if os.getuid() != 0:                # root ignores RLIMIT_NPROC; it counts every process of the user
            _limit(resource.RLIMIT_NPROC, limits.processes + len(os.listdir("/proc")))
        try:                                 # end with the grader even without bubblewrap
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)          # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    return apply
