"""Grading: every task of some labs, on one learner's modules or a whole class's, each student in a sandbox.

``commlab labs check`` (:mod:`commlab.cli.labs`) calls :func:`grade_class` (or :func:`grade` for one
learner). For each (student, lab) a grader process of its own (``python -m commlab.labs.grade --child``,
trusted: the grader's code, outside any sandbox) copies the student's files afresh, starts the student's
code in one sandbox per rank the lab needs (:mod:`commlab.labs.sandbox`, :mod:`commlab.labs.sandboxed`) and
runs the lab's checks (:mod:`commlab.labs.registry`, the notebook's own) here, on
:class:`commlab.labs.remote.RemoteFunction` objects: the student's functions are called on the inputs the
checks draw now, and their values are judged against the reference in the grader's process. A verdict is
never written by the student's process. Beside the public checks: cases drawn from a seed (a check
module's ``drawn_<task>``, fresh each run unless ``--seed`` fixes it) and the instructor's hidden checks
(``--checks DIR``, :func:`hidden_checks`). A check module's ``GRADING`` dict gives a check's settings for
grading that do not change its verdict (fewer timed repeats: the timings are the notebook's plot).

A student's crash, garbage, kill or hang fails that student's lab with a reason; a student's time limit
(``student_timeout_s``) bounds all of their labs; ``jobs`` students are graded at once. Everything a
student's code started ends with the lab (the sandbox's PID namespace, or its process group).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from commlab.errors import CommlabError
from commlab.labs import registry

#: The longest one lab's checks may take, seconds (the ring's checks take about 15 s on 2 cores).
DEFAULT_TIMEOUT_S = 600.0
#: The longest all of one student's labs may take together, seconds.
DEFAULT_STUDENT_TIMEOUT_S = 1800.0
#: The most bytes of a student's folder copied into their sandbox (their own files only).
MAX_COPY_BYTES = 32 * 2**20
#: What a grader process may take beyond its lab's limit to say what happened, seconds.
GRACE_S = 20.0

STATUSES = ("pass", "fail", "skipped", "error")


@dataclass(frozen=True)
class Graded:
    """One task (or a drawn or hidden case) of one lab for one learner; the keys of ``labs check --json``."""

    learner: str | None
    lab: str
    task: str
    passed: bool
    problem: str
    seconds: float
    module: str
    status: str = "pass"
    """pass, fail, skipped (not handed in) or error (the grader failed, not the student)."""
    kind: str = "public"
    """public (the notebook's check), drawn (cases drawn from the seed) or hidden (the instructor's)."""
    points: float = 0.0
    points_possible: float = 0.0


@dataclass(frozen=True)
class Options:
    """How a class is graded (``commlab labs check`` flags)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    student_timeout_s: float = DEFAULT_STUDENT_TIMEOUT_S
    jobs: int = 1
    seed: int | None = None
    checks_dir: str | None = None
    logs_dir: str | None = None
    limits: Any = None               # commlab.labs.sandbox.Limits (default limits when None)

    def __post_init__(self):
        for name in ("timeout_s", "student_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise CommlabError(f"{name} must be a number of seconds > 0, got {value!r}")
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise CommlabError(f"jobs must be a whole number >= 1, got {self.jobs!r}")
        if self.checks_dir is not None and not Path(self.checks_dir).is_dir():
            raise CommlabError(f"checks_dir {self.checks_dir!r} is not a folder")


def _rows(learner, entry: registry.Lab, module: Path, problem: str, status: str, seconds: float = 0.0):
    return [Graded(learner, entry.name, t.name, False, problem, seconds, str(module), status, "public", 0.0,
                   float(t.points)) for t in entry.tasks]


# --- in the grader's process of one (student, lab) ----------------------------------------------------------

def _copy_student(folder: Path, dest: Path) -> None:
    """The student's own files (regular files, no links, at most MAX_COPY_BYTES) into a fresh ``dest``."""
    dest.mkdir(parents=True)
    total = 0
    for path in sorted(Path(folder).rglob("*")):
        rel = path.relative_to(folder)
        if any(p.startswith(".") for p in rel.parts) or path.is_symlink() or not path.is_file():
            continue
        total += path.stat().st_size
        if total > MAX_COPY_BYTES:
            break
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / rel)


def hidden_checks(checks_dir: str | None, lab: str) -> list[tuple[str, Callable, float]]:
    """The instructor's hidden checks of ``lab``: every function ``check_*`` of ``<checks_dir>/<lab>.py``.

    A hidden check names the student's functions it needs as its parameters (``def check_big_n(ring_time_s,
    tree_time_s)``) and returns "" or None when right, else the problem in words (or an Outcome). Its points:
    ``POINTS = {"check_big_n": 2}`` in the same file (1 by default).
    """
    if checks_dir is None:
        return []
    path = Path(checks_dir) / f"{lab}.py"
    if not path.is_file():
        return []
    spec = importlib.util.spec_from_file_location(f"commlab_hidden_{lab}", path)
    if spec is None or spec.loader is None:
        raise CommlabError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    points = getattr(module, "POINTS", {})
    return [(name, fn, float(points.get(name, 1.0))) for name, fn in sorted(vars(module).items())
            if name.startswith("check_") and callable(fn)]


def _problem_of(found) -> str:
    if found is None:
        return ""
    if isinstance(found, str):
        return found
    return str(getattr(found, "problem", found))


def _run_one(label: str, check: Callable, *args, **kwargs) -> tuple[str, float, bool]:
    """(problem, seconds, timed_out) of ``check(*args, **kwargs)``."""
    from commlab.labs.remote import GradingTimeout

    start = time.perf_counter()
    try:
        problem = _problem_of(check(*args, **kwargs))
        timed_out = False
    except GradingTimeout:
        problem, timed_out = "", True
    except CommlabError as exc:
        problem, timed_out = str(exc), False
    except Exception as exc:  # noqa: BLE001 - a check is meant to catch the student's errors; say so if one escaped
        problem, timed_out = f"the check of {label} stopped: {type(exc).__name__}: {exc}", False
    return problem, time.perf_counter() - start, timed_out


def _last_line(path: Path) -> str:
    """The last line of a (possibly large) log file."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            lines = f.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


class _LabRun:
    """One (student, lab) graded in this process; its rows are written to ``out`` as they come."""

    def __init__(self, spec: dict):
        from commlab.labs.remote import Channel

        self.spec = spec
        self.entry = registry.lab(spec["lab"])
        self.learner = spec["learner"]
        self.module = spec["module"]
        self.timeout_s = round(float(spec["timeout_s"]), 1)
        self.deadline = time.time() + self.timeout_s
        self.rows: list[Graded] = []
        self.lock = threading.Lock()
        self.work = Path(tempfile.mkdtemp(prefix="lab-", dir=spec["work"]))
        self.channel = Channel(str(self.work / "chan"), self.deadline)
        self.boxes: list = []
        self.status = "fail"                      # of the rows fail_rest writes: "error" when the grader failed

    def add(self, row: Graded) -> None:
        with self.lock:
            self.rows.append(row)
            self.write()

    def write(self) -> None:
        tmp = Path(self.spec["out"] + ".tmp")
        tmp.write_text(json.dumps([asdict(r) for r in self.rows]))
        os.replace(tmp, self.spec["out"])

    def start_boxes(self) -> None:
        from commlab.labs import sandbox

        limits = sandbox.Limits(**self.spec["limits"]) if self.spec.get("limits") else sandbox.Limits()
        world = self.entry.max_ranks
        channels = Path(self.channel.folder)
        for rank in range(max(1, world)):
            (channels / str(rank)).mkdir(parents=True)
        home = self.work / "home"
        _copy_student(Path(self.module).parent, home)
        args = [str(channels), self.entry.name, str(home / Path(self.module).name), str(world)]
        with open(self.spec["log"], "ab") as log:
            self.boxes.append(sandbox.start("commlab.labs.sandboxed", args, package=Path(self.spec["package"]),
                                            home=home, channel=channels, log=log, limits=limits,
                                            name=self.spec.get("cgroup_prefix", "commlab-sandbox-")))

    def wait_ready(self) -> str:
        """'' once every sandbox listens (the student's module imported), else why not: a process that ended."""
        while time.time() < self.deadline:
            if all(Path(self.channel.path(r)).is_socket() for r in range(max(1, self.entry.max_ranks))):
                return ""
            for box in self.boxes:
                status = box.process.poll()
                said = _last_line(Path(self.spec["log"])) if status is not None else ""
                if said.startswith("bwrap:"):
                    self.status = "error"             # the sandbox itself could not start: the grader's fault
                    return f"the sandbox could not start (not the student's fault): {said}"
                if status is not None:
                    how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
                    return (f"{Path(self.module).name}: the student's process {how} while the module was imported "
                            "(before it could answer a single call)")
            time.sleep(0.05)
        return self.timed_out_problem()

    def kill(self) -> None:
        for box in self.boxes:
            box.kill()

    def timed_out_problem(self) -> str:
        return (f"the checks of {self.entry.name} did not finish within {self.timeout_s:g} s (a hang at import, or "
                "in a function)")

    def run(self) -> None:
        from commlab.labs import remote

        self.start_boxes()
        start = time.perf_counter()
        ended = self.wait_ready()
        if ended:
            return self.fail_rest(ended, time.perf_counter() - start)
        try:
            hello = remote.hello(self.channel)
        except remote.GradingTimeout:
            return self.fail_rest(self.timed_out_problem(), time.perf_counter() - start)
        except Exception as exc:  # noqa: BLE001 - whatever the student's process did instead of answering
            return self.fail_rest(f"the student's process did not answer the grader ({type(exc).__name__}: {exc})",
                                  time.perf_counter() - start)
        if not hello.get("loaded"):
            return self.fail_rest(str(hello.get("error", "the module does not import")), time.perf_counter() - start)
        functions = hello.get("functions") or {}
        checks = importlib.import_module(f"commlab.labs.checks.{self.entry.name}")
        seed = int(self.spec["seed"])
        for task in self.entry.tasks:
            channel = dataclasses.replace(self.channel, collectives=task.collectives)
            fns = remote.remote_functions(channel, task.functions, functions)
            check = getattr(checks, task.check)
            settings = getattr(checks, "GRADING", {}).get(task.name, {})   # e.g. fewer timed repeats
            problem, seconds, timed_out = _run_one(task.name, check, *fns, **settings)
            if timed_out:
                return self.fail_rest(self.timed_out_problem(), seconds)
            rows = [(task.name, "public", problem, seconds)]
            drawn = getattr(checks, f"drawn_{task.name}", None)
            if drawn is not None:
                problem, seconds, timed_out = _run_one(task.name, drawn, *fns, seed=seed)
                if timed_out:
                    return self.fail_rest(self.timed_out_problem(), seconds)
                rows.append((f"{task.name} (drawn)", "drawn", problem, seconds))
            ok = all(not p for _, _, p, _ in rows)
            for i, (name, kind, problem, seconds) in enumerate(rows):
                possible = float(task.points) if i == 0 else 0.0
                self.add(Graded(self.learner, self.entry.name, name, not problem, problem, seconds, self.module,
                                "pass" if not problem else "fail", kind, possible if ok else 0.0, possible))
        for name, fn, points in hidden_checks(self.spec.get("checks"), self.entry.name):
            try:
                wanted = list(inspect.signature(fn).parameters)
            except (TypeError, ValueError):
                wanted = []
            fns = remote.remote_functions(self.channel, wanted, functions)
            problem, seconds, timed_out = _run_one(name, fn, *fns)
            if timed_out:
                return self.fail_rest(self.timed_out_problem(), seconds)
            self.add(Graded(self.learner, self.entry.name, name, not problem, problem, seconds, self.module,
                            "pass" if not problem else "fail", "hidden", points if not problem else 0.0, points))
        return None

    def fail_rest(self, problem: str, seconds: float) -> None:
        done = {r.task for r in self.rows}
        for task in self.entry.tasks:
            if task.name not in done:
                self.add(Graded(self.learner, self.entry.name, task.name, False, problem, seconds, self.module,
                                self.status, "public", 0.0, float(task.points)))


def _child(spec_path: str) -> int:
    """In the grader's process of one (student, lab): grade it, write the rows to ``spec["out"]``."""
    spec = json.loads(Path(spec_path).read_text())
    run = _LabRun(spec)
    run.write()
    worker = threading.Thread(target=run.run, daemon=True)
    try:
        worker.start()
        worker.join(max(0.0, run.deadline - time.time()) + 2.0)
        if worker.is_alive():
            run.kill()
            worker.join(5.0)
            with run.lock:
                run.fail_rest(run.timed_out_problem(), run.timeout_s)
    finally:
        run.kill()
        from commlab.labs.sandbox import remove_tree

        remove_tree(run.work)
    sys.stdout.flush()
    os._exit(0)   # a thread stuck in a check (its sandbox is gone) must not keep this process alive


# --- the grader of a class ------------------------------------------------------------------------------------

def _ends_with_parent() -> None:
    """In a grader process, before exec: a session of its own, and killed when the grading run is (Ctrl-C, a
    kill): its sandboxes end with it (bubblewrap's --die-with-parent)."""
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)          # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


def _run_child(spec: dict, wait_s: float, work: Path) -> tuple[list[Graded] | None, str, bool]:
    """(rows or None, the grader process's last words, timed out) for one (student, lab)."""
    spec_path = work / f"spec-{secrets.token_hex(6)}.json"
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS",)}
    errors = work / (spec_path.stem + ".err")
    with open(errors, "wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "commlab.labs.grade", "--child", str(spec_path)],
                                   stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env, cwd=work,
                                   preexec_fn=_ends_with_parent)
        timed_out = False
        try:
            process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            process.wait()
    tail = errors.read_text(errors="replace").strip().splitlines()
    try:
        rows = [Graded(**r) for r in json.loads(Path(spec["out"]).read_text())]
    except (OSError, ValueError, TypeError):
        rows = None
    return rows, (tail[-1] if tail else f"exit status {process.returncode}"), timed_out


def _grade_student(learner, folder: Path, labs: list[str], options: Options, package: Path, work: Path,
                   seed: int, on_result, prefix: str = "commlab-sandbox-") -> list[Graded]:
    found: list[Graded] = []
    student_deadline = time.time() + options.student_timeout_s
    for name in labs:
        entry = registry.lab(name)
        module = (Path(folder) / f"{name}.py").resolve()
        if not module.is_file():
            rows = _rows(learner, entry, module, f"not handed in: there is no {name}.py in {folder}", "skipped")
        elif entry.not_graded:
            rows = _rows(learner, entry, module, f"not graded by labs check: {entry.not_graded}", "skipped")
        elif time.time() >= student_deadline:
            rows = _rows(learner, entry, module, f"not graded: this student's time (--student-timeout "
                                                 f"{options.student_timeout_s:g} s) ran out before {name}", "fail")
        else:
            timeout_s = min(options.timeout_s, max(1.0, student_deadline - time.time()))
            logs = Path(options.logs_dir or work / "logs") / (learner or "mine")
            logs.mkdir(parents=True, exist_ok=True)
            spec = {"lab": name, "learner": learner, "module": str(module), "timeout_s": timeout_s,
                    "work": str(work), "package": str(package), "seed": seed, "checks": options.checks_dir,
                    "log": str(logs / f"{name}.log"), "out": str(work / f"out-{secrets.token_hex(6)}.json"),
                    "limits": asdict(options.limits) if options.limits is not None else None,
                    "cgroup_prefix": prefix}
            done, last, timed_out = _run_child(spec, timeout_s + GRACE_S, work)
            rows = done or []
            missing = [t for t in entry.tasks if t.name not in {r.task for r in rows}]
            if missing:
                if timed_out:
                    why, status = (f"the checks of {name} did not finish within {timeout_s:g} s (a hang at import, "
                                   "or in a function)"), "fail"
                else:
                    why, status = f"the grader failed on {name} (not the student's fault): {last}", "error"
                rows += [Graded(learner, name, t.name, False, why, 0.0, str(module), status, "public", 0.0,
                                float(t.points)) for t in missing]
        for row in rows:
            found.append(row)
            if on_result is not None:
                on_result(row)
    return found


def _remove_stale_work() -> None:
    """The scratch folders of grading runs that were killed (``commlab-class-<pid>-...``, that pid gone)."""
    from commlab.labs import sandbox

    for path in Path(tempfile.gettempdir()).glob("commlab-class-*-*"):
        try:
            pid = int(path.name.split("-")[2])
        except (ValueError, IndexError):
            continue
        if path.is_dir() and not Path(f"/proc/{pid}").exists() and sys.platform.startswith("linux"):
            sandbox.remove_tree(path)


def grade_class(students: list[tuple[str | None, Path]], labs: list[str], options: Options | None = None,
                on_result=None, on_student=None) -> tuple[list[Graded], int]:
    """Every lab of every student, ``options.jobs`` students at once: (the rows, in the students' order, and
    the seed the drawn cases used). ``on_result(Graded)`` as rows come, ``on_student(name)`` as students end."""
    from concurrent.futures import ThreadPoolExecutor

    from commlab.labs import sandbox

    options = options or Options()
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
    lock = threading.Lock()

    def said(row):
        if on_result is not None:
            with lock:
                on_result(row)

    sandbox.remove_stale_cgroups()
    _remove_stale_work()
    work = Path(tempfile.mkdtemp(prefix=f"commlab-class-{os.getpid()}-"))
    os.chmod(work, 0o700)
    prefix = f"commlab-{secrets.token_hex(4)}-"
    try:
        package = sandbox.package_copy(work / "package", {n: registry.lab(n).answers for n in labs}).parent
        with ThreadPoolExecutor(max_workers=options.jobs) as pool:
            futures = [pool.submit(_grade_student, learner, folder, labs, options, package, work, seed, said,
                                   prefix) for learner, folder in students]
            results = []
            for (learner, _), future in zip(students, futures):
                results.append(future.result())
                if on_student is not None:
                    with lock:
                        on_student(learner)
    finally:
        sandbox.remove_cgroups(prefix)
        sandbox.remove_tree(work)
    return [row for rows in results for row in rows], seed


def grade(labs: list[str], folder: Path, learner: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
          on_result=None, options: Options | None = None) -> list[Graded]:
    """Every task of ``labs`` for the learner whose modules are in ``folder``; ``on_result(Graded)`` as they come."""
    options = dataclasses.replace(options or Options(), timeout_s=timeout_s)
    return grade_class([(learner, Path(folder))], labs, options, on_result)[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m commlab.labs.grade",
                                     description="(internal) the grader's process of one student's lab")
    parser.add_argument("--child", required=True, metavar="SPEC")
    args = parser.parse_args(argv)
    return _child(args.child)


if __name__ == "__main__":
    sys.exit(main())
