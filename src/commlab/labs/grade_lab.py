"""One (student, lab) graded in a grader process of its own (trusted: the grader's code, outside any sandbox).

:func:`child` copies the student's files afresh, starts the student's code in one sandbox
(:mod:`commlab.labs.sandbox`, :mod:`commlab.labs.sandboxed`) and runs the lab's checks (the notebook's own) here,
on :class:`commlab.labs.remote.RemoteFunction` objects: the student's functions are called on the inputs the
checks draw now, and their values are judged against the reference in this process. Beside the public checks:
the cases drawn from the seed (a check module's ``drawn_<task>``) and the instructor's hidden checks
(:func:`hidden_checks`). A check module's ``GRADING`` dict gives a check's settings for grading that do not
change its verdict (fewer timed repeats: the timings are the notebook's plot). The rows are written to the
spec's ``out`` file as they come, so that the class's grader (:mod:`commlab.labs.grade`) has them even when
this process is killed at the lab's time limit.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from commlab.errors import CommlabError
from commlab.labs import registry
from commlab.labs.forked import ends_with_parent, let_the_server_end
from commlab.labs.graded import Graded

#: The most bytes of a student's folder copied into their sandbox (their own files only).
MAX_COPY_BYTES = 32 * 2**20
#: What a grader process may take beyond its lab's limit to say what happened, seconds.

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


def _run_together(together: Callable | None, by_task: dict, **kwargs) -> tuple[dict, float, bool]:
    """(task -> outcome, seconds, timed_out) of a check module's ``check_together`` / ``drawn_together``: the
    checks of several tasks run at once, with the same verdicts as each task's own (one launch of ranks for all,
    say). An empty dict where the module has none, or where it could not decide (a crash it leaves to each
    task's own check to tell)."""
    from commlab.labs.remote import GradingTimeout

    if together is None:
        return {}, 0.0, False
    start = time.perf_counter()
    try:
        found = together(by_task, **kwargs)
    except GradingTimeout:
        return {}, time.perf_counter() - start, True
    except Exception:  # noqa: BLE001 - each task's own check runs instead, and tells what went wrong
        found = None
    return dict(found or {}), time.perf_counter() - start, False


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
        shared = spec.get("zygote")               # the student's sandbox, shared by their labs (student_sandbox)
        self.work = Path(tempfile.mkdtemp(prefix="lab-", dir=shared["root"] if shared else spec["work"]))
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
        shared = self.spec.get("zygote")
        if shared:                                # a process forked by the student's sandbox, in its own folder
            from commlab.labs.student_sandbox import LabProcess

            def inside(path: Path) -> str:
                return f"{sandbox.CHANNEL}/{path.relative_to(shared['root'])}"

            request = {"channels": inside(channels), "lab": self.entry.name, "world": world, "home": inside(home),
                       "module": inside(home / Path(self.module).name)}
            try:
                self.boxes.append(LabProcess(shared["ctl"], request, self.spec["log"]))
                return
            except (OSError, ValueError) as exc:  # the shared sandbox is gone: this lab gets one of its own
                with open(self.spec["log"], "a") as said:
                    print(f"commlab: the student's sandbox did not take this lab ({exc}); a fresh one runs it",
                          file=said)
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
        by_task = {task.name: remote.remote_functions(dataclasses.replace(self.channel, collectives=task.collectives),
                                                      task.functions, functions) for task in self.entry.tasks}
        public, public_s, timed_out = _run_together(getattr(checks, "check_together", None), by_task)
        if timed_out:
            return self.fail_rest(self.timed_out_problem(), public_s)
        drawn_all, drawn_s, timed_out = _run_together(getattr(checks, "drawn_together", None), by_task, seed=seed)
        if timed_out:
            return self.fail_rest(self.timed_out_problem(), drawn_s)
        for task in self.entry.tasks:
            fns = by_task[task.name]
            check = getattr(checks, task.check)
            settings = getattr(checks, "GRADING", {}).get(task.name, {})   # e.g. fewer timed repeats
            if task.name in public:
                problem, seconds, timed_out = _problem_of(public[task.name]), public_s / len(public), False
            else:
                problem, seconds, timed_out = _run_one(task.name, check, *fns, **settings)
            if timed_out:
                return self.fail_rest(self.timed_out_problem(), seconds)
            rows = [(task.name, "public", problem, seconds)]
            drawn = getattr(checks, f"drawn_{task.name}", None)
            if task.name in drawn_all:
                rows.append((f"{task.name} (drawn)", "drawn", _problem_of(drawn_all[task.name]),
                             drawn_s / len(drawn_all)))
            elif drawn is not None:
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


def child(spec_path: str) -> int:
    """In the grader's process of one (student, lab): grade it, write the rows to ``spec["out"]``."""
    spec = json.loads(Path(spec_path).read_text())
    if spec.get("cache"):                     # references computed once per grading run (never the student's)
        from commlab.labs.reference_cache import ENV_VAR

        os.environ[ENV_VAR] = spec["cache"]
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


def forked_child(spec_path: str, errors_path: str, cwd: str) -> None:
    """A grader process forked from the grading run's fork server (torch and the checks already imported):
    a session of its own, killed with its parent, its output to ``errors_path``, none of the solutions switch
    of the instructor's environment; then :func:`child`."""
    ends_with_parent()
    let_the_server_end()
    fd = os.open(errors_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.pop("COMMLAB_LAB_SOLUTIONS", None)
    os.chdir(cwd)
    child(spec_path)
