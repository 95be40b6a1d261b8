"""``commlab labs``: the labs' tasks, and grading them on a learner's code or a class's.

    commlab labs list [--json]
    commlab labs check [LAB ...] [--mine DIR | --class DIR] [--json] [--junit FILE] [--timeout S]

``check`` runs every task's check (the same checks as the notebooks and the lab scripts) on the learner's
modules: ``labs/mine/<lab>.py``, written by the notebooks' "your turn" cells (or the folder given by
``--mine``). With ``--class DIR`` it grades a folder of submissions, one subfolder per learner holding that
learner's ``labs/mine`` files. It prints one line per task (lab, task, pass or FAIL, the first failure in
words), exits 1 when any task fails, and with ``--junit FILE`` writes JUnit XML (one test suite per learner,
one test case per task) for an LMS or a CI server. Grading runs the learners' code: do it in a container
or an account of its own.
"""
from __future__ import annotations

import argparse
import json
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
    check = actions.add_parser("check", help="run the labs' checks on the learner's modules (exit 1 if any fails)")
    check.add_argument("labs", nargs="*", metavar="LAB", help="labs to check (default: every lab)")
    where = check.add_mutually_exclusive_group()
    where.add_argument("--mine", metavar="DIR", help="folder of one learner's <lab>.py modules (default: "
                                                     "$COMMLAB_LABS_MINE or the book's labs/mine)")
    where.add_argument("--class", dest="klass", metavar="DIR", help="folder of submissions: one subfolder per "
                                                                    "learner, each a copy of that learner's labs/mine")
    check.add_argument("--json", action="store_true", help="print JSON (results, passed, failed) to stdout")
    check.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML to FILE")
    check.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="limit for one lab's checks of one learner, seconds (default 600)")
    return parser


def _labs(names: list[str]) -> list[str]:
    from commlab.labs import registry

    for name in names:
        registry.lab(name)                     # an unknown lab: one line naming it and the labs there are
    return names or list(registry.names())


def _learners(args) -> list[tuple[str | None, Path]]:
    from commlab.labs import mine

    if args.klass is None:
        folder = mine.mine_dir(args.mine)
        if args.mine is not None and not folder.is_dir():
            raise CommlabError(f"--mine {args.mine!r} is not a folder")
        return [(None, folder)]
    root = Path(args.klass)
    if not root.is_dir():
        raise CommlabError(f"--class {args.klass!r} is not a folder")
    learners = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not learners:
        raise CommlabError(f"--class {args.klass!r} holds no submissions: expected one folder per learner")
    return [(p.name, p) for p in learners]


def _line(result, with_learner: bool) -> str:
    who = f"{result.learner:<16.16} " if with_learner else ""
    verdict = "pass" if result.passed else "FAIL"
    return f"{who}{result.lab:<22} {result.task:<26} {verdict:<5} {result.problem}".rstrip()


def junit_xml(results) -> str:
    """The results as JUnit XML: a test suite per learner, a test case (class: the lab) per task."""
    import xml.etree.ElementTree as ET

    suites = ET.Element("testsuites", name="commlab labs", tests=str(len(results)),
                        failures=str(sum(not r.passed for r in results)))
    for learner in dict.fromkeys(r.learner for r in results):
        mine = [r for r in results if r.learner == learner]
        suite = ET.SubElement(suites, "testsuite", name=learner or "labs", tests=str(len(mine)),
                              failures=str(sum(not r.passed for r in mine)), errors="0",
                              time=f"{sum(r.seconds for r in mine):.3f}")
        for r in mine:
            case = ET.SubElement(suite, "testcase", classname=f"labs.{r.lab}", name=r.task, time=f"{r.seconds:.3f}")
            if not r.passed:
                ET.SubElement(case, "failure", message=r.problem, type="LabCheckFailed").text = r.problem
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)


def _check(args) -> int:
    from commlab.labs.grade import DEFAULT_TIMEOUT_S, grade

    labs, learners = _labs(args.labs), _learners(args)
    timeout_s = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if not timeout_s > 0:
        raise CommlabError(f"--timeout must be a number of seconds > 0, got {args.timeout}")
    if args.junit:  # a bad destination is found before the grading, not after it
        from commlab.output import check_writable_dir

        if Path(args.junit).is_dir():
            raise CommlabError(f"--junit {args.junit!r} is a folder; give a file name for the JUnit XML")
        check_writable_dir(Path(args.junit).parent, f"--junit {args.junit!r}")
    several = args.klass is not None
    show = None if args.json else (lambda r: print(_line(r, several), flush=True))
    results = [r for learner, folder in learners for r in grade(labs, folder, learner, timeout_s, show)]
    passed = sum(r.passed for r in results)
    if args.junit:
        from commlab.output import write_atomic

        write_atomic(args.junit, junit_xml(results))
        from commlab.cli._common import say_wrote

        say_wrote(args.junit, args.json)
    if args.json:
        print(json.dumps({"results": [r.__dict__ for r in results], "passed": passed,
                          "failed": len(results) - passed}, indent=1))
    else:
        where = args.klass or str(learners[0][1])
        print(f"{passed} of {len(results)} tasks passed ({where})")
    return 0 if passed == len(results) else 1


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
    print("usage: commlab labs {list,check} ...  (commlab labs --help)", file=sys.stderr)
    return 2
