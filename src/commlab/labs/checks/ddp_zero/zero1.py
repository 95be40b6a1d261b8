"""ZeRO-1: the learner's sharded Adam against the unsharded run (all-reduced gradients, ``torch.optim.Adam`` over
every parameter), its optimizer's state bytes per rank against ``2 x 4 x ceil(P / N)`` (Adam's ``exp_avg`` and
``exp_avg_sq`` in float32 for a shard of the padded parameters; Rajbhandari et al., "ZeRO", SC20, sec. 5.1:
stage 1 divides the optimizer states by the data-parallel degree), and the traffic of every step: a
reduce-scatter of this rank's own gradients, then an all-gather of *its shard of the updated parameters* (which
only a rank that stepped that shard can send, whatever its optimizer reports)."""
from __future__ import annotations

import math

from commlab.labs.checks.ddp_zero.case import (ADAM_ATOL, ADAM_LR, ADAM_RTOL, ADAM_STATE_BYTES_PER_PARAM, Case,
                                               gate_factors, zero1_state_formula_bytes)
from commlab.labs.checks.ddp_zero.reference import adam_reference
from commlab.labs.checks.ddp_zero.traffic import input_of, nbytes_of, run_learner, steps
from commlab.labs.checks.ddp_zero.words import first_param_problem, same_values

_ALLOWED = ("reduce_scatter", "all_gather", "barrier")


def _flat(tensors: dict, pad_to: int = 0):
    import torch

    flat = torch.cat([t.reshape(-1) for t in tensors.values()])
    return torch.cat([flat, torch.zeros(max(0, pad_to - flat.numel()))])


def _hint(mine: dict, start: dict, rank: int, n_ranks: int) -> str:
    """Which elements moved in the first step: only this rank's shard (the all-gather is missing), or none."""
    moved = (_flat(mine) != _flat(start)).nonzero().reshape(-1)
    if moved.numel() == 0:
        return ": no parameter of the model changed (copy the gathered parameters back into the model)"
    shard = math.ceil(_flat(start).numel() / n_ranks)
    if int(moved.min()) >= rank * shard and int(moved.max()) < (rank + 1) * shard:
        return (f": only the elements of rank {rank}'s own shard changed; all-gather the updated shards so every rank "
                "has every parameter")
    return ""


def _calls_problem(rank: int, records) -> str:
    for step in records:
        names = [e["name"] for _, e in step.calls]
        made = ", ".join(f"{names.count(n)} x {n}" for n in dict.fromkeys(names)) or "no collective call"
        scatter = [e for _, e in step.calls if e["name"].startswith("reduce_scatter")]
        gather = [e for _, e in step.calls if e["name"].startswith("all_gather")]
        if not scatter:
            return (f"rank {rank}: the step made {made}; ZeRO-1 reduce-scatters the gradients "
                    "(dist.reduce_scatter_single), so each rank receives only its shard's sum")
        if not gather:
            return (f"rank {rank}: the step made {made}; after stepping its shard each rank all-gathers the parameters "
                    "(dist.all_gather_single)")
        other = [n for n in names if not n.startswith(_ALLOWED)]
        if other:
            return (f"rank {rank}: the step made {made}; in ZeRO-1 a rank receives only its shard's gradient sum "
                    f"(the reduce-scatter), and a {other[0]} of the gradients gives it every gradient again")
    return ""


def _content_problem(rank: int, records, ref: dict, n_ranks: int, n_params: int) -> str:
    shard = math.ceil(n_params / n_ranks)
    for s, step in enumerate(records):
        scatter = [e for _, e in step.calls if e["name"].startswith("reduce_scatter")]
        gather = [e for _, e in step.calls if e["name"].startswith("all_gather")]
        if not same_values(input_of(scatter[0]), _flat(ref["local"][s], shard * n_ranks)):
            return (f"rank {rank}, step {s + 1}: the reduce-scatter does not carry this rank's gradients (every "
                    f"p.grad, flattened and padded to {shard * n_ranks} elements)")
        mine = _flat(ref["params"][s], shard * n_ranks)[rank * shard:(rank + 1) * shard]
        if not same_values(input_of(gather[-1]), mine, ADAM_RTOL, ADAM_ATOL):
            return (f"rank {rank}, step {s + 1}: what this rank all-gathers ({nbytes_of(gather[-1])} bytes) is not its "
                    f"shard of the updated parameters (elements {rank * shard} to {(rank + 1) * shard - 1} of the "
                    "flattened model): step the shard with its own optimizer, then all-gather the parameters")
    return ""


def zero1_in_group(rank: int, n_ranks: int, fn, case: Case) -> dict:
    """Inside a rank: the learner's ZeRO-1 against the unsharded Adam run; judged here."""
    factors = gate_factors(case.steps)
    ref = adam_reference(case, rank, factors, ADAM_LR)
    batches = [(x.clone(), y.clone()) for x, y in case.batches(rank)]
    result, log = run_learner(fn, "ddp_zero.zero1", factors, case.spec, batches, lr=ADAM_LR)
    records = steps(log, case.steps)
    start = {n: p.detach() for n, p in case.model().named_parameters()}
    n_params = sum(t.numel() for t in start.values())
    formula = zero1_state_formula_bytes(n_params, n_ranks)
    found: dict = {"rank": rank, "backend": "gloo", "problem": "",
             "details": {"state_nbytes": [], "formula_nbytes": formula, "n_params": n_params,
                         "unsharded_nbytes": ADAM_STATE_BYTES_PER_PARAM * n_params,
                         "calls": [(e["name"], nbytes_of(e)) for _, e in records[0].calls]}}
    if not isinstance(result, dict) or "problem" in result:
        found["problem"] = f"rank {rank}: {result.get('problem') if isinstance(result, dict) else result!r}"
        return found
    params = result.get("params") or []
    problem = first_param_problem(params, ref["params"], ADAM_RTOL, ADAM_ATOL)
    if problem and problem.startswith("after step 1 ") and params:
        problem += _hint(params[0], start, rank, n_ranks)
    state = result.get("state_nbytes")
    state = int(state) if isinstance(state, int) and not isinstance(state, bool) else -1
    found["details"]["state_nbytes"] = [state]
    if not problem:
        problem = _calls_problem(rank, records)
    if not problem and state > formula:
        extra = " (the whole model's: the optimizer sees every parameter)" if state >= 8 * n_params else ""
        problem = (f"its optimizer holds {state} bytes of state{extra}; one shard's is {ADAM_STATE_BYTES_PER_PARAM} x "
                   f"ceil({n_params}/{n_ranks}) = {formula} bytes")
    if not problem and state <= 0:
        problem = (f"its optimizer holds no state after {case.steps} steps: did optimizer.step() run on the shard?")
    if not problem:
        problem = _content_problem(rank, records, ref, n_ranks, n_params)
    if problem and not problem.startswith("rank "):
        problem = f"rank {rank}: {problem}"
    found["problem"] = problem
    return found
