"""Grading: every task of some labs, on one learner's modules or a whole class's, each student in a sandbox.

``commlab labs check`` (:mod:`commlab.cli.labs`) calls :func:`grade_class` (or :func:`grade` for one
learner). Each (student, lab) is graded by a grader process of its own (:mod:`commlab.labs.grade_lab`,
trusted: the grader's code, outside any sandbox), forked from one fork server per grading run that has
imported torch and the checks once (:func:`_fork_server`; ``python -m commlab.labs.grade --child SPEC`` where
there is none), which starts the student's code in a sandbox and judges the values it returns against the
reference. A verdict is never written by the student's process. Beside the public checks: cases drawn from a
seed (a check module's ``drawn_<task>``, fresh each run unless ``--seed`` fixes it) and the instructor's
hidden checks (``--checks DIR``, :func:`hidden_checks`).

A student's crash, garbage, kill or hang fails that student's lab with a reason; a student's time limit
(``student_timeout_s``) bounds all of their labs; ``jobs`` students are graded at once. Everything a
student's code started ends with the lab (the sandbox's PID namespace, or its process group).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

from commlab.labs import registry
from commlab.labs.graded import DEFAULT_STUDENT_TIMEOUT_S, DEFAULT_TIMEOUT_S, STATUSES, Graded, Options
from commlab.labs.grade_lab import MAX_COPY_BYTES, hidden_checks

__all__ = ["DEFAULT_STUDENT_TIMEOUT_S", "DEFAULT_TIMEOUT_S", "GRACE_S", "MAX_COPY_BYTES", "STATUSES", "Graded",
           "Options", "grade", "grade_class", "hidden_checks", "main"]

#: What a grader process may take beyond its lab's limit to say what happened, seconds.
GRACE_S = 20.0


def _rows(learner, entry: registry.Lab, module: Path, problem: str, status: str, seconds: float = 0.0):
    return [Graded(learner, entry.name, t.name, False, problem, seconds, str(module), status, "public", 0.0,
                   float(t.points)) for t in entry.tasks]


# --- the grader of a class ------------------------------------------------------------------------------------

#: What a grader process imports before any lab is graded, in the fork server (those of torch only where a
#: lab of the run starts ranks: importing torch takes about 2 s of CPU, once per run instead of once per lab).
SERVER_PRELOAD = ("numpy", "commlab.labs.grade_lab", "commlab.labs.remote", "commlab.labs.wire",
                  "commlab.labs.sandbox", "commlab.labs.checking", "commlab.labs.student_sandbox")
TORCH_PRELOAD = ("torch", "torch.distributed", "torch.nn", "commlab.launch", "commlab.p2p", "commlab.schedules")


def _slow_imports(labs: list[str]) -> list[str]:
    """The slow first imports the labs name (:attr:`commlab.labs.registry.Lab.imports`), each once."""
    return sorted({m for name in labs for m in registry.lab(name).imports})


def _starts_ranks(labs: list[str]) -> bool:
    return any(registry.lab(name).max_ranks for name in labs)


def _fork_server(labs: list[str]):
    """The fork server of this grading run (multiprocessing's ``forkserver``: a process started once that has
    imported :data:`SERVER_PRELOAD`, torch and the labs' checks, and forks each grader process from that
    state), or None where the platform has none. Its grader processes lose nothing of the isolation of a
    fresh interpreter: each makes a session of its own, dies with the server (which ends with this process),
    drops the instructor's solutions switch, and starts its student's sandbox the same way.
    ``COMMLAB_GRADER_START=spawn`` starts every grader process as a fresh interpreter instead."""
    if "forkserver" not in multiprocessing.get_all_start_methods() or os.environ.get("COMMLAB_GRADER_START") == "spawn":
        return None
    context = multiprocessing.get_context("forkserver")
    preload = list(SERVER_PRELOAD) + [f"commlab.labs.checks.{name}" for name in labs] + _slow_imports(labs)
    if _starts_ranks(labs):
        preload = list(TORCH_PRELOAD) + preload
    context.set_forkserver_preload(preload)
    return context


def _wait_forked(context, spec_path: Path, errors: Path, work: Path, wait_s: float) -> tuple[int | None, bool]:
    """(exit status, timed out) of a grader process forked by ``context``'s server; its session killed after."""
    from commlab.labs import grade_lab

    process = context.Process(target=grade_lab.forked_child, args=(str(spec_path), str(errors), str(work)),
                              daemon=False)
    process.start()
    process.join(wait_s)
    timed_out = process.exitcode is None
    try:
        os.killpg(process.pid, signal.SIGKILL)   # its session (the group exists once the process made it)
    except (ProcessLookupError, PermissionError):
        pass
    if process.exitcode is None:
        process.kill()
    process.join()
    return process.exitcode, timed_out


def _wait_spawned(spec_path: Path, errors: Path, work: Path, wait_s: float) -> tuple[int | None, bool]:
    """(exit status, timed out) of ``python -m commlab.labs.grade --child SPEC`` (no fork server here)."""
    from commlab.labs.forked import ends_with_parent

    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS",)}
    with open(errors, "wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "commlab.labs.grade", "--child", str(spec_path)],
                                   stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env, cwd=work,
                                   preexec_fn=ends_with_parent)
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
    return process.returncode, timed_out


def _run_child(spec: dict, wait_s: float, work: Path, context=None) -> tuple[list[Graded] | None, str, bool]:
    """(rows or None, the grader process's last words, timed out) for one (student, lab)."""
    spec_path = work / f"spec-{secrets.token_hex(6)}.json"
    spec_path.write_text(json.dumps(spec))
    errors = work / (spec_path.stem + ".err")
    if context is not None:
        status, timed_out = _wait_forked(context, spec_path, errors, work, wait_s)
    else:
        status, timed_out = _wait_spawned(spec_path, errors, work, wait_s)
    try:
        tail = errors.read_text(errors="replace").strip().splitlines()
    except OSError:
        tail = []
    try:
        rows = [Graded(**r) for r in json.loads(Path(spec["out"]).read_text())]
    except (OSError, ValueError, TypeError):
        rows = None
    return rows, (tail[-1] if tail else f"exit status {status}"), timed_out


def _grade_student(learner, folder: Path, labs: list[str], options: Options, package: Path, work: Path,
                   seed: int, on_result, prefix: str = "commlab-sandbox-", context=None) -> list[Graded]:
    shared: list = []                            # the student's sandbox, while it can take a further lab
    try:
        return _grade_labs(learner, folder, labs, options, package, work, seed, on_result, prefix, context, shared)
    finally:
        for box in shared:
            box.stop()


def _shared_sandbox(shared: list, labs: list[str], options: Options, package: Path, work: Path, prefix: str,
                    context) -> dict | None:
    """The spec of the student's sandbox for their next lab (:mod:`commlab.labs.student_sandbox`): the one they
    have while it is usable, else a fresh one; None without bubblewrap or a fork server (each lab then starts a
    sandbox of its own)."""
    from commlab.labs import sandbox, student_sandbox

    if context is None or sandbox.bwrap_path() is None:
        return None
    if shared and shared[0].usable():
        return shared[0].spec()
    for box in shared:
        box.stop()
    shared.clear()
    preload = ",".join(["torch"] + _slow_imports(labs)) if _starts_ranks(labs) else "none"
    made = student_sandbox.start(context, work, package, options.limits, prefix, preload)
    if made is None:
        return None
    shared.append(made)
    return made.spec()


def _grade_labs(learner, folder: Path, labs: list[str], options: Options, package: Path, work: Path, seed: int,
                on_result, prefix: str, context, shared: list) -> list[Graded]:
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
                    "cgroup_prefix": prefix, "cache": str(work / "cache"),
                    "zygote": _shared_sandbox(shared, labs, options, package, work, prefix, context)}
            done, last, timed_out = _run_child(spec, timeout_s + GRACE_S, work, context)
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
        (work / "cache").mkdir()                 # references the labs compute once per run (reference_cache)
        context = _fork_server(labs)
        with ThreadPoolExecutor(max_workers=options.jobs) as pool:
            futures = [pool.submit(_grade_student, learner, folder, labs, options, package, work, seed, said,
                                   prefix, context) for learner, folder in students]
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
    from commlab.labs import grade_lab

    return grade_lab.child(args.child)


if __name__ == "__main__":
    sys.exit(main())
