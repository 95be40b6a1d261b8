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
"""
from __future__ import annotations

import ast
import functools
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from commlab.errors import CommlabError

#: Where things are inside a sandbox.
HOME, PACKAGE, CHANNEL = "/home/student", "/opt/commlab-grader", "/run/grader"
#: Parts of the package a student's process never gets: the references, the checks (answer keys), the book's
#: exercise bank and its answers, the grader itself.
HIDDEN = ("labs/solutions", "labs/checks", "exercises", "labs/grade.py", "labs/gradebook.py", "labs/collect.py")


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


def _preexec(limits: Limits, cgroups: Cgroups | None = None):
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
                                   preexec_fn=_preexec(limits, cgroups), close_fds=True)
    except BaseException:
        cgroups.remove()
        raise
    return Box(process, kind + (" and cgroups" if cgroups.paths else ""), cgroups)


# --- the package a student's process imports ---------------------------------------------------------------

def _stub_source(text: str, names: set[str], why: str) -> str:
    """``text`` with every function (or method, as ``Class.method``) of ``names`` replaced by one that refuses."""
    tree = ast.parse(text)

    def body(qualname: str):
        message = f"{qualname} computes the answer of a lab ({why}): it is not available while a lab is graded"
        return ast.parse(f"raise PermissionError({message!r})").body

    def visit(nodes, prefix: str):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and prefix + node.name in names:
                node.body = body(prefix + node.name)
                node.decorator_list = [d for d in node.decorator_list if isinstance(d, ast.Name)
                                       and d.id in ("staticmethod", "classmethod", "property")]
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")

    visit(tree.body, "")
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def package_copy(dest: Path, answers: dict[str, tuple[str, ...]]) -> Path:
    """A copy of the running commlab package under ``dest`` (``dest/commlab``), read-only, for the students.

    ``answers`` maps a lab to its answer functions, ``"commlab.module:function"`` or ``":Class.method"``
    (:attr:`commlab.labs.registry.Lab.answers`): each is replaced by a function that raises PermissionError
    (its source is not in the copy). The parts in :data:`HIDDEN` are left out.
    """
    import commlab

    source = Path(commlab.__file__).resolve().parent
    target = Path(dest) / "commlab"
    hidden = {source / h for h in HIDDEN}

    def ignore(folder: str, entries: list[str]) -> list[str]:
        return [e for e in entries if e == "__pycache__" or Path(folder, e) in hidden or e.endswith(".pyc")]

    shutil.copytree(source, target, ignore=ignore, symlinks=False)
    by_module: dict[str, tuple[set[str], set[str]]] = {}
    for lab, names in answers.items():
        for name in names:
            module, _, function = name.partition(":")
            entry = by_module.setdefault(module, (set(), set()))
            entry[0].add(function)
            entry[1].add(lab)
    for module, (functions, labs) in by_module.items():
        parts = module.split(".")[1:]
        path = target.joinpath(*parts).with_suffix(".py")
        if not path.is_file():
            path = target.joinpath(*parts, "__init__.py")
        if not path.is_file():
            raise CommlabError(f"an answer function's module {module!r} is not in the package")
        path.write_text(_stub_source(path.read_text(), functions, "the lab " + ", ".join(sorted(labs))))
    for path in sorted(target.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    target.chmod(0o555)
    return target


def remove_tree(path: Path) -> None:
    """Remove a folder this module made read-only."""
    def again(func, name, _exc):
        try:
            os.chmod(name, 0o700)
            os.chmod(os.path.dirname(name), 0o700)
            func(name)
        except OSError:
            pass
    if Path(path).exists():
        for p in Path(path).rglob("*"):
            try:
                if p.is_dir() and not p.is_symlink():
                    p.chmod(0o700)
            except OSError:
                pass
        shutil.rmtree(path, onerror=again)
