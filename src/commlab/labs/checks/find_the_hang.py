"""Checks of the find-the-hang lab (labs/find_the_hang.ipynb): the learner's ``find_the_hang`` on the records
of faults it has not seen.

The unseen faults are built here, deterministically, in the Flight Recorder's form: other world sizes (2 to
8), other culprits (rank 0 and the last rank among them, so that comparing with rank 0 fails), other calls and
collectives, a dtype instead of a size, a rank that stops before the others (behind a majority that is
ahead, as in NCCL's RAS report), ties (two against two), ring buffers that dropped old entries differently
on each rank (so calls must be matched by ``collective_seq_id``, not by position), a rank that left no record
while the others went on, and records that agree. Each case knows its answer by construction; live runs
(:mod:`commlab.labs.hang`) add real records: the notebook's own, and, for a grader, two faults run now.
When a class is graded, :func:`drawn_find_the_hang` adds faults drawn from the seed (world size, the step's
calls, the culprit, the call, the kind of fault, ring buffers that dropped entries), judged against the
reference (:func:`commlab.labs.solutions.find_the_hang.find_the_hang`) in the grader's process.
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
    """The faults of :data:`LIVE_UNSEEN` run now (their records do not depend on the learner's code: computed
    once per grading run, :mod:`commlab.labs.reference_cache`)."""
    from commlab.labs import hang
    from commlab.labs.reference_cache import cached

    def compute() -> list:
        return [{"records": {str(r): rec for r, rec in hang.run_fault(hang.Fault(kind, rank, k)).records.items()}}
                for kind, rank, k in LIVE_UNSEEN]

    found = cached("find_the_hang-live", compute)
    return [hang.FaultRun(hang.Fault(kind, rank, k), {int(r): rec for r, rec in run["records"].items()})
            for (kind, rank, k), run in zip(LIVE_UNSEEN, found)]


# --- faults drawn when a class is graded (commlab labs check --seed) ------------------------------------------

#: The kinds of drawn fault, each built so that its answer is known (:func:`drawn_cases`).
DRAWN_KINDS = ("another call", "a skipped call", "died", "stopped early", "a few ranks ahead", "dropped entries",
               "healthy")


def _drawn_case(rng, kind: str) -> tuple[str, dict, dict | None]:
    """One fault of ``kind`` on a world of 2 to 8 ranks (3 to 8 where a majority must outvote the culprit)."""
    ops = list(_OPS)
    n = int(rng.integers(3 if kind in ("another call", "a skipped call", "dropped entries") else 2, 9))
    step = [ops[i] for i in rng.permutation(len(ops))[:int(rng.integers(3, 7))]]   # distinct calls
    length = len(step)
    culprit = int(rng.integers(n))
    rec: dict[int, list[dict] | None]
    if kind == "another call":
        k = int(rng.integers(1, length + 1))
        other = [op for op in ops if op != step[k - 1]][int(rng.integers(len(ops) - 1))]
        rec = {r: _calls(step[:k]) for r in range(n)}
        rec[culprit] = _calls(step[:k - 1] + [other])
        return f"{n} ranks: rank {culprit} calls {_OPS[other][0]} at call {k}", rec, {"rank": culprit, "call": k}
    if kind == "a skipped call":
        k = int(rng.integers(1, length))
        rec = {r: _calls(step[:k]) for r in range(n)}
        rec[culprit] = _calls(step[:k - 1] + [step[k]])
        return f"{n} ranks: rank {culprit} skips call {k}", rec, {"rank": culprit, "call": k}
    if kind == "died":
        k = int(rng.integers(1, length + 1))
        rec = {r: _calls(step[:k]) for r in range(n)}
        rec[culprit] = None
        return f"{n} ranks: rank {culprit} died during call {k}", rec, {"rank": culprit, "call": k}
    if kind == "stopped early":
        k = int(rng.integers(2, length + 1))
        rec = {r: _calls(step[:int(rng.integers(k, length + 1))]) for r in range(n)}
        rec[culprit] = _calls(step[:k - 1], retired_last=True)
        return f"{n} ranks: rank {culprit} stops after call {k - 1}", rec, {"rank": culprit, "call": k}
    if kind == "a few ranks ahead":
        k = int(rng.integers(2, length + 1))
        ahead = sorted(int(r) for r in rng.permutation(n)[:max(1, (n - 1) // 2)])
        rec = {r: _calls(step[:k] if r in ahead else step[:k - 1]) for r in range(n)}
        behind = min(r for r in range(n) if r not in ahead)
        return (f"{n} ranks: ranks {ahead} wait in call {k}, which the others never reach", rec,
                {"rank": behind, "call": k})
    if kind == "dropped entries":
        k = int(rng.integers(2, length + 1))
        other = [op for op in ops if op != step[k - 1]][int(rng.integers(len(ops) - 1))]
        rec = {}
        for r in range(n):
            calls = step[:k - 1] + [other if r == culprit else step[k - 1]]
            dropped = int(rng.integers(0, k - 1))        # oldest entries this rank's ring buffer let go
            rec[r] = _calls(calls[dropped:], start=1 + dropped)
        return (f"{n} ranks whose ring buffers dropped different old entries: rank {culprit}'s call {k} is "
                f"{_OPS[other][0]}", rec, {"rank": culprit, "call": k})
    healthy = {r: _calls(step, retired_last=True) for r in range(n)}
    return f"{n} ranks, a healthy step: every record agrees", healthy, None


def drawn_cases(seed: int) -> list[tuple[str, dict, dict | None]]:
    """(what happened, records, the answer by construction): one fault of each of :data:`DRAWN_KINDS` and one
    more of a kind drawn, all drawn from ``seed``."""
    import numpy as np

    rng = np.random.default_rng([seed, 7])
    kinds = list(DRAWN_KINDS) + [DRAWN_KINDS[int(rng.integers(len(DRAWN_KINDS)))]]
    return [_drawn_case(rng, kind) for kind in kinds]


def drawn_find_the_hang(fn, seed: int) -> Outcome:
    """The faults of :func:`drawn_cases`, each judged against the reference's answer on the same records."""
    from commlab.labs.solutions.find_the_hang import find_the_hang as reference

    cases = drawn_cases(seed)
    for what, records, _ in cases:
        problem = _judge(fn, f"a fault drawn from seed {seed} ({what})", records, reference(records))
        if problem:
            return Outcome(problem=problem)
    return Outcome(details={"cases": len(cases)})
