"""``commlab labs``: the labs' tasks, grading them on a learner's code or a class's, and collecting hand-ins.

    commlab labs list [--json]
    commlab labs check [LAB ...] [--mine DIR | --class DIR] [--json] [--junit FILE] [--csv FILE]
                       [--feedback DIR] [--logs DIR] [--timeout S] [--student-timeout S] [--jobs N]
                       [--seed N] [--checks DIR]
    commlab labs collect ARCHIVE... --to DIR

``check`` runs every task's check (the same checks as the notebooks and the lab scripts) on the learner's
modules: ``labs/mine/<lab>.py``, written by the notebooks' "your turn" cells (or the folder given by
``--mine``). With ``--class DIR`` it grades a folder of submissions, one subfolder per student holding that
student's ``labs/mine`` files (or the whole ``labs/mine`` folder inside it). Each student's code runs in a
sandbox (bubblewrap; without it, limits and a process group, and it says what is not isolated), and the
verdicts are computed in the grader from the values their functions return on cases drawn now (``--seed``
fixes them; the seed used is printed). It prints one line per task (student, lab, task, pass/FAIL/skip/ERROR,
the first failure in words) and writes JUnit (``--junit``), a gradebook (``--csv``: a row per student, a
column per lab with its points, the total), a feedback file per student (``--feedback DIR``) and what each
student's code printed (``--logs DIR``).

Exit status: with ``--class``, 0 when the grading completed (failed tasks are results), 1 when the grader
itself failed on some lab (an ERROR row), 2 for bad usage. With ``--mine`` (a learner checking their own
code), 1 when a task fails.

``collect`` unpacks students' archives (.zip, .tar, .tgz, .tar.gz) into ``DIR/<student>/`` safely (nothing
outside DIR, no links, size limits), finding the ``labs/mine`` folder inside each.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from commlab.errors import CommlabError


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("labs", help="the labs' tasks; check a learner's code or grade a class",
                                   description=__doc__.split("\n\n")[0],
                                   epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="labs_command", metavar="ACTION")
    listing = actions.add_parser("list", help="every lab and its tasks")
    listing.add_argument("--json", action="store_true", help="print JSON")
    check = actions.add_parser("check", help="run the labs' checks on a learner's modules or grade a class")
    check.add_argument("labs", nargs="*", metavar="LAB", help="labs to check (default: every lab)")
    where = check.add_mutually_exclusive_group()
    where.add_argument("--mine", metavar="DIR", help="folder of one learner's <lab>.py modules (default: "
                                                     "$COMMLAB_LABS_MINE or the book's labs/mine)")
    where.add_argument("--class", dest="klass", metavar="DIR", help="folder of submissions: one subfolder per "
                                                                    "student, each a copy of their labs/mine")
    check.add_argument("--json", action="store_true", help="print JSON (results, passed, failed, seed) to stdout")
    check.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML to FILE")
    check.add_argument("--csv", metavar="FILE", help="also write a gradebook: a row per student, a column per lab")
    check.add_argument("--feedback", metavar="DIR", help="also write DIR/<student>.txt: what passed, what failed, why")
    check.add_argument("--logs", metavar="DIR", help="keep what each student's code printed, DIR/<student>/<lab>.log")
    check.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="limit for one lab's checks of one student, seconds (default 600)")
    check.add_argument("--student-timeout", type=float, default=None, metavar="S",
                       help="limit for all the labs of one student, seconds (default 1800)")
    check.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                       help="students graded at once (default: the machine's cores)")
    check.add_argument("--seed", type=int, default=None, metavar="N",
                       help="seed of the cases drawn at run time (default: a fresh one, printed)")
    check.add_argument("--checks", metavar="DIR", help="hidden checks: DIR/<lab>.py with functions check_*(...)")
    collect = actions.add_parser("collect", help="unpack students' archives safely into DIR/<student>/")
    collect.add_argument("archives", nargs="+", metavar="ARCHIVE", help=".zip, .tar, .tgz or .tar.gz files")
    collect.add_argument("--to", required=True, metavar="DIR", help="the class folder to fill")
    return parser


def _labs(names: list[str]) -> list[str]:
    from commlab.labs import registry

    for name in names:
        registry.lab(name)                     # an unknown lab: one line naming it and the labs there are
    return names or list(registry.names())


def _learners(args) -> tuple[list[tuple[str | None, Path]], list[str]]:
    """(learner, folder) to grade, and what was skipped or found where, in sentences."""
    from commlab.labs import collect, mine

    if args.klass is None:
        folder = mine.mine_dir(args.mine)
        if args.mine is not None and not folder.is_dir():
            raise CommlabError(f"--mine {args.mine!r} is not a folder")
        return [(None, folder)], []
    root = Path(args.klass)
    if not root.is_dir():
        raise CommlabError(f"--class {args.klass!r} is not a folder")
    learners: list[tuple[str | None, Path]] = []
    notes: list[str] = []
    for p in sorted(root.iterdir()):
        if p.name.startswith("."):
            notes.append(f"skipped {p.name!r}: a hidden entry (its name starts with a dot)")
        elif p.is_symlink():
            notes.append(f"skipped {p.name!r}: a symbolic link (copy the submission itself into the class folder)")
        elif p.is_file() and collect.is_archive(p):
            notes.append(f"skipped {p.name!r}: an archive; unpack it first: commlab labs collect {p} --to {root}")
        elif not p.is_dir():
            notes.append(f"skipped {p.name!r}: a file, not a student's folder")
        else:
            found, why = collect.find_mine(p)
            if why:
                notes.append(f"{p.name}: {why}")
            learners.append((p.name, found))
    if not learners:
        raise CommlabError(f"--class {args.klass!r} holds no submissions: expected one folder per learner"
                           + (f" ({'; '.join(notes)})" if notes else ""))
    return learners, notes


def _positive(value, flag: str, default: float) -> float:
    if value is None:
        return default
    if not value > 0:
        raise CommlabError(f"{flag} must be a number of seconds > 0, got {value:g}")
    return float(value)


def _check_destinations(args) -> None:
    from commlab.output import check_writable_dir

    for flag, value in (("--junit", args.junit), ("--csv", args.csv)):
        if value:
            if Path(value).is_dir():
                raise CommlabError(f"{flag} {value!r} is a folder; give a file name")
            check_writable_dir(Path(value).parent, f"{flag} {value!r}")
    for flag, value in (("--feedback", args.feedback), ("--logs", args.logs)):
        if value:
            if Path(value).exists() and not Path(value).is_dir():
                raise CommlabError(f"{flag} {value!r} is a file; give a folder")
            Path(value).mkdir(parents=True, exist_ok=True)
            check_writable_dir(Path(value), f"{flag} {value!r}")


def _options(args):
    from commlab.labs.grade import DEFAULT_STUDENT_TIMEOUT_S, DEFAULT_TIMEOUT_S, Options

    if args.jobs is not None and args.jobs < 1:
        raise CommlabError(f"--jobs must be a whole number >= 1, got {args.jobs}")
    if args.checks is not None and not Path(args.checks).is_dir():
        raise CommlabError(f"--checks {args.checks!r} is not a folder")
    return Options(timeout_s=_positive(args.timeout, "--timeout", DEFAULT_TIMEOUT_S),
                   student_timeout_s=_positive(args.student_timeout, "--student-timeout", DEFAULT_STUDENT_TIMEOUT_S),
                   jobs=args.jobs or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                         else (os.cpu_count() or 1)),
                   seed=args.seed, checks_dir=args.checks,
                   logs_dir=str(Path(args.logs).resolve()) if args.logs else None)


def _check(args) -> int:
    from commlab.labs import gradebook, sandbox
    from commlab.labs.grade import grade_class

    labs, (learners, notes) = _labs(args.labs), _learners(args)
    options = _options(args)
    _check_destinations(args)
    several = args.klass is not None
    kind, missing = sandbox.isolation()
    for note in notes + [f"note: {m}" for m in missing]:
        print(f"commlab labs check: {gradebook.printable(note)}", file=sys.stderr)
    sizes = gradebook.widths([], [n for n, _ in learners], labs)
    from tqdm import tqdm

    bar = tqdm(total=len(learners), unit="student", desc="grading", file=sys.stderr,
               disable=None if several else True, leave=False)

    def show(row):
        if not args.json:
            bar.write(gradebook.line(row, sizes, several), file=sys.stdout)
            sys.stdout.flush()

    try:
        results, seed = grade_class(learners, labs, options, on_result=show, on_student=lambda _: bar.update(1))
    except CommlabError:
        raise
    except Exception as exc:  # noqa: BLE001 - the grader itself failed: one line and exit status 1, no traceback
        print(f"commlab labs check: the grader failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        bar.close()
    passed = sum(r.passed for r in results)
    _write_outputs(args, results, labs, seed, options)
    errors = sum(r.status == "error" for r in results)
    if args.json:
        print(json.dumps({"results": [r.__dict__ for r in results], "passed": passed,
                          "failed": len(results) - passed, "errors": errors, "seed": seed,
                          "isolation": kind}, indent=1))
    else:
        where = args.klass or str(learners[0][1])
        print(f"{passed} of {len(results)} tasks passed ({where}); cases drawn with --seed {seed}; "
              f"isolation: {kind}")
    if several:
        return 1 if errors else 0
    return 0 if passed == len(results) else 1


def _write_outputs(args, results, labs, seed, options) -> None:
    from commlab.cli._common import say_wrote
    from commlab.labs import gradebook
    from commlab.output import write_atomic

    if args.junit:
        write_atomic(args.junit, gradebook.junit_xml(results, seed))
        say_wrote(args.junit, args.json)
    if args.csv:
        write_atomic(args.csv, gradebook.gradebook_csv(results, labs))
        say_wrote(args.csv, args.json)
    if args.feedback:
        for learner in dict.fromkeys(r.learner for r in results):
            logs = Path(options.logs_dir) / (learner or "mine") if options.logs_dir else None
            name = gradebook.safe_file_name(learner or "mine")
            write_atomic(Path(args.feedback) / f"{name}.txt", gradebook.feedback_text(learner, results, logs, seed))
        say_wrote(f"{args.feedback}/<student>.txt ({len(dict.fromkeys(r.learner for r in results))} files)",
                  args.json)


def _collect(args) -> int:
    from commlab.labs import collect, gradebook

    done = collect.collect([Path(a) for a in args.archives], Path(args.to))
    for line in done:
        print(gradebook.printable(line))
    return 0


def _list(args) -> int:
    from commlab.labs import registry

    rows: list[dict] = [
        {"lab": lab.name, "title": lab.title, "notebook": lab.notebook, "script": lab.script,
         "tasks": [{"task": t.name, "functions": list(t.functions), "ranks": t.ranks} for t in lab.tasks]}
        for lab in registry.LABS]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        tasks = ", ".join(t["task"] for t in row["tasks"])
        print(f"{row['lab']:<22} {row['title']}\n{'':<22} tasks: {tasks}")
    return 0


def run(args) -> int:
    if args.labs_command == "check":
        return _check(args)
    if args.labs_command == "list":
        return _list(args)
    if args.labs_command == "collect":
        return _collect(args)
    print("usage: commlab labs {list,check,collect} ...  (commlab labs --help)", file=sys.stderr)
    return 2
