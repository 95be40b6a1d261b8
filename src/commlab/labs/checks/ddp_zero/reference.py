"""The references, run in the grader's own rank (never in the learner's process) on the case's model, data
and gate factors: torch's ``DistributedDataParallel`` with SGD, and the unsharded run with ``torch.optim.Adam``
over every parameter (all-reduced, averaged gradients). Each also keeps this rank's *local* gradients of
every step (before any communication), which is what the learner's collectives must carry."""
from __future__ import annotations

from commlab.labs.checks.ddp_zero.case import Case
from commlab.labs.checks.ddp_zero.traffic import LocalGate
from commlab.labs.harness.ddp_zero import attach_gate, loss_fn


def _grads(model) -> dict:
    return {name: p.grad.detach().clone() for name, p in model.named_parameters()}


def _params(model) -> dict:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def _local_grads(case: Case, state: dict, x, y, factor: float) -> dict:
    model = case.model()
    model.load_state_dict(state)
    attach_gate(model, LocalGate((factor,)), [0])
    loss_fn(model(x), y).backward()
    return _grads(model)


def ddp_reference(case: Case, rank: int, factors, lr: float, batches=None) -> dict:
    """SGD with torch's DDP: {"local": [grads], "grads": [averaged grads], "params": [after each step]}."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    model, step = case.model(), [0]
    attach_gate(model, LocalGate(factors), step)
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr)
    found: dict = {"local": [], "grads": [], "params": []}
    for s, (x, y) in enumerate(batches if batches is not None else case.batches(rank)):
        step[0] = s
        found["local"].append(_local_grads(case, model.state_dict(), x, y, factors[s]))
        loss_fn(ddp(x), y).backward()
        found["grads"].append(_grads(model))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        found["params"].append(_params(model))
    return found


def adam_reference(case: Case, rank: int, factors, lr: float) -> dict:
    """Adam on every parameter with all-reduced, averaged gradients: {"local", "params"} as above."""
    import torch
    import torch.distributed as dist

    model, step = case.model(), [0]
    attach_gate(model, LocalGate(factors), step)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    found: dict = {"local": [], "params": []}
    for s, (x, y) in enumerate(case.batches(rank)):
        step[0] = s
        loss_fn(model(x), y).backward()
        found["local"].append(_grads(model))
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(case.n_ranks)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        found["params"].append(_params(model))
    return found
