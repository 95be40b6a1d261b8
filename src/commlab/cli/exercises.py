"""``commlab exercises``: list the exercises, print an answer key, check an answer, show progress.

    commlab exercises list [--chapter C] [--json]
    commlab exercises key --seed S [--chapter C] [--solutions] [--json]
    commlab exercises check ID ANSWER [--seed S] [--record]     # exit 0 right, 1 wrong, 2 unreadable
    commlab exercises progress [--file F] [--learner L] [--json]

A seed is a learner's name or number (what each student puts in COMMLAB_LEARNER); without --seed the
learner comes from COMMLAB_LEARNER or the default. commlab.exercises is imported only when a command runs.
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
import warnings


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("exercises", help="list exercises, print answer keys, check answers",
                                   description=__doc__.split("\n\n")[0])
    actions = parser.add_subparsers(dest="exercises_command", metavar="ACTION")
    listing = actions.add_parser("list", help="ids, chapters, kinds (numeric, choice, short), titles and units")
    listing.add_argument("--chapter", metavar="C", help="only chapter C (e.g. 05)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    key = actions.add_parser("key", help="the answer key of one learner (seed)")
    key.add_argument("--seed", metavar="S", help="learner name or number (default: COMMLAB_LEARNER or the default)")
    key.add_argument("--chapter", metavar="C", help="only chapter C")
    key.add_argument("--solutions", action="store_true", help="add the worked solutions")
    key.add_argument("--json", action="store_true", help="print JSON")
    check = actions.add_parser("check", help="check one answer (exit 0 right, 1 wrong, 2 unreadable)")
    check.add_argument("id", metavar="ID", help="exercise id, e.g. ch05.ring-volume")
    check.add_argument("answer", metavar="ANSWER", help='the answer: a number in the stated unit or "54 ms"')
    check.add_argument("--seed", metavar="S", help="learner name or number")
    check.add_argument("--record", action="store_true", help="count the attempt in the progress file")
    progress = actions.add_parser("progress", help="attempts and solved exercises from the progress file")
    progress.add_argument("--file", metavar="F", help="progress file (default: COMMLAB_PROGRESS or "
                                                      "~/.commlab/progress.json)")
    progress.add_argument("--learner", metavar="L", help="only this learner")
    progress.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _list(args) -> int:
    from commlab import exercises as ex

    rows = [{"id": e.id, "chapter": e.chapter, "title": e.title, "kind": e.kind, "unit": e.unit,
             "tolerance": e.tolerance} for e in ex.exercises(args.chapter)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        print(f"{row['id']:<28} {row['chapter']}  {row['kind']:<7}  {row['unit'] or '-':<5}  {row['title']}")
    print(f"{len(rows)} exercises")
    return 0


def _key(args) -> int:
    from commlab import exercises as ex

    learner = ex.current_learner(args.seed)
    entries = ex.key(learner, args.chapter)
    if args.json:
        rows = [{**entry.to_dict(), "seed": learner} for entry in entries]
        if not args.solutions:
            rows = [{k: v for k, v in row.items() if k != "solution"} for row in rows]
        print(json.dumps(rows, indent=1, ensure_ascii=False))
        return 0
    print(f"Answer key for learner {learner!r} ({len(entries)} exercises)\n")
    for entry in entries:
        tolerance = "exact" if entry.tolerance == 0 else f"within {entry.tolerance:.0%}"
        shape = f"{entry.unit or 'number'}, {tolerance}" if entry.kind == "numeric" else entry.kind
        print(f"{entry.id}: {entry.title} [{shape}]")
        print(textwrap.indent(entry.question, "  Q: ", lambda line: True).replace("\n  Q: ", "\n     "))
        print(f"  A: {entry.answer_text}")
        for given, words in entry.feedback if args.solutions else ():
            print(textwrap.indent(f"{given}: {words}", "     "))
        if args.solutions:
            print(textwrap.indent(entry.solution, "     "))
        print()
    return 0


def _check(args) -> int:
    from commlab import exercises as ex

    feedback = ex.check(args.id, args.answer, learner=args.seed, record=args.record)
    print(feedback.message)
    if not feedback.readable:
        return 2
    return 0 if feedback.correct else 1


def _progress(args) -> int:
    from commlab.exercises import progress as store

    path = store.progress_path(args.file)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", store.ProgressWarning)
        data = store.load(path)
    for warning in caught:
        text = str(warning.message)
        print(f"commlab exercises: warning: {text.removeprefix('commlab: ')}", file=sys.stderr)
    learners = {k: v for k, v in data["learners"].items() if args.learner in (None, k)}
    if args.json:
        print(json.dumps({"file": str(path), "learners": learners}, indent=1, ensure_ascii=False))
        return 0
    if not learners:
        print(f"no progress recorded in {path}")
        return 0
    for learner, records in sorted(learners.items()):
        solved = sum(1 for r in records.values() if r["solved"])
        print(f"{learner}: {solved} of {len(records)} attempted exercises solved ({path})")
        for exercise_id, r in sorted(records.items()):
            mark = f"solved {r['first_solved']}" if r["solved"] else "not solved"
            print(f"  {exercise_id:<28} {r['attempts']:>3} attempt(s)  {mark}")
    return 0


def run(args) -> int:
    from commlab.errors import CommlabError

    commands = {"list": _list, "key": _key, "check": _check, "progress": _progress}
    if args.exercises_command not in commands:
        raise CommlabError("commlab exercises needs an action; expected one of: list, key, check, progress")
    return commands[args.exercises_command](args)
