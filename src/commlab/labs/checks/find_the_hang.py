"""Checks of the find-the-hang lab (labs/find_the_hang.ipynb): the learner's ``find_the_hang`` on the records
of faults it has not seen.

The unseen faults are built here, deterministically, in the Flight Recorder's form: other world sizes (2 to
8), other culprits (rank 0 and the last rank among them, so that comparing with rank 0 fails), other calls and
collectives, a dtype instead of a size, a rank that stops before the others (behind a majority that is
ahead, as in NCCL's RAS report), ties (two against two), ring buffers that dropped old entries differently
on each rank (so calls must be matched by ``collective_seq_id``, not by position), a rank that left no record
while the others went on, and records that agree. Each case knows its answer by construction; live runs
(:mod:`commlab.labs.hang`) add real records: the notebook's own, and, for a grader, two faults run now.
"""
from __future__ import annotations

from commlab.labs.checking import Outcome
from commlab.labs.checks import call

_OPS = {"ar": ("gloo:all_reduce", [[4]], ["Float"]), "ar1": ("gloo:all_reduce", [[1]], ["Float"]),
        "bc": ("gloo:broadcast", [[4]], ["Float"]), "ag": ("gloo:all_gather_into_tensor", [[4]], ["Float"]),
        "rs": ("gloo:reduce_scatter_tensor_coalesced", [[16]], ["Float"]), "bar": ("gloo:barrier", [], []),
        "ar8": ("gloo:all_reduce", [[8]], ["Float"]), "ard": ("gloo:all_reduce", [[4]], ["Double"])}


def entry(seq: int, op: str, retired: bool = True) -> dict:
    """A Flight Recorder entry as torch 2.13 writes it for gloo (state stays 'scheduled')."""
    name, sizes, dtypes = _OPS[op]
    return {"collective_seq_id": seq, "profiling_name": name, "input_sizes": sizes, "input_dtypes": dtypes,
            "state": "scheduled", "retired": retired, "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None, "timeout_ms": 2000}


def _calls(ops: list[str], start: int = 1, retired_last: bool = False) -> list[dict]:
    return [entry(start + i, op, retired=retired_last or i < len(ops) - 1) for i, op in enumerate(ops)]


def unseen_cases() -> list[tuple[str, dict, dict | None]]:
    """(what happened, records, the answer) for faults the notebook never runs."""
    step = ["ar", "ar1", "bc", "ag", "bar"]
    cases: list[tuple[str, dict, dict | None]] = []

    def same(n: int, ops=step[:3]):
        return {r: _calls(list(ops)) for r in range(n)}

    rec = same(5, step[:2])                                       # the others wait in call 2
    rec[0] = _calls(["ar", "bc"])                                  # rank 0 skipped call 2 and waits in call 3
    cases.append(("5 ranks: rank 0 skips call 2 (so comparing with rank 0 cannot work)", rec, {"rank": 0, "call": 2}))
    rec = same(8, step[:3])
    rec[7] = _calls(["ar", "ar1", "ag"])
    cases.append(("8 ranks: rank 7 swaps calls 3 and 4", rec, {"rank": 7, "call": 3}))
    rec = same(6, step[:1])
    rec[4] = _calls(["ar8"])
    cases.append(("6 ranks: rank 4 all-reduces 8 elements at call 1 where the others reduce 4", rec,
                  {"rank": 4, "call": 1}))
    rec = same(3)
    rec[1] = [entry(1, "ard")] + _calls(["ar1", "bc"], start=2)
    cases.append(("3 ranks: rank 1 reduces float64 at call 1 (same size, other dtype), and gloo went on", rec,
                  {"rank": 1, "call": 1}))
    rec = same(4)
    rec[3] = None
    cases.append(("4 ranks: rank 3 died during call 3 and left no record", rec, {"rank": 3, "call": 3}))
    rec = {r: _calls(["ar", "ar1", "bc", "ag"][: 4 if r == 0 else 3]) for r in range(4)}
    rec[2] = None
    cases.append(("4 ranks: rank 2 died; rank 0 got one call further than ranks 1 and 3", rec, {"rank": 2, "call": 3}))
    rec = {r: _calls(step[:4] if r in (2, 5) else step[:3]) for r in range(6)}
    cases.append(("6 ranks: four ranks never reach call 4, where ranks 2 and 5 wait (the four are behind)", rec,
                  {"rank": 0, "call": 4}))
    rec = same(4, step[:4])
    rec[1] = _calls(step[:2])
    cases.append(("4 ranks: rank 1 stops after call 2 (stuck outside the collectives)", rec, {"rank": 1, "call": 3}))
    rec = {r: _calls(["ar", "bc"] if r < 2 else ["ar", "ar1"]) for r in range(4)}
    cases.append(("4 ranks: ranks 0, 1 and ranks 2, 3 disagree at call 2, two against two (a tie: what the lowest rank "
                  "called counts as the usual call)", rec, {"rank": 2, "call": 2}))
    rec = {0: _calls(["ar", "ar1"]), 1: _calls(["ar", "bc"])}
    cases.append(("2 ranks: rank 1 broadcasts where rank 0 all-reduces (a tie of one against one)", rec,
                  {"rank": 1, "call": 2}))
    rec = {r: _calls(["ar", "ar1", "bc", "ar", "ar1", "bc"][(2 if r == 1 else 0):], start=3 if r == 1 else 1)
           for r in range(3)}
    rec[2][4] = entry(5, "ag")
    cases.append(("3 ranks whose ring buffers dropped different old entries (rank 1's starts at call 3): rank 2's "
                  "call 5 differs", rec, {"rank": 2, "call": 5}))
    cases.append(("4 ranks, a healthy step: every record agrees", same(4, step), None))
    return cases


def describe(records: dict, answer: dict | None) -> str:
    """What the records show at the answer, in words."""
    if answer is None:
        return "the records agree: nothing to name (return None)"
    rank, k = answer["rank"], answer["call"]

    def at(r):
        found = [e for e in records[r] or () if e["collective_seq_id"] == k]
        return f"{found[0]['profiling_name']} {found[0]['input_sizes']} {found[0]['input_dtypes']}" if found else None

    others = sorted(r for r in records if r != rank and records[r] is not None)
    their = {at(r) for r in others} - {None}
    if records[rank] is None:
        return f"rank {rank} left no record; the others stopped at call {k}"
    if at(rank) is None:
        return f"rank {rank}'s record ends before call {k}, which ranks {[r for r in others if at(r)]} entered"
    return f"rank {rank}'s call {k} is {at(rank)} where most ranks called {', '.join(sorted(their - {at(rank)}))}"


def _judge(fn, what: str, records: dict, want: dict | None) -> str:
    got, failed = call("find_the_hang", fn, records, what=f"find_the_hang on {what}")
    if failed:
        return failed.problem
    if got is not None and not (isinstance(got, dict) and set(got) == {"rank", "call"}):
        return f"find_the_hang must return {{'rank': ..., 'call': ...}} or None, got {got!r}"
    if got == want:
        return ""
    hint = ""
    if isinstance(got, dict) and want and got["rank"] == want["rank"] and got["call"] == want["call"] - 1:
        hint = " (calls are numbered as the Flight Recorder numbers them: collective_seq_id, from 1)"
    return f"{what}: you named {got}; the records point to {want}: {describe(records, want)}{hint}"


def check_find_the_hang(fn, runs=(), live: bool = True) -> Outcome:
    """The unseen cases, then ``runs`` (FaultRun of commlab.labs.hang), then, with ``live``, two faults run now."""
    for what, records, want in unseen_cases():
        problem = _judge(fn, f"an unseen fault ({what})", records, want)
        if problem:
            return Outcome(problem=problem)
    runs = list(runs) + (_live_runs() if live else [])
    for run in runs:
        problem = _judge(fn, f"the records of {run.fault.describe()}", run.records, run.fault.truth)
        if problem:
            return Outcome(problem=problem)
    return Outcome(details={"cases": len(unseen_cases()) + len(runs)})


#: Two faults the notebook does not run: a skip by rank 0, a late death.
LIVE_UNSEEN = (("skip", 0, 3), ("dies", 3, 4))


def _live_runs() -> list:
    from commlab.labs import hang

    return [hang.run_fault(hang.Fault(kind, rank, k)) for kind, rank, k in LIVE_UNSEEN]
