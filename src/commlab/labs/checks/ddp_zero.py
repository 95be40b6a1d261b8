"""Checks of the DDP-and-ZeRO lab (labs/ddp_zero.ipynb): the learner's data parallelism against torch's own.

Every check runs the learner's code on real gloo ranks (:func:`commlab.labs.checking.run_checked`, with a timeout:
a hang is reported with each rank and the call it was blocked in) beside an independent reference on the same
model, seed and data:

- naive, overlapped and bucketed DDP against ``torch.nn.parallel.DistributedDataParallel``: the gradients of the
  first step parameter by parameter, then the parameters after :data:`STEPS` SGD steps, within :data:`RTOL` and
  :data:`ATOL` (float32: the ranks' sums may be added in another order than DDP's buckets add them);
- gradient accumulation against DDP on the whole batch at once;
- ZeRO-1 against the unsharded run (all-reduced gradients, ``torch.optim.Adam`` over every parameter), and its
  optimizer's state bytes per rank against the formula ``2 x 4 x ceil(P / N)`` (Adam's ``exp_avg`` and
  ``exp_avg_sq`` in float32 for a shard of the padded parameters; ZeRO paper, sec. 5.1: stage 1 divides the
  optimizer states by the data-parallel degree).

While the learner's code runs, :class:`Recorder` wraps ``torch.distributed``'s collectives in that rank: each call
is kept with its bytes, whether it was asynchronous, when it was made (in the backward pass or after it, at
which micro-batch) and whether its handle was waited, so that the check can say "an all-reduce started after
backward", "a handle never waited" or "a bucket in the wrong order" in the learner's terms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from commlab.labs.checking import Outcome

#: The lab's model: linear layers of these widths with ReLUs between them (11,017 parameters: 2, 3 and 4 ranks
#: divide it unevenly, so ZeRO-1's shards need padding).
WIDTHS = (32, 64, 64, 64, 9)
BATCH = 8
STEPS = 3
LR = 0.1
ADAM_LR = 1e-2
#: Parameters agree with the reference when |mine - theirs| <= ATOL + RTOL |theirs| (torch.allclose's rule).
RTOL, ATOL = 1e-5, 1e-6
#: Bucket caps the bucketed check uses, in bytes: a bucket per parameter or two, a few buckets, one bucket.
BUCKET_CAPS = (1024, 16 * 1024, 2**20)
MICRO_BATCHES = 4
#: Adam keeps two float32 tensors per parameter element (exp_avg, exp_avg_sq): torch/optim/adam.py.
ADAM_STATE_BYTES_PER_PARAM = 2 * 4
COLLECTIVES = ("all_reduce", "reduce_scatter_single", "reduce_scatter_tensor", "reduce_scatter", "all_gather_single",
               "all_gather_into_tensor", "all_gather", "broadcast")


def lab_model():
    """The lab's model, the same initial weights on every rank (torch's seed 0)."""
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    layers: list = []
    for i, (n_in, n_out) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:])):
        layers += [nn.Linear(n_in, n_out)] + ([nn.ReLU()] if i < len(WIDTHS) - 2 else [])
    return nn.Sequential(*layers)


def batch(rank: int, step: int, n: int = BATCH):
    """This rank's batch of one step: each rank its own data, as in data parallelism."""
    import torch

    gen = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(n, WIDTHS[0], generator=gen), torch.randint(0, WIDTHS[-1], (n,), generator=gen)


def loss_fn(out, y):
    import torch.nn.functional as F

    return F.cross_entropy(out, y)


def param_nbytes(model) -> list[int]:
    return [p.numel() * p.element_size() for p in model.parameters()]


def expected_buckets(nbytes: list[int], cap_bytes: int) -> list[list[int]]:
    """The rule of chapter 7, as torch's reducer applies it: torch's own
    ``dist._compute_bucket_assignment_by_size`` on the parameters in reverse order, every bucket's limit ``cap``."""
    import torch
    import torch.distributed as dist

    tensors = [torch.empty(n // 4) for n in nbytes]
    order = list(reversed(range(len(nbytes))))
    buckets, _ = dist._compute_bucket_assignment_by_size([tensors[i] for i in order], [cap_bytes, cap_bytes],
                                                        [False] * len(nbytes), order)
    return [list(b) for b in buckets]


def zero1_state_formula_bytes(n_params: int, n_ranks: int) -> int:
    """Adam's state on one rank under ZeRO-1: 2 float32 values for each of the ceil(P/N) elements of its shard."""
    return ADAM_STATE_BYTES_PER_PARAM * math.ceil(n_params / n_ranks)


# --- recording the learner's collectives, inside a rank ------------------------------------------------------


@dataclass
class Call:
    name: str
    nbytes: int
    async_op: bool
    phase: str
    micro_batch: int
    waited: bool = False
    tensor_id: int = 0


class _Handle:
    """A torch Work, with its wait() noted."""

    def __init__(self, work, call: Call):
        self._work, self._call = work, call

    def wait(self, *args, **kwargs):
        self._call.waited = True
        return self._work.wait(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._work, name)


@dataclass
class Recorder:
    """Wraps torch.distributed's collectives while active; ``phase`` and ``micro_batch`` are set by the check."""

    calls: list = field(default_factory=list)
    phase: str = "outside"
    micro_batch: int = 0
    _saved: dict = field(default_factory=dict)

    def __enter__(self):
        import torch.distributed as dist

        for name in COLLECTIVES:
            original = getattr(dist, name, None)
            if original is not None:
                self._saved[name] = original
                setattr(dist, name, self._wrap(name, original))
        return self

    def __exit__(self, *exc):
        import torch.distributed as dist

        for name, original in self._saved.items():
            setattr(dist, name, original)

    def _wrap(self, name, original):
        def recorded(tensor, *args, **kwargs):
            import torch

            async_op = bool(kwargs.get("async_op", False))
            nbytes = tensor.numel() * tensor.element_size() if isinstance(tensor, torch.Tensor) else 0
            if name.startswith("reduce_scatter") and len(args) > 0 and isinstance(args[0], torch.Tensor):
                nbytes = args[0].numel() * args[0].element_size()           # the whole input
            call = Call(name, nbytes, async_op, self.phase, self.micro_batch, waited=not async_op,
                        tensor_id=id(tensor))
            self.calls.append(call)
            work = original(tensor, *args, **kwargs)
            return _Handle(work, call) if async_op and work is not None else work

        recorded.__name__ = name
        return recorded

    def take(self) -> list:
        taken, self.calls = self.calls, []
        return taken


def _named_grads(model) -> dict:
    return {name: (None if p.grad is None else p.grad.detach().clone()) for name, p in model.named_parameters()}


def _params(model) -> dict:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def _grad_words(name: str, mine, theirs, local, n_ranks: int) -> str:
    """What is wrong with one parameter's gradient, in the learner's terms ('' when it agrees)."""
    import torch

    if mine is None:
        return f"parameter {name!r} has no gradient after your code ran (p.grad is None)"
    if mine.shape != theirs.shape:
        return f"the gradient of {name!r} has shape {tuple(mine.shape)}, DDP's {tuple(theirs.shape)}"
    if torch.allclose(mine, theirs, rtol=RTOL, atol=ATOL):
        return ""
    if torch.allclose(mine, theirs * n_ranks, rtol=RTOL, atol=ATOL):
        return (f"the gradient of {name!r} is {n_ranks} times DDP's: all_reduce sums over the ranks; divide by "
                "dist.get_world_size() to average")
    if local is not None and torch.allclose(mine, local, rtol=RTOL, atol=ATOL):
        return f"the gradient of {name!r} is this rank's own, never all-reduced"
    for k in (2, 3, 4):
        if k != n_ranks and torch.allclose(mine, theirs * n_ranks / k, rtol=RTOL, atol=ATOL):
            return (f"the gradient of {name!r} is the sum divided by {k}, on {n_ranks} ranks: divide by "
                    "dist.get_world_size(), not a number")
    diff = float((mine - theirs).abs().max())
    return f"the gradient of {name!r} differs from DDP's by up to {diff:.3g}"


def _first_grad_problem(mine: dict, theirs: dict, local: dict, n_ranks: int) -> str:
    for name, want in theirs.items():
        words = _grad_words(name, mine.get(name), want, local.get(name), n_ranks)
        if words:
            return words
    return ""


def _first_param_problem(mine: dict, theirs: dict, step: int) -> str:
    import torch

    for name, want in theirs.items():
        if not torch.allclose(mine[name], want, rtol=RTOL, atol=ATOL):
            diff = float((mine[name] - want).abs().max())
            return (f"after step {step} parameter {name!r} differs from the reference by up to {diff:.3g} "
                    f"(tolerance {ATOL:g} + {RTOL:g} x |value|)")
    return ""


def ddp_in_group(rank: int, n_ranks: int, task: str, fn, cap_bytes: int = 0) -> dict:
    """Inside a rank: the learner's version of DDP (``task``: naive, overlap, buckets) beside torch's DDP on the
    same model and data for STEPS SGD steps; what was wrong first, and the collectives of each step."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    reference, mine, local = DDP(lab_model()), lab_model(), lab_model()
    opt_ref = torch.optim.SGD(reference.parameters(), lr=LR)
    opt_mine = torch.optim.SGD(mine.parameters(), lr=LR)
    found: dict = {"rank": rank, "backend": "gloo", "grad_problem": "", "param_problem": "", "steps": []}
    with Recorder() as rec:
        finish = None
        if task == "overlap":
            finish = fn(mine)
        elif task == "buckets":
            finish = fn(mine, cap_bytes)
        if task != "naive" and not callable(finish):
            found["grad_problem"] = f"your function returned {finish!r}; it must return finish, a function"
            return found
        rec.take()
        for step in range(STEPS):
            x, y = batch(rank, step)
            loss_fn(reference(x), y).backward()
            if step == 0:
                loss_fn(local(x), y).backward()
            rec.phase = "forward"
            loss = loss_fn(mine(x), y)
            rec.phase = "backward"
            loss.backward()
            grad_names = {id(p.grad): name for name, p in mine.named_parameters()}
            rec.phase = "after backward"
            if task == "naive":
                fn(mine)
            else:
                finish()                                   # type: ignore[misc]
            rec.phase = "outside"
            calls = rec.take()
            found["steps"].append([(c.name, c.nbytes, c.async_op, c.phase, c.waited, grad_names.get(c.tensor_id))
                                   for c in calls])
            if step == 0 and not found["grad_problem"]:
                found["grad_problem"] = _first_grad_problem(_named_grads(mine), _named_grads(reference.module),
                                                            _named_grads(local), n_ranks)
            opt_ref.step()
            opt_mine.step()
            opt_ref.zero_grad(set_to_none=True)
            opt_mine.zero_grad(set_to_none=True)
            if not found["param_problem"]:
                found["param_problem"] = _first_param_problem(_params(mine), _params(reference.module), step + 1)
    return found


def _launch(what: str, fn_in_group, n_ranks: int, *args, timeout_s: float):
    import torch._dynamo  # noqa: F401 - DDP's constructor imports it (about 800 modules, seconds): once here, and
    #                       the forked ranks inherit it instead of each importing it again

    from commlab.labs.checking import run_checked

    return run_checked(fn_in_group, n_ranks, *args, what=what, timeout_s=timeout_s, backend="gloo")


def _param_names() -> list[str]:
    return [name for name, _ in lab_model().named_parameters()]


def _common_problem(found: dict) -> str:
    if found["grad_problem"]:
        return f"rank {found['rank']}: {found['grad_problem']}"
    if found["param_problem"]:
        return f"rank {found['rank']}: {found['param_problem']}"
    return ""


def check_allreduce_gradients(fn, n_ranks: int = 3, timeout_s: float = 60.0) -> Outcome:
    """Naive DDP: every gradient equal to DDP's after backward, and the parameters after STEPS steps."""
    outcome = _launch(f"allreduce_gradients on {n_ranks} ranks", ddp_in_group, n_ranks, "naive", fn,
                      timeout_s=timeout_s)
    return judge_naive(outcome.rank_values) if outcome.ok else outcome


def judge_naive(values: list) -> Outcome:
    """The ranks' findings (:func:`ddp_in_group`) of naive DDP in words (the script judges its own rank's)."""
    for found in values:
        problem = _common_problem(found)
        if problem:
            return Outcome(problem=problem, backend="gloo")
    return Outcome(values, "", "gloo", {"calls_per_step": len(values[0]["steps"][0])})


def _unwaited(found: dict) -> str:
    for step, calls in enumerate(found["steps"]):
        left = [i for i, call in enumerate(calls) if call[2] and not call[4]]
        if left:
            param = calls[left[0]][5]
            which = f" (the one for parameter {param!r})" if param else ""
            return (f"rank {found['rank']}, step {step + 1}: {len(left)} of {len(calls)} all-reduce handles were "
                    f"never waited before the optimizer step{which}: call .wait() on every handle in finish()")
    return ""


def _overlap_problem(found: dict, expected_calls: int, unit: str) -> str:
    """The calls of step 1: asynchronous, launched during backward, the right number."""
    calls = found["steps"][0]
    reduces = [c for c in calls if c[0] == "all_reduce"]
    if not reduces:
        return f"rank {found['rank']}: no dist.all_reduce call in a step (other calls: {[c[0] for c in calls]})"
    during = [c for c in reduces if c[3] == "backward"]
    if not during:
        return (f"rank {found['rank']}: all {len(reduces)} all-reduces started after loss.backward() returned: "
                "launch each from a hook (p.register_post_accumulate_grad_hook) so it overlaps the rest of backward")
    blocking = [c for c in reduces if not c[2]]
    if blocking:
        return (f"rank {found['rank']}: {len(blocking)} all-reduce(s) without async_op=True: each blocks the "
                "backward until it is done, so nothing overlaps; pass async_op=True and keep the handle")
    if len(reduces) != expected_calls:
        return (f"rank {found['rank']}: {len(reduces)} all-reduces per step; expected {expected_calls} ({unit}); "
                "a hook registered twice, or a gradient sent twice?")
    return _unwaited(found)


def check_overlapped_ddp(fn, n_ranks: int = 2, timeout_s: float = 60.0) -> Outcome:
    """Overlapped DDP: one asynchronous all-reduce per parameter launched during backward, each handle waited,
    the same training as DDP."""
    outcome = _launch(f"overlapped_ddp on {n_ranks} ranks", ddp_in_group, n_ranks, "overlap", fn,
                      timeout_s=timeout_s)
    return judge_overlap(outcome.rank_values) if outcome.ok else outcome


def judge_overlap(values: list) -> Outcome:
    """The ranks' findings of overlapped DDP in words."""
    n_params = len(_param_names())
    for found in values:
        problem = _overlap_problem(found, n_params, "one per parameter") or _common_problem(found)
        if problem:
            return Outcome(problem=problem, backend="gloo")
    calls = values[0]["steps"][0]
    return Outcome(values, "", "gloo", {"during_backward": sum(c[3] == "backward" for c in calls),
                                        "calls": len(calls)})


def _bucket_words(got: list[int], want: list[list[int]], nbytes: list[int], cap: int) -> str:
    want_sizes = [sum(nbytes[i] for i in b) for b in want]
    if got == want_sizes:
        return ""
    forward = [sum(nbytes[i] for i in b) for b in expected_forward_buckets(nbytes, cap)]
    if got == forward or (sorted(got) == sorted(want_sizes) and got != want_sizes):
        return (f"your buckets go in the wrong order: the first all-reduce carries {got[0]} bytes, the rule's first "
                f"bucket {want_sizes[0]} (the last layers' gradients, ready first): fill buckets in reverse order of "
                "model.parameters()")
    strict = [sum(nbytes[i] for i in b) for b in _strict_buckets(nbytes, cap)]
    if got == strict:
        return ("you close a bucket before a parameter would take it past the cap; torch adds the parameter and "
                "closes the bucket once it holds at least the cap (>=), so a bucket may overshoot it")
    if len(got) != len(want_sizes):
        return (f"{len(got)} all-reduces per step at a cap of {cap} bytes; the rule gives {len(want_sizes)} buckets "
                f"of {want_sizes} bytes")
    k = next(i for i, (g, w) in enumerate(zip(got, want_sizes)) if g != w)
    return f"bucket {k} holds {got[k]} bytes; the rule gives {want_sizes[k]} (parameters {want[k]})"


def expected_forward_buckets(nbytes: list[int], cap: int) -> list[list[int]]:
    """The same rule in registration order (a learner's likely slip)."""
    buckets, current, size = [], [], 0
    for i in range(len(nbytes)):
        current.append(i)
        size += nbytes[i]
        if size >= cap:
            buckets.append(current)
            current, size = [], 0
    return buckets + ([current] if current else [])


def _strict_buckets(nbytes: list[int], cap: int) -> list[list[int]]:
    buckets: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i in reversed(range(len(nbytes))):
        if current and size + nbytes[i] > cap:
            buckets.append(current)
            current, size = [], 0
        current.append(i)
        size += nbytes[i]
    return buckets + ([current] if current else [])


def buckets_in_group(rank: int, n_ranks: int, fn, caps) -> list[dict]:
    """Inside a rank: :func:`ddp_in_group` for the bucketed version at each cap, on fresh models."""
    return [dict(ddp_in_group(rank, n_ranks, "buckets", fn, cap), cap=cap) for cap in caps]


def check_bucketed_ddp(fn, n_ranks: int = 2, caps=BUCKET_CAPS, timeout_s: float = 90.0) -> Outcome:
    """Bucketed DDP at each cap: one asynchronous all-reduce per bucket of the rule, in its order, during backward,
    each waited; the same training as DDP."""
    outcome = _launch(f"bucketed_ddp on {n_ranks} ranks", buckets_in_group, n_ranks, fn, tuple(caps),
                      timeout_s=timeout_s)
    return judge_buckets(outcome.rank_values, caps) if outcome.ok else outcome


def judge_buckets(values: list, caps=BUCKET_CAPS) -> Outcome:
    """The ranks' findings of bucketed DDP (:func:`buckets_in_group`) in words."""
    nbytes = param_nbytes(lab_model())
    rows = []
    for k, cap in enumerate(caps):
        want = expected_buckets(nbytes, cap)
        for per_rank in values:
            found = per_rank[k]
            if found["grad_problem"] and not found["steps"]:
                return Outcome(problem=f"rank {found['rank']}: {found['grad_problem']}", backend="gloo")
            got = [c[1] for c in found["steps"][0] if c[0] == "all_reduce"]
            problem = _bucket_words(got, want, nbytes, cap)
            if problem:
                return Outcome(problem=f"bucket cap {cap} bytes, rank {found['rank']}: {problem}", backend="gloo")
            problem = _overlap_problem(found, len(want), "one per bucket") or _common_problem(found)
            if problem:
                return Outcome(problem=f"bucket cap {cap} bytes, {problem}", backend="gloo")
        rows.append((cap, want, [c[1] for c in values[0][k]["steps"][0]]))
    return Outcome(values, "", "gloo", {"buckets": rows})


# --- gradient accumulation ----------------------------------------------------------------------------------


def accumulation_in_group(rank: int, n_ranks: int, fn, n_micro: int = MICRO_BATCHES) -> dict:
    """Inside a rank: the learner's accumulation over n_micro micro-batches against DDP on the whole batch."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    reference, mine = DDP(lab_model()), lab_model()
    x, y = batch(rank, 0, BATCH * n_micro)
    loss_fn(reference(x), y).backward()
    micro = [(x[k * BATCH:(k + 1) * BATCH], y[k * BATCH:(k + 1) * BATCH]) for k in range(n_micro)]
    found: dict = {"rank": rank, "backend": "gloo", "grad_problem": ""}
    with Recorder() as rec:
        def count(_module, _inputs):
            rec.micro_batch += 1

        hook = mine.register_forward_pre_hook(count)
        fn(mine, micro, loss_fn)
        hook.remove()
        calls = rec.take()
    found["calls"] = [(c.name, c.micro_batch) for c in calls]
    mine_grads, want = _named_grads(mine), _named_grads(reference.module)
    for name, theirs in want.items():
        got = mine_grads[name]
        if got is None:
            found["grad_problem"] = f"parameter {name!r} has no gradient after accumulate_gradients"
            break
        if torch.allclose(got, theirs, rtol=RTOL, atol=ATOL):
            continue
        if torch.allclose(got, theirs * n_micro, rtol=RTOL, atol=ATOL):
            found["grad_problem"] = (f"the gradient of {name!r} is {n_micro} times one large batch's: divide each "
                                     f"micro-batch's loss by the number of micro-batches ({n_micro})")
        elif torch.allclose(got, theirs * n_ranks, rtol=RTOL, atol=ATOL):
            found["grad_problem"] = (f"the gradient of {name!r} is {n_ranks} times one large batch's: average over "
                                     "the ranks (divide the all-reduced sum by dist.get_world_size())")
        else:
            found["grad_problem"] = (f"the gradient of {name!r} differs from one large batch's by up to "
                                     f"{float((got - theirs).abs().max()):.3g}")
        break
    return found


def check_accumulate_gradients(fn, n_ranks: int = 2, timeout_s: float = 60.0) -> Outcome:
    """Communication on the last micro-batch only, the gradients of one large batch."""
    outcome = _launch(f"accumulate_gradients on {n_ranks} ranks", accumulation_in_group, n_ranks, fn,
                      timeout_s=timeout_s)
    return judge_accumulation(outcome.rank_values) if outcome.ok else outcome


def judge_accumulation(values: list) -> Outcome:
    """The ranks' findings of gradient accumulation (:func:`accumulation_in_group`) in words."""
    for found in values:
        early = [mb for _, mb in found["calls"] if mb < MICRO_BATCHES]
        if early:
            return Outcome(problem=f"rank {found['rank']}: {len(early)} collective call(s) before the last of "
                                   f"{MICRO_BATCHES} micro-batches (the first after micro-batch {early[0]}): the "
                                   "gradients only need to cross the network once, after the last one",
                           backend="gloo")
        if not found["calls"]:
            return Outcome(problem=f"rank {found['rank']}: no collective call at all: the ranks' gradients were "
                                   "never averaged", backend="gloo")
        if found["grad_problem"]:
            return Outcome(problem=f"rank {found['rank']}: {found['grad_problem']}", backend="gloo")
    return Outcome(values, "", "gloo", {"calls": len(values[0]["calls"])})


# --- ZeRO-1 -------------------------------------------------------------------------------------------------


def zero1_in_group(rank: int, n_ranks: int, fn) -> dict:
    """Inside a rank: the learner's ZeRO-1 against the unsharded run (all-reduce, Adam on every parameter)."""
    import torch
    import torch.distributed as dist

    mine, reference = lab_model(), lab_model()
    opt_ref = torch.optim.Adam(reference.parameters(), lr=ADAM_LR)
    found: dict = {"rank": rank, "backend": "gloo", "problem": "", "calls": [], "state_nbytes": 0}
    with Recorder() as rec:
        made = fn(mine, ADAM_LR)
        if not (isinstance(made, tuple) and len(made) == 2 and callable(made[0])):
            found["problem"] = f"zero1 must return (step, optimizer); got {type(made).__name__}"
            return found
        step_fn, optimizer = made
        rec.take()
        for step in range(STEPS):
            x, y = batch(rank, step)
            loss_fn(reference(x), y).backward()
            for p in reference.parameters():
                dist.all_reduce(p.grad)
                p.grad.div_(n_ranks)
            opt_ref.step()
            opt_ref.zero_grad(set_to_none=True)
            rec.take()                                    # the reference's own all-reduces
            loss_fn(mine(x), y).backward()
            rec.phase = "step"
            step_fn()
            rec.phase = "outside"
            found["calls"].append([(c.name, c.nbytes) for c in rec.take()])
            for p in mine.parameters():
                p.grad = None
            if not found["problem"]:
                found["problem"] = _first_param_problem(_params(mine), _params(reference), step + 1)
                if found["problem"] and step == 0:
                    found["problem"] += _zero1_hint(mine, reference, rank, n_ranks)
    state = getattr(optimizer, "state", None)
    if state is None:
        found["problem"] = found["problem"] or (f"the second value zero1 returns must be a torch optimizer, got "
                                                f"{optimizer!r}")
        return found
    found["state_nbytes"] = sum(t.numel() * t.element_size() for s in state.values() for key, t in s.items()
                                if key != "step" and isinstance(t, torch.Tensor))
    return found


def _zero1_hint(mine, reference, rank: int, n_ranks: int) -> str:
    """Which elements moved: only this rank's shard (the all-gather is missing), or none."""
    import torch

    start = lab_model()
    flat = lambda m: torch.cat([p.detach().reshape(-1) for p in m.parameters()])  # noqa: E731
    moved = (flat(mine) != flat(start)).nonzero().reshape(-1)
    if moved.numel() == 0:
        return ": no parameter of the model changed (copy the gathered parameters back into the model)"
    shard = math.ceil(flat(start).numel() / n_ranks)
    if int(moved.min()) >= rank * shard and int(moved.max()) < (rank + 1) * shard:
        return (f": only the elements of rank {rank}'s own shard changed; all-gather the updated shards so every rank "
                "has every parameter")
    return ""


def check_zero1(fn, n_ranks: int = 3, timeout_s: float = 60.0) -> Outcome:
    """ZeRO-1: equal training to the unsharded run, a reduce-scatter and an all-gather per step, and the optimizer
    state of one shard per rank (the formula, :func:`zero1_state_formula_bytes`)."""
    outcome = _launch(f"zero1 on {n_ranks} ranks", zero1_in_group, n_ranks, fn, timeout_s=timeout_s)
    return judge_zero1(outcome.rank_values, n_ranks) if outcome.ok else outcome


def judge_zero1(values: list, n_ranks: int) -> Outcome:
    """The ranks' findings of ZeRO-1 (:func:`zero1_in_group`) in words, on ``n_ranks`` ranks."""
    n_params = sum(p.numel() for p in lab_model().parameters())
    formula = zero1_state_formula_bytes(n_params, n_ranks)
    for found in values:
        if found["problem"]:
            return Outcome(problem=f"rank {found['rank']}: {found['problem']}", backend="gloo")
        names = [name for name, _ in found["calls"][0]]
        made = ", ".join(f"{names.count(n)} x {n}" for n in dict.fromkeys(names)) or "no collective call"
        if not any(n.startswith("reduce_scatter") for n in names):
            return Outcome(problem=f"rank {found['rank']}: the step made {made}; ZeRO-1 "
                                   "reduce-scatters the gradients (dist.reduce_scatter_single), so each rank receives "
                                   "only its shard's sum", backend="gloo")
        if not any(n.startswith("all_gather") for n in names):
            return Outcome(problem=f"rank {found['rank']}: the step made {made}; after stepping its shard each rank "
                                   "all-gathers the parameters (dist.all_gather_single)", backend="gloo")
        if found["state_nbytes"] > formula:
            full = ADAM_STATE_BYTES_PER_PARAM * n_params
            extra = " (the whole model's: the optimizer sees every parameter)" if found["state_nbytes"] >= full else ""
            return Outcome(problem=f"rank {found['rank']}: its optimizer holds {found['state_nbytes']} bytes of state"
                                   f"{extra}; one shard's is {ADAM_STATE_BYTES_PER_PARAM} x ceil({n_params}/"
                                   f"{n_ranks}) = {formula} bytes", backend="gloo")
        if found["state_nbytes"] == 0:
            return Outcome(problem=f"rank {found['rank']}: its optimizer holds no state after {STEPS} steps: did "
                                   "optimizer.step() run on the shard?", backend="gloo")
    return Outcome(values, "", "gloo",
                   {"state_nbytes": [f["state_nbytes"] for f in values], "formula_nbytes": formula,
                    "unsharded_nbytes": ADAM_STATE_BYTES_PER_PARAM * n_params, "n_params": n_params,
                    "calls": values[0]["calls"][0]})


# --- the timeline ---------------------------------------------------------------------------------------------


def timeline_in_group(rank: int, n_ranks: int, naive_fn, overlap_fn, widths=(256, 1024, 1024, 1024, 1024, 10)):
    """Inside a rank: one profiled step of naive and of overlapped DDP on a wider model (torch.profiler):
    (kind, name, start_us, end_us) of the backward's autograd functions and gloo's collectives, and the moment
    backward returned."""
    import os

    import torch
    import torch.nn as nn
    from torch.profiler import ProfilerActivity, profile

    def model():
        torch.manual_seed(0)
        layers: list = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(widths) - 2 else [])
        return nn.Sequential(*layers)

    x = torch.randn(64, widths[0], generator=torch.Generator().manual_seed(rank))
    y = torch.randint(0, widths[-1], (64,), generator=torch.Generator().manual_seed(rank))
    found: dict = {"backend": "gloo"}
    for label in ("naive", "overlapped"):
        m = model()
        finish = overlap_fn(m) if label == "overlapped" else (lambda m=m: naive_fn(m))
        for _ in range(2):                                  # warm-up
            loss_fn(m(x), y).backward()
            finish()
            m.zero_grad(set_to_none=False)
        loss = loss_fn(m(x), y)
        saved, quiet = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 2)                                   # the profiler's C++ side prints status lines on stderr
        try:
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                with torch.profiler.record_function("backward"):
                    loss.backward()
                finish()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(quiet)
        events = []
        for e in prof.events():
            if e.name.startswith("autograd::engine::evaluate_function: "):
                events.append(("compute", e.name.split(": ", 1)[1], e.time_range.start, e.time_range.end))
            elif e.name.startswith("gloo:"):
                events.append(("comm", e.name, e.time_range.start, e.time_range.end))
            elif e.name == "backward":
                events.append(("backward", e.name, e.time_range.start, e.time_range.end))
        found[label] = events
    return found


def as_timeline(events, title: str):
    """A commlab.overlap.Timeline of profiled events, in seconds from the first compute event."""
    from commlab.overlap import CommInterval, ComputeInterval, Timeline

    compute = sorted((s, e, n) for kind, n, s, e in events if kind == "compute")
    comm = sorted((s, e, n) for kind, n, s, e in events if kind == "comm")
    t0 = compute[0][0]
    return Timeline(tuple(ComputeInterval(i, (s - t0) / 1e6, (e - t0) / 1e6, n.replace("Backward0", ""))
                          for i, (s, e, n) in enumerate(compute)),
                    tuple(CommInterval(i, max(s - t0, 0) / 1e6, (e - t0) / 1e6, 0, ())
                          for i, (s, e, _) in enumerate(comm)), title)


def backward_end_s(events) -> float:
    """When the profiled ``loss.backward()`` returned, in the seconds of :func:`as_timeline`."""
    t0 = min(s for kind, _, s, _ in events if kind == "compute")
    return max(e for kind, _, _, e in events if kind == "backward") / 1e6 - t0 / 1e6
