"""The DDP-and-ZeRO lab's training steps, run on the learner's functions (in the notebook's rank, or inside the
learner's sandbox when a class is graded): the model is built here from a :class:`ModelSpec`, the data comes
as tensors, and only plain values go back (gradients of the first step, parameters after every step, the
optimizer state's bytes).

The gate: a forward hook on the first layer multiplies the gradient flowing back into it by a factor that only
the grader knows, and that the gate asks for (``gate.factor(step)``) when the backward reaches it. So the grader
sees, in the order of its relay's record, which collectives the learner's code launched before the backward
reached the first layer (they overlap the backward), and the first layer's gradients are right only if the
gate was asked (a learner's code cannot skip it, nor ask early without its collectives then falling after it).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """Linear layers of these widths with a ReLU between two, initialised by torch's seed ``seed``."""

    widths: tuple[int, ...]
    seed: int = 0

    def __post_init__(self):
        if len(self.widths) < 2 or any(not isinstance(w, int) or w < 1 for w in self.widths):
            raise ValueError(f"widths must be at least two whole numbers >= 1, got {self.widths!r}")

    def build(self):
        import torch
        import torch.nn as nn

        torch.manual_seed(self.seed)
        layers: list = []
        for i, (n_in, n_out) in enumerate(zip(self.widths[:-1], self.widths[1:])):
            layers += [nn.Linear(n_in, n_out)] + ([nn.ReLU()] if i < len(self.widths) - 2 else [])
        return nn.Sequential(*layers)


def loss_fn(out, y):
    import torch.nn.functional as F

    return F.cross_entropy(out, y)


class SandboxGate:
    """The gate's questions, sent to the grader from inside the sandbox (the grader answers and records them)."""

    def factor(self, step: int) -> float:
        from commlab.labs import sandboxed

        return float(sandboxed.ask("gate", int(step))["factor"])

    def mark(self, what: str, step: int) -> None:
        from commlab.labs import sandboxed

        sandboxed.ask("mark", str(what), int(step))


def attach_gate(model, gate, step: list) -> None:
    """Scale the gradient into the first layer's output by ``gate.factor(step[0])`` (asked during backward)."""
    import torch

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad * gate.factor(step[0])

    model[0].register_forward_hook(lambda _module, _inputs, out: Scale.apply(out))


def _grads(model) -> dict:
    return {name: (None if p.grad is None else p.grad.detach().clone()) for name, p in model.named_parameters()}


def _params(model) -> dict:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def train_ddp(fn, kind: str, spec: ModelSpec, batches, gate, lr: float, cap_bytes: int = 0) -> dict:
    """SGD for ``len(batches)`` steps with the learner's DDP: ``kind`` naive (``fn(model)`` after backward),
    overlap (``finish = fn(model)``) or buckets (``finish = fn(model, cap_bytes)``), ``finish()`` after
    backward. {"problem"} or {"grads": first step's, "params": after each step}."""
    import torch

    model, step = spec.build(), [0]
    attach_gate(model, gate, step)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    finish = None
    if kind == "overlap":
        finish = fn(model)
    elif kind == "buckets":
        finish = fn(model, cap_bytes)
    if kind != "naive" and not callable(finish):
        return {"problem": f"your function returned {finish!r}; it must return finish, a function"}
    grads, params = {}, []
    for s, (x, y) in enumerate(batches):
        step[0] = s
        gate.mark("step", s)
        loss_fn(model(x), y).backward()
        if kind == "naive":
            fn(model)
        else:
            finish()                                   # type: ignore[misc]
        gate.mark("optimizer", s)
        if s == 0:
            grads = _grads(model)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        params.append(_params(model))
    return {"grads": grads, "params": params}


def accumulate(fn, spec: ModelSpec, micro_batches, gate) -> dict:
    """The learner's ``fn(model, micro_batches, loss_fn)`` once: {"grads"} (every micro-batch's backward asks
    the gate of step 0)."""
    model = spec.build()
    attach_gate(model, gate, [0])
    gate.mark("step", 0)
    fn(model, list(micro_batches), loss_fn)
    gate.mark("optimizer", 0)
    return {"grads": _grads(model)}


def train_zero1(fn, spec: ModelSpec, batches, gate, lr: float) -> dict:
    """``step, optimizer = fn(model, lr)``, then ``step()`` after each backward: {"problem"} or {"params": after
    each step, "state_nbytes": the tensors of the optimizer's state but its step counts}."""
    import torch

    model, step = spec.build(), [0]
    attach_gate(model, gate, step)
    made = fn(model, lr)
    if not (isinstance(made, tuple) and len(made) == 2 and callable(made[0])):
        return {"problem": f"zero1 must return (step, optimizer); got {type(made).__name__}"}
    step_fn, optimizer = made
    params = []
    for s, (x, y) in enumerate(batches):
        step[0] = s
        gate.mark("step", s)
        loss_fn(model(x), y).backward()
        step_fn()
        gate.mark("optimizer", s)
        for p in model.parameters():
            p.grad = None
        params.append(_params(model))
    state = getattr(optimizer, "state", None)
    if state is None or not hasattr(state, "values"):
        return {"problem": f"the second value zero1 returns must be a torch optimizer, got {optimizer!r}"}
    nbytes = sum(int(t.numel() * t.element_size()) for s in state.values() for key, t in s.items()
                 if key != "step" and isinstance(t, torch.Tensor))
    return {"params": params, "state_nbytes": int(nbytes)}
