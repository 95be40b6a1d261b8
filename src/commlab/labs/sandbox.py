"""A student's code in a box: bubblewrap on Linux, or resource limits and a process group where it is missing.

What one sandbox is (:func:`start`), with bubblewrap (``bwrap``, Debian's package ``bubblewrap``):

* its own user, PID, network, IPC, UTS and cgroup namespaces (``--unshare-all``), every capability dropped,
  a new session (so it cannot reach the grader's terminal), and ``--die-with-parent``: when the grader's
  process ends, PID 1 of the sandbox ends, and the kernel kills every process in it, however it was started
  (a double fork, ``setsid``, a child that holds a pipe). No network at all (not even to 127.0.0.1 outside).
* a filesystem of its own: the system's ``/usr`` and the Python installation read-only, a read-only copy of
  the commlab package made for this grading run (:func:`package_copy`: without the reference solutions, the
  checks and their answer keys, and with the functions that compute a lab's answers replaced), the student's
  own files copied afresh, and an empty ``/tmp``. The grader's source tree, the class folder, other students'
  files, the instructor's home and environment are not there.
* a clean environment (:func:`clean_env`), and limits (:class:`Limits`): address space, CPU seconds, file
  size, open files, and processes; the grader adds the wall time.

Without bubblewrap (macOS, a host that forbids user namespaces), :func:`start` runs the same command with the
same limits, a clean environment and a process group of its own, and :func:`isolation` says what is not
isolated then: the files of the machine, the network, other processes of the same user, and descendants
that leave the process group.

Under bubblewrap a grading run gives each student one such sandbox for all of their labs, whose first process
forks each lab and clears the namespace after it (:mod:`commlab.labs.student_sandbox`,
:mod:`commlab.labs.zygote`); without it, and where that sandbox cannot take a lab, each lab starts its own.

The parts live in files of their own and are importable from here as before: :mod:`commlab.labs.limits`
(:class:`Limits`, applied before exec), :mod:`commlab.labs.cgroups` (:class:`Cgroups`) and
:mod:`commlab.labs.student_package` (:func:`package_copy`, :data:`HIDDEN`, :func:`remove_tree`).
"""
from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from commlab.labs.cgroups import Cgroups, cgroups_work, remove_cgroups, remove_stale_cgroups
from commlab.labs.limits import Limits, preexec
from commlab.labs.student_package import HIDDEN, package_copy, remove_tree

__all__ = ["CHANNEL", "HIDDEN", "HOME", "PACKAGE", "Box", "Cgroups", "Limits", "bwrap_path", "cgroups_work",
           "clean_env", "isolation", "package_copy", "python_command", "remove_cgroups", "remove_stale_cgroups",
           "remove_tree", "start"]

#: Where things are inside a sandbox.
HOME, PACKAGE, CHANNEL = "/home/student", "/opt/commlab-grader", "/run/grader"


@functools.lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    """``bwrap`` when it is installed and can make a sandbox here (user namespaces allowed), else None."""
    if os.environ.get("COMMLAB_SANDBOX") == "rlimits":
        return None
    found = shutil.which("bwrap")
    if found is None or not sys.platform.startswith("linux"):
        return None
    try:
        done = subprocess.run([found, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                               "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true"],
                              capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if done.returncode == 0 else None


def isolation() -> tuple[str, list[str]]:
    """("bubblewrap", ...) or ("rlimits", ...), and what is not isolated, in sentences."""
    notes = [] if cgroups_work() else [
        "no cgroup could be made here: the number of processes of a sandbox is not limited when the grader runs "
        "as root (root ignores RLIMIT_NPROC), and memory is limited per process, not per sandbox"]
    if bwrap_path() is not None:
        return "bubblewrap" + (" and cgroups" if not notes else ""), notes
    why = ("bwrap is not installed (Debian: apt-get install bubblewrap)" if shutil.which("bwrap") is None
           else "bwrap cannot create namespaces on this host")
    return "rlimits" + (" and cgroups" if not notes else ""), notes + [
        f"no sandbox: {why}; students run with limits, a clean environment and a process group of their own, but "
        "they can read every file this user can read (other students' copies, the grader's package), reach the "
        "network and other processes of this user, and a descendant that leaves its process group (setsid) "
        "outlives the lab unless a cgroup holds it"]


def clean_env(extra: dict | None = None) -> dict:
    """The whole environment of a student's process: nothing of the instructor's."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "TMPDIR": "/tmp", "MPLBACKEND": "Agg", "COMMLAB_PROGRESS_OFF": "1"}
    env.update(extra or {})
    return env


def _system_binds() -> list[str]:
    args: list[str] = []
    for top in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        p = Path(top)
        if p.is_symlink():
            args += ["--symlink", os.readlink(top), top]
        elif p.is_dir():
            args += ["--ro-bind", top, top]
    for etc in ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives"):
        if os.path.exists(etc):
            args += ["--ro-bind", etc, etc]
    prefixes = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)}
    prefixes.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    for prefix in sorted(prefixes):
        if not prefix.startswith("/usr/"):
            args += ["--ro-bind", prefix, prefix]
    for unreal in sorted({sys.prefix, sys.base_prefix} - prefixes):   # a venv reached through a symlink
        if os.path.exists(unreal):
            args += ["--ro-bind", unreal, unreal]
    return args


def python_command(package_root: str, script: str, args: list[str]) -> list[str]:
    """``python -I -u -c`` with ``package_root`` first on sys.path (unbuffered; isolated: no PYTHONPATH, no user
    site, no current folder)."""
    boot = f"import sys; sys.path.insert(0, {package_root!r}); sys.argv = [{script!r}] + sys.argv[1:]; " \
           f"import runpy; runpy.run_module({script!r}, run_name='__main__', alter_sys=True)"
    return [sys.executable, "-I", "-u", "-c", boot, *args]


@dataclass
class Box:
    """A started sandbox: its process (the leader of a process group), how it was isolated, its cgroups."""

    process: subprocess.Popen
    kind: str
    cgroups: Cgroups | None = None

    def kill(self) -> None:
        """Everything in it: the process group (under bubblewrap the PID namespace with it; and its cgroups)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.cgroups is not None:
            self.cgroups.remove()


def start(module: str, args: list[str], *, package: Path, home: Path, channel: Path, log, limits: Limits,
          name: str = "commlab-sandbox-") -> Box:
    """Run ``python -m module args`` for a student: their files in ``home`` (writable, theirs alone), the
    package copy ``package`` read-only, the grader's socket folder ``channel``; stdout and stderr to ``log``."""
    bwrap = bwrap_path()
    if bwrap is not None:
        command = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                   "--tmpfs", "/tmp", *_system_binds(), "--proc", "/proc", "--dev", "/dev",   # /tmp first: a venv
                   # under /tmp (a CI clone) is bound on top of the empty /tmp, not hidden by it
                   "--ro-bind", str(package), PACKAGE, "--bind", str(home), HOME, "--bind", str(channel), CHANNEL,
                   "--chdir", HOME, "--clearenv"]
        for key, value in clean_env().items():
            command += ["--setenv", key, value]
        command += ["--", *python_command(PACKAGE, module, [a.replace(str(channel), CHANNEL)
                                                             .replace(str(home), HOME) for a in args])]
        env, cwd, kind = clean_env(), "/", "bubblewrap"
    else:
        command = python_command(str(package), module, args)
        env, cwd, kind = clean_env({"HOME": str(home), "TMPDIR": str(home)}), str(home), "rlimits"
    import secrets

    cgroups = Cgroups(limits, f"{name}{os.getpid()}-{secrets.token_hex(4)}")
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=cwd,
                                   preexec_fn=preexec(limits, cgroups), close_fds=True)
    except BaseException:
        cgroups.remove()
        raise
    return Box(process, kind + (" and cgroups" if cgroups.paths else ""), cgroups)
