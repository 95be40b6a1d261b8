"""Gradient accumulation: the learner's ``accumulate_gradients`` over several micro-batches against DDP on the
whole batch at once, and its collectives placed among the micro-batches' backward passes (each backward asks
the gate once, :mod:`commlab.labs.harness.ddp_zero`): communication after the last one only."""
from __future__ import annotations

from dataclasses import replace

from commlab.labs.checks.ddp_zero.case import LR, Case, gate_factors
from commlab.labs.checks.ddp_zero.reference import ddp_reference
from commlab.labs.checks.ddp_zero.traffic import run_learner, steps
from commlab.labs.checks.ddp_zero.words import close


def _grad_problem(mine: dict, want: dict, n_micro: int, n_ranks: int) -> str:
    for name, theirs in want.items():
        got = mine.get(name)
        if got is None:
            return f"parameter {name!r} has no gradient after accumulate_gradients"
        if close(got, theirs):
            continue
        if close(got, theirs * n_micro):
            return (f"the gradient of {name!r} is {n_micro} times one large batch's: divide each micro-batch's loss "
                    f"by the number of micro-batches ({n_micro})")
        if close(got, theirs * n_ranks):
            return (f"the gradient of {name!r} is {n_ranks} times one large batch's: average over the ranks (divide "
                    "the all-reduced sum by dist.get_world_size())")
        diff = float((got - theirs).abs().max()) if got.shape == theirs.shape else float("nan")
        return f"the gradient of {name!r} differs from one large batch's by up to {diff:.3g}"
    return ""


def accumulation_in_group(rank: int, n_ranks: int, fn, case: Case) -> dict:
    """Inside a rank: the learner's accumulation over the case's micro-batches against DDP on the whole batch."""
    n = case.micro_batches
    factors = gate_factors(1)
    x, y = case.batch_of(rank, 0, case.batch * n)
    ref = ddp_reference(replace(case, steps=1), rank, factors, LR, batches=[(x, y)])
    micro = [(x[k * case.batch:(k + 1) * case.batch].clone(), y[k * case.batch:(k + 1) * case.batch].clone())
             for k in range(n)]
    result, log = run_learner(fn, "ddp_zero.accumulate", factors, case.spec, micro)
    record = steps(log, 1)[0]
    found = {"rank": rank, "backend": "gloo", "problem": "", "details": {"calls": len(record.calls)}}
    if len(record.gates) < n:
        found["problem"] = (f"rank {rank}: {len(record.gates)} backward pass(es) through the model for {n} "
                            "micro-batches: run forward and backward on each micro-batch in turn")
        return found
    last = record.gates[n - 1]
    early = [pos for pos, _ in record.calls if pos < last]
    if early:
        after = sum(g < early[0] for g in record.gates)
        found["problem"] = (f"rank {rank}: {len(early)} collective call(s) before the last of {n} micro-batches (the "
                            f"first after micro-batch {after}): the gradients only need to cross the network once, "
                            "after the last one")
    elif not record.calls:
        found["problem"] = f"rank {rank}: no collective call at all: the ranks' gradients were never averaged"
    else:
        grads = result.get("grads") if isinstance(result, dict) else None
        problem = _grad_problem(grads or {}, ref["grads"][0], n, n_ranks)
        found["problem"] = f"rank {rank}: {problem}" if problem else ""
    return found
