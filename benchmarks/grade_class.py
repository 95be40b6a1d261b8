"""Grade a generated class with ``commlab labs check --class`` and print the seconds per student.

The class: ``--students`` students (30 by default), in turn correct (the reference's text, as a student would
hand it in), wrong (one deliberate mistake per lab, tests/dist/test_lab_learner_code.py's), hanging at import
and crashing at import; ``--honest`` makes every student correct (the six-honest-students case of the goal).
It runs the real command in a fresh process and prints the wall time, the seconds per student, the ratio to
the goal and the machine's load average (the machine is shared: a busy one is slower). Where the host lets it
make a cpuacct cgroup (cgroup v1), it also prints the CPU time of the whole run (every grader process and
sandbox), which other work on the machine does not change: on an idle machine the wall time cannot be less
than the CPU time divided by the cores.

Goal (issue 26): a class of six honest students, every lab, in under half of 3 min 50 s (115 s) on 2 cores.

    python benchmarks/grade_class.py --students 6 --honest --jobs 2
    python benchmarks/grade_class.py --students 30 --labs ring_vs_tree topology --timeout 20
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 230.0 / 2          # half of the 3 min 50 s the sequential grader took for six students on 2 cores
KINDS = ("correct", "wrong", "hanging", "crashing")


def _helpers():
    spec = importlib.util.spec_from_file_location("grading_helpers", REPO / "tests" / "dist" / "grading_helpers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_class(root: Path, n_students: int, labs: list[str], honest: bool) -> dict[str, str]:
    helpers = _helpers()
    wrong = helpers.wrong_functions()
    kinds = {}
    for i in range(n_students):
        kind = "correct" if honest else KINDS[i % len(KINDS)]
        name = f"student{i:02d}-{kind}"
        folder = root / name
        folder.mkdir(parents=True)
        for lab in labs:
            text = helpers.honest_source(lab)
            if kind == "wrong" and lab in wrong:
                text += "\n\n" + wrong[lab][0]
            elif kind == "hanging":
                text = "while True:\n    pass\n"
            elif kind == "crashing":
                text = "import os\nos.abort()\n"
            (folder / f"{lab}.py").write_text(text)
        kinds[name] = kind
    return kinds


def _cpuacct_group():
    """A cpuacct cgroup (v1) for the grading run, or None where the host has none for us."""
    try:
        where = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                     if "cpuacct" in line.split(":", 2)[1].split(","))
        path = Path("/sys/fs/cgroup/cpuacct") / where.lstrip("/") / f"commlab-bench-{os.getpid()}"
        path.mkdir()
        return path
    except (OSError, StopIteration, IndexError):
        return None


def main(argv=None) -> int:
    from commlab.labs import registry

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--labs", nargs="*", default=None, help="default: every lab")
    parser.add_argument("--honest", action="store_true", help="every student correct")
    parser.add_argument("--jobs", type=int, default=None, help="default: the machine's cores")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="--timeout of labs check: how long a hanging lab takes (default 120 s)")
    args = parser.parse_args(argv)
    labs = args.labs or list(registry.names())
    with tempfile.TemporaryDirectory(prefix="commlab-bench-class-") as scratch:
        root = Path(scratch) / "class"
        kinds = make_class(root, args.students, labs, args.honest)
        command = [sys.executable, "-m", "commlab", "labs", "check", *labs, "--class", str(root), "--json",
                   "--timeout", str(args.timeout), "--seed", "1"]
        if args.jobs:
            command += ["--jobs", str(args.jobs)]
        env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
        load_before = os.getloadavg()[0]
        group = _cpuacct_group()

        def join() -> None:
            if group is not None:
                (group / "cgroup.procs").write_text(str(os.getpid()))

        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=scratch, preexec_fn=join)
        wall_s = time.perf_counter() - start
        cpu_s = int((group / "cpuacct.usage").read_text()) / 1e9 if group is not None else None
        if group is not None:
            try:
                group.rmdir()
            except OSError:
                pass
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        found = json.loads(done.stdout)
    rows = found["results"]
    right = dict.fromkeys(KINDS, 0)
    surprises = []
    not_graded = {lab for lab in labs if registry.lab(lab).not_graded}    # reported as skipped, with the reason
    for name, kind in kinds.items():
        mine = [r for r in rows if r["learner"] == name and r["lab"] not in not_graded]
        expected = all(r["passed"] for r in mine) if kind == "correct" else not all(r["passed"] for r in mine)
        right[kind] += expected
        if kind == "correct":
            surprises += [f"{name} {r['lab']}.{r['task']}: {r['problem'][:300]}" for r in mine if not r["passed"]]
    n = args.students
    print(f"class of {n} ({', '.join(f'{sum(1 for k in kinds.values() if k == kind)} {kind}' for kind in KINDS)}), "
          f"{len(labs)} labs, --jobs {args.jobs or 'default'}, {os.cpu_count()} cores, isolation "
          f"{found['isolation']}, load average {load_before:.1f} before / {os.getloadavg()[0]:.1f} after")
    if not_graded:
        print(f"not graded by labs check (skipped, with the reason): {', '.join(sorted(not_graded))}")
    print(f"wall time {wall_s:.1f} s; {wall_s / n:.1f} s per student")
    if cpu_s is not None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        print(f"CPU time {cpu_s:.1f} s ({cpu_s / n:.1f} s per student): on an idle machine of {cores} cores the run "
              f"takes at least {cpu_s / cores:.0f} s")
    print("verdicts as expected: " + ", ".join(f"{kind} {right[kind]}/{sum(1 for k in kinds.values() if k == kind)}"
                                               for kind in KINDS))
    for line in surprises[:10]:
        print(f"unexpected: {line}")
    if args.honest and n == 6 and len(labs) == len(registry.names()):
        print(f"goal: six honest students, every lab, under {GOAL_S:.0f} s: measured {wall_s:.0f} s "
              f"= {wall_s / GOAL_S:.2f} x the goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
