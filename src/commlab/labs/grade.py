"""Grading: every task of some labs, on one learner's modules or a whole class's, each lab in a process of its own.

``commlab labs check`` (:mod:`commlab.cli.labs`) calls :func:`grade`. Each (learner, lab) runs in a fresh
``python -m commlab.labs.grade`` process with a time limit: a learner's module that hangs, exits or crashes
at import fails its own lab and nothing else, and one learner's code never sees another's. The child runs
the checks of :mod:`commlab.labs.registry` on the functions of ``<folder>/<lab>.py``, always the learner's
code (``COMMLAB_LAB_SOLUTIONS`` is removed from its environment), and writes its results as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from commlab.labs import registry

#: The longest one lab's checks may take, seconds (the ring's checks take about 15 s on 2 cores).
DEFAULT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Graded:
    """One task of one lab for one learner; the keys of ``commlab labs check --json``."""

    learner: str | None
    lab: str
    task: str
    passed: bool
    problem: str
    seconds: float
    module: str


def _fail_all(learner, entry: registry.Lab, module: Path, problem: str, seconds: float = 0.0) -> list[Graded]:
    return [Graded(learner, entry.name, t.name, False, problem, seconds, str(module)) for t in entry.tasks]


def grade_lab(entry: registry.Lab, folder: Path, learner: str | None = None,
              timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Graded]:
    """Every task of ``entry`` on ``<folder>/<lab>.py``, in a child process limited to ``timeout_s``."""
    module = (Path(folder) / f"{entry.name}.py").resolve()  # the checks run in a scratch folder: no relative path
    if not module.is_file():
        return _fail_all(learner, entry, module, f"not handed in: there is no {entry.name}.py in {folder}")
    env = {k: v for k, v in os.environ.items() if k != "COMMLAB_LAB_SOLUTIONS"}
    with tempfile.TemporaryDirectory(prefix="commlab-grade-") as scratch:
        out = Path(scratch) / "results.json"
        command = [sys.executable, "-m", "commlab.labs.grade", entry.name, str(module), str(out)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env,
                                  cwd=scratch, start_new_session=True)
        except subprocess.TimeoutExpired:
            return _fail_all(learner, entry, module, f"the checks of {entry.name} did not finish within "
                                                     f"{timeout_s:g} s (a hang at import, or in a function)", timeout_s)
        if not out.exists():
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return _fail_all(learner, entry, module, f"the checks of {entry.name} stopped (exit status "
                                                     f"{done.returncode}): {tail}")
        results = json.loads(out.read_text())
    return [Graded(learner, entry.name, r["task"], not r["problem"], r["problem"], r["seconds"], str(module))
            for r in results]


def grade(labs: list[str], folder: Path, learner: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
          on_result=None) -> list[Graded]:
    """Every task of ``labs`` for the learner whose modules are in ``folder``; ``on_result(Graded)`` as they come."""
    found = []
    for name in labs:
        for result in grade_lab(registry.lab(name), folder, learner, timeout_s):
            found.append(result)
            if on_result is not None:
                on_result(result)
    return found


def _child(lab: str, module: str, out: str) -> int:
    """In the child: run the lab's checks on ``module``, write [{"task", "problem", "seconds"}] to ``out``."""
    from commlab.labs.code import Code

    entry = registry.lab(lab)
    code = Code(lab, Path(module))
    results = [registry.run_task(entry, task, code) for task in entry.tasks]
    Path(out).write_text(json.dumps([{k: v for k, v in asdict(r).items() if k in ("task", "problem", "seconds")}
                                     for r in results]))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m commlab.labs.grade",
                                     description="(internal) the checks of one lab on one learner's module")
    parser.add_argument("lab")
    parser.add_argument("module")
    parser.add_argument("out")
    args = parser.parse_args(argv)
    return _child(args.lab, args.module, args.out)


if __name__ == "__main__":
    sys.exit(main())
