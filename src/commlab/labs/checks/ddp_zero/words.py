"""What is wrong with a gradient or a parameter, in the learner's terms (which parameter, by how much, and the
likely slip: a sum not averaged, a rank's own gradient, a divisor typed as a number)."""
from __future__ import annotations

from commlab.labs.checks.ddp_zero.case import ATOL, RTOL


def close(a, b, rtol: float = RTOL, atol: float = ATOL) -> bool:
    import torch

    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=rtol, atol=atol))


def grad_words(name: str, mine, theirs, local, n_ranks: int, whose: str = "DDP's") -> str:
    """What is wrong with one parameter's gradient ('' when it agrees with ``theirs``)."""
    if mine is None:
        return f"parameter {name!r} has no gradient after your code ran (p.grad is None)"
    if mine.shape != theirs.shape:
        return f"the gradient of {name!r} has shape {tuple(mine.shape)}, {whose} {tuple(theirs.shape)}"
    if close(mine, theirs):
        return ""
    if close(mine, theirs * n_ranks):
        return (f"the gradient of {name!r} is {n_ranks} times {whose}: all_reduce sums over the ranks; divide by "
                "dist.get_world_size() to average")
    if local is not None and close(mine, local):
        return f"the gradient of {name!r} is this rank's own, never all-reduced"
    for k in (2, 3, 4):
        if k != n_ranks and close(mine, theirs * n_ranks / k):
            return (f"the gradient of {name!r} is the sum divided by {k}, on {n_ranks} ranks: divide by "
                    "dist.get_world_size(), not a number")
    diff = float((mine - theirs).abs().max())
    return f"the gradient of {name!r} differs from {whose} by up to {diff:.3g}"


def first_grad_problem(mine: dict, theirs: dict, local: dict, n_ranks: int) -> str:
    for name, want in theirs.items():
        if name not in mine:
            return f"parameter {name!r} is missing from the model after your code ran"
        words = grad_words(name, mine[name], want, local.get(name), n_ranks)
        if words:
            return words
    return ""


def first_param_problem(mine: list, theirs: list, rtol: float = RTOL, atol: float = ATOL) -> str:
    """The first step after which a parameter differs from the reference ('' when every step agrees)."""
    for step, (got, want) in enumerate(zip(mine, theirs)):
        for name, value in want.items():
            if name not in got or got[name].shape != value.shape:
                return f"after step {step + 1} parameter {name!r} is missing or has another shape"
            if not close(got[name], value, rtol, atol):
                diff = float((got[name] - value).abs().max())
                return (f"after step {step + 1} parameter {name!r} differs from the reference by up to {diff:.3g} "
                        f"(tolerance {atol:g} + {rtol:g} x |value|)")
    if len(mine) < len(theirs):
        return f"your training stopped after {len(mine)} of {len(theirs)} steps"
    return ""


def same_values(sent, want, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """``sent`` holds the values of ``want`` in any order (a bucket may lay its gradients out its own way)."""
    import torch

    if sent is None or sent.numel() != want.numel():
        return False
    a, b = torch.sort(sent.reshape(-1).float()).values, torch.sort(want.reshape(-1).float()).values
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol))
