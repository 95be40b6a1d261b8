"""Reference solution of the find-the-hang lab (labs/find_the_hang.ipynb, labs/scripts/find_the_hang.py).

:func:`find_the_hang` reads one record per rank, each the Flight Recorder entries of the process group that
hung (``collective_seq_id``, ``profiling_name``, ``input_sizes``, ``input_dtypes``), or None for a rank that
left none, and names the rank to look at and the call where things went wrong:

1. the first call number that every record holds and on which the ranks disagree (another collective, or the
   same with other sizes or dtypes): the rank whose call differs from what most ranks called (a tie: what
   the lowest rank called), the lowest such rank if several;
2. else a rank without a record (it died, or never got to write one): the call where the others stopped,
   the smallest of their last call numbers;
3. else a rank whose record ends before the others' (it never entered their next call: it is stuck
   elsewhere, or left the step): that next call;
4. else None: the records agree.

Calls are matched by their ``collective_seq_id``, not by their place in the list: a ring buffer that dropped
old entries on one rank must not shift its calls against the others'. This is the reasoning of NCCL's RAS
("30 ranks have launched up to operation 640, 2 ranks have launched up to operation 641": the 30 are behind)
and of PyTorch's Flight Recorder analyzer, on four kinds of evidence.
"""
from __future__ import annotations

from collections import Counter


def call_key(entry: dict) -> tuple:
    """What must match across ranks for one call: the collective, its tensors' sizes and dtypes."""
    sizes = tuple(tuple(s) for s in entry.get("input_sizes") or ())
    return entry.get("profiling_name"), sizes, tuple(entry.get("input_dtypes") or ())


def find_the_hang(records: dict) -> dict | None:
    """{"rank": the rank to look at, "call": the collective_seq_id where it went wrong}, or None.

    >>> ar = {"profiling_name": "gloo:all_reduce", "input_sizes": [[4]]}
    >>> bc = {"profiling_name": "gloo:broadcast", "input_sizes": [[4]]}
    >>> seq = lambda k, e: {**e, "collective_seq_id": k}
    >>> find_the_hang({0: [seq(1, ar), seq(2, ar)], 1: [seq(1, ar), seq(2, bc)], 2: [seq(1, ar), seq(2, ar)]})
    {'rank': 1, 'call': 2}
    >>> find_the_hang({0: [seq(1, ar), seq(2, ar)], 1: None, 2: [seq(1, ar), seq(2, ar)]})
    {'rank': 1, 'call': 2}
    >>> find_the_hang({0: [seq(1, ar), seq(2, ar)], 1: [seq(1, ar)], 2: [seq(1, ar), seq(2, ar)]})
    {'rank': 1, 'call': 2}
    """
    present = {rank: {e["collective_seq_id"]: call_key(e) for e in entries}
               for rank, entries in sorted(records.items()) if entries is not None}
    last = {rank: max(calls, default=0) for rank, calls in present.items()}
    first = max((min(calls) for calls in present.values() if calls), default=1)
    for k in range(first, min(last.values(), default=0) + 1):
        keys = {rank: calls.get(k) for rank, calls in present.items()}
        if len(set(keys.values())) > 1:
            counts = Counter(keys.values())
            most = max(counts.values())
            usual = next(key for key in keys.values() if counts[key] == most)   # a tie: the lowest rank's call
            return {"rank": min(r for r, key in keys.items() if key != usual), "call": k}
    silent = sorted(rank for rank, entries in records.items() if entries is None)
    if silent:
        return {"rank": silent[0], "call": max(1, min(last.values(), default=1))}
    if len(set(last.values())) > 1:
        behind = min(last.values())
        return {"rank": min(r for r, end in last.items() if end == behind), "call": behind + 1}
    return None
