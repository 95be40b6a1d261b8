"""Checks of the DDP-and-ZeRO lab (labs/ddp_zero.ipynb): the learner's data parallelism against torch's own.

Every check runs on real gloo ranks (:func:`commlab.labs.checking.run_checked`, with a timeout: a hang is
reported with each rank and the call it was blocked in). In each rank the reference runs first, in the
grader's own process (:mod:`.reference`: torch's DistributedDataParallel, or the unsharded Adam run), then the
learner's function runs through the harness (:mod:`commlab.labs.harness.ddp_zero`) on the same model, seed
and data: here in the notebook and the script, inside the learner's sandbox when ``commlab labs check``
grades it (the function is then a :class:`commlab.labs.remote.RemoteFunction`). The harness returns plain
values only; the collectives are judged from the record (:mod:`.traffic`): the grader's relay's when graded,
so the count, sizes, order, waits, contents and timing come from what the grader saw, never from what the
learner's process reports. The same judging code runs on both paths, so the notebook, the script and
``labs check`` say the same sentence.

- :mod:`.ddp`: naive, overlapped and bucketed DDP (the bucket rule of chapter 7 in :mod:`.buckets`);
- :mod:`.accumulation`: communication after the last micro-batch only, one large batch's gradient;
- :mod:`.zero1`: the unsharded run's training, a reduce-scatter and an all-gather of the updated shard per
  step, and the optimizer state of one shard per rank;
- :mod:`.timeline`: the notebook's profiled step; :mod:`.case`: the model, data and drawn cases.
"""
from __future__ import annotations

from commlab.labs.checking import Outcome
from commlab.labs.checks.ddp_zero.accumulation import accumulation_in_group
from commlab.labs.checks.ddp_zero.buckets import expected_buckets, expected_forward_buckets, strict_buckets
from commlab.labs.checks.ddp_zero.case import (ADAM_LR, ADAM_STATE_BYTES_PER_PARAM, ATOL, BATCH, BUCKET_CAPS, LR,
                                               MICRO_BATCHES, RTOL, STEPS, WIDTHS, Case, drawn_case, lab_model,
                                               param_nbytes, zero1_state_formula_bytes)
from commlab.labs.checks.ddp_zero.ddp import buckets_in_group, naive_in_group, overlap_in_group
from commlab.labs.checks.ddp_zero.timeline import as_timeline, backward_end_s, timeline_in_group
from commlab.labs.checks.ddp_zero.zero1 import zero1_in_group

__all__ = ["ADAM_LR", "ADAM_STATE_BYTES_PER_PARAM", "ATOL", "BATCH", "BUCKET_CAPS", "LR", "MICRO_BATCHES", "RTOL",
           "STEPS", "WIDTHS", "Case", "accumulation_in_group", "as_timeline", "backward_end_s", "buckets_in_group",
           "check_accumulate_gradients", "check_allreduce_gradients", "check_bucketed_ddp", "check_overlapped_ddp",
           "check_zero1", "drawn_case", "expected_buckets", "expected_forward_buckets", "judge", "lab_model",
           "naive_in_group", "overlap_in_group", "param_nbytes", "strict_buckets", "timeline_in_group",
           "zero1_in_group", "zero1_state_formula_bytes", "IN_GROUP", "drawn_accumulate_gradients",
           "drawn_allreduce_gradients", "drawn_bucketed_ddp", "drawn_overlapped_ddp", "drawn_zero1"]

#: The rank function of each task: ``in_group(rank, n_ranks, fn, case) -> findings`` (judged by :func:`judge`).
IN_GROUP = {"allreduce_gradients": naive_in_group, "overlapped_ddp": overlap_in_group,
            "bucketed_ddp": buckets_in_group, "accumulate_gradients": accumulation_in_group, "zero1": zero1_in_group}


def judge(values: list) -> Outcome:
    """The ranks' findings (each rank judged its own) as one Outcome: the first rank's problem, else rank 0's
    details (ZeRO-1's ``state_nbytes`` listed for every rank)."""
    for found in values:
        if found["problem"]:
            return Outcome(problem=found["problem"], backend="gloo")
    details = dict(values[0]["details"])
    if "state_nbytes" in details:
        details["state_nbytes"] = [n for found in values for n in found["details"]["state_nbytes"]]
    return Outcome(values, "", "gloo", details)


def _check(task: str, fn, case: Case, timeout_s: float) -> Outcome:
    import torch._dynamo  # noqa: F401 - DDP's constructor imports it (about 800 modules, seconds): once here, and
    #                       the forked ranks inherit it instead of each importing it again

    from commlab.labs.checking import run_checked

    outcome = run_checked(IN_GROUP[task], case.n_ranks, fn, case, what=f"{task} on {case.n_ranks} ranks",
                          timeout_s=timeout_s, backend="gloo")
    return judge(outcome.rank_values) if outcome.ok else outcome


def check_allreduce_gradients(fn, n_ranks: int = 3, timeout_s: float = 60.0, case: Case | None = None) -> Outcome:
    """Naive DDP: every gradient equal to DDP's after backward, and the parameters after every step."""
    return _check("allreduce_gradients", fn, case or Case(n_ranks), timeout_s)


def check_overlapped_ddp(fn, n_ranks: int = 2, timeout_s: float = 60.0, case: Case | None = None) -> Outcome:
    """Overlapped DDP: one asynchronous all-reduce per parameter launched during backward (before the backward
    reached the first layer, for every parameter but the first layer's), each handle waited, DDP's training."""
    return _check("overlapped_ddp", fn, case or Case(n_ranks), timeout_s)


def check_bucketed_ddp(fn, n_ranks: int = 2, caps=BUCKET_CAPS, timeout_s: float = 90.0,
                       case: Case | None = None) -> Outcome:
    """Bucketed DDP at each cap: one asynchronous all-reduce per bucket of the rule, in its order, carrying the
    bucket's gradients, launched during backward, each waited; DDP's training."""
    return _check("bucketed_ddp", fn, case or Case(n_ranks, caps=tuple(caps)), timeout_s)


def check_accumulate_gradients(fn, n_ranks: int = 2, timeout_s: float = 60.0, case: Case | None = None) -> Outcome:
    """Communication after the last micro-batch's backward only, the gradients of one large batch."""
    return _check("accumulate_gradients", fn, case or Case(n_ranks), timeout_s)


def check_zero1(fn, n_ranks: int = 3, timeout_s: float = 60.0, case: Case | None = None) -> Outcome:
    """ZeRO-1: the unsharded run's training, a reduce-scatter and an all-gather per step, and the optimizer
    state of one shard per rank (the formula, :func:`zero1_state_formula_bytes`)."""
    return _check("zero1", fn, case or Case(n_ranks), timeout_s)


# --- cases drawn when a class is graded (commlab labs check --seed): the same checks on the seed's model ---------

def drawn_allreduce_gradients(fn, seed: int) -> Outcome:
    return check_allreduce_gradients(fn, case=drawn_case(seed, "allreduce_gradients"))


def drawn_overlapped_ddp(fn, seed: int) -> Outcome:
    return check_overlapped_ddp(fn, case=drawn_case(seed, "overlapped_ddp"))


def drawn_bucketed_ddp(fn, seed: int) -> Outcome:
    return check_bucketed_ddp(fn, case=drawn_case(seed, "bucketed_ddp"))


def drawn_accumulate_gradients(fn, seed: int) -> Outcome:
    return check_accumulate_gradients(fn, case=drawn_case(seed, "accumulate_gradients"))


def drawn_zero1(fn, seed: int) -> Outcome:
    return check_zero1(fn, case=drawn_case(seed, "zero1"))
