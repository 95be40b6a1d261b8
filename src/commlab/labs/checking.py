"""Running a reader's code on real ranks for a lab, and saying in words what went wrong.

Every lab's check cell ends in ``assert outcome.ok, outcome.problem``: :func:`run_checked` launches the reader's
function through :func:`commlab.launch.run` with a timeout and turns a failure into one sentence (a deadlock
names the ranks and the torch.distributed call each was blocked in; a ``NotImplementedError`` says the cell is
not written yet).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Outcome:
    """What a check found: the ranks' values when it ran, or the problem in words."""

    values: list | None = None
    problem: str = ""
    backend: str = ""
    details: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problem

    @property
    def rank_values(self) -> list:
        """``values``, of a check whose ranks ran to the end (``run_checked`` gives them whenever ``ok``)."""
        if self.values is None:
            raise RuntimeError(f"the ranks returned no values: {self.problem or 'the check did not run'}")
        return self.values


_TORCH_CALL = re.compile(r"torch/distributed/distributed_c10d\.py\", line \d+,? in (\w+)")
_ANY_FRAME = re.compile(r"File \"[^\"]*\", line (\d+),? in (\w+)")


def blocked_in(detail: str) -> str:
    """The torch.distributed call a rank's stack or traceback shows it in: "dist.send", "dist.gather", ...

    >>> blocked_in('  File "/x/torch/distributed/distributed_c10d.py", line 2753 in send\\n  File "cell", line 9 in f')
    'dist.send'
    """
    found = _TORCH_CALL.findall(detail.replace("\\", "/"))
    if found:
        return f"dist.{found[0]}"
    frame = _ANY_FRAME.search(detail)  # a wait() on a request has no Python frame of torch's: name the line
    return f"{frame.group(2)} (line {frame.group(1)})" if frame else "an unknown place"


_GLOG_PREFIX = re.compile(r"\[rank\d+\]:\[[A-Z]\d{4} [^\]]*\] ")


def _without_glog(summary: str) -> str:
    """Drop C++ logging prefixes ("[rank0]:[F1129 10:01:02.3 ProcessGroupGloo.cpp:1537] ") from a message.

    >>> _without_glog("[rank0]:[F1129 10:01:02.123 ProcessGroupGloo.cpp:1537] Check failed: a == b (32 vs. 8)")
    'Check failed: a == b (32 vs. 8)'
    """
    return _GLOG_PREFIX.sub("", summary)


def describe_failure(err, what: str, timeout_s: float) -> str:
    """A commlab.launch.RankError in a learner's words: a deadlock with the ranks named, or the exception."""
    if err.timed_out:
        hung = sorted((f for f in err.failures if f.kind == "timeout"), key=lambda f: f.rank)
        calls = {blocked_in(f.detail) for f in hung}
        if calls == {"dist.send"}:
            why = ("A rank waits in send until its peer posts the matching recv; if every rank sends first, nobody "
                   "ever reaches its recv.")
        elif calls == {"dist.barrier"}:
            why = ("Every rank got past your function but its messages never completed: with isend/irecv, call "
                   ".wait() on each request before returning (or a message went to a rank that never receives it).")
        else:
            why = ("Each call waits for a partner: a message another rank never sends, or a collective that some "
                   "rank never enters (every rank must make the same collective calls in the same order).")
        where = "; ".join(f"rank {f.rank} in {blocked_in(f.detail)}" for f in hung)
        return f"{what} did not finish within {timeout_s:g} s: a deadlock. The ranks were blocked: {where}. {why}"
    first = err.failures[0]
    if first.summary.startswith("NotImplementedError"):
        return (f"{what}: the function is not written yet ({first.summary}); fill in the cell marked "
                "'your turn', run it, then run this check again")
    return f"{what} failed on rank {first.rank}: {_without_glog(first.summary)}"


def run_checked(fn, n_ranks: int, *args, what: str, timeout_s: float = 30.0, backend: str = "auto") -> Outcome:
    """``commlab.launch.run(fn, n_ranks, *args)``; a failure or a timeout becomes ``Outcome.problem``."""
    from commlab.launch import RankError, run

    try:
        values = run(fn, n_ranks, *args, backend=backend, timeout_s=timeout_s, verbose=False)
    except RankError as err:
        return Outcome(problem=describe_failure(err, what, timeout_s), backend=err.backend)
    return Outcome(values=list(values), backend=values[0]["backend"] if isinstance(values[0], dict) else "")


def device_and_sync():
    """(where this rank's tensors go, how to wait for its GPU): its current GPU under NCCL, else the CPU."""
    import torch
    import torch.distributed as dist

    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device()), torch.cuda.synchronize
    return torch.device("cpu"), (lambda: None)
