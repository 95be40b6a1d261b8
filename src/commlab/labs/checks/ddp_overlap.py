"""Checks of the DDP overlap lab (labs/ddp_overlap.ipynb): the simulator's layers of a real model, and DDP's
bucket assignment, checked against DDP's own.

DDP's rule, as torch 2.13 writes it (``torch/nn/parallel/distributed.py``, ``BucketCapacityConfig``, and
``compute_bucket_assignment_by_size`` in ``torch/csrc/distributed/c10d/reducer.cpp``): gradients are
bucketed in the order they become ready: DDP assumes the reverse of the order the parameters were
registered, then rebuilds its buckets from the order it observed in the first backward pass (a LayerNorm's,
a BatchNorm's or a convolution's weight gradient arrives before its bias's, a Linear's after); a parameter
joins the open bucket, and the bucket closes once its bytes reach the limit
(``>=``: the last parameter may overshoot it); the first bucket's limit is
``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` (1 MiB) when ``bucket_cap_mb`` is left at None, and
``bucket_cap_mb`` itself when it is given; every other bucket's is ``int(bucket_cap_mb * 2**20)`` (25 MiB by
default). The reference here is torch's own function, ``dist._compute_bucket_assignment_by_size``, called as
the reducer calls it when it rebuilds its buckets after the first iteration, and, on live ranks, the buckets
DDP actually rebuilt (its logging data's ``rebuilt_per_bucket_param_indices``).

When a class is graded, both checks also run on models drawn from the seed (``drawn_<task>``): other layers,
widths, biases, caps and ready orders, judged against the same references (the layers counted here from the
modules' weights and biases; torch's own bucket assignment).
"""
from __future__ import annotations

import numpy as np

from commlab.labs.checking import Outcome
from commlab.labs.checks import call

MiB = 2**20
#: The lab's model: linear layers of these widths with ReLUs between them (labs/ddp_overlap.ipynb).
WIDTHS = (256, 512, 512, 512, 512, 512, 512, 512, 10)


def lab_model():
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    layers = []
    for i, (n_in, n_out) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:])):
        layers += [nn.Linear(n_in, n_out)] + ([nn.ReLU()] if i < len(WIDTHS) - 2 else [])
    return nn.Sequential(*layers)


def exact_mib_model():
    """Weights of exactly 1 MiB without biases: a bucket that reaches the cap exactly must close."""
    import torch.nn as nn

    return nn.Sequential(nn.Linear(512, 512, bias=False), nn.Linear(512, 512, bias=False),
                         nn.Linear(512, 512, bias=False), nn.Linear(512, 10))


def mixed_model():
    """A token embedding larger than 1 MiB, layers of 300 x 256 (308 224 bytes with the bias: between 0.3 MB and
    0.3 MiB), a LayerNorm."""
    import torch.nn as nn

    return nn.Sequential(nn.Embedding(5000, 64), nn.Flatten(), nn.Linear(64 * 8, 300), nn.ReLU(),
                         nn.Linear(300, 256), nn.LayerNorm(256), nn.Linear(256, 300), nn.Linear(300, 10))


def conv_model():
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(3, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.Conv2d(32, 64, 3),
                         nn.BatchNorm2d(64), nn.ReLU(), nn.Flatten(), nn.Linear(64 * 12 * 12, 10))


#: (model, bucket_cap_mb values): None is DDP's default (a 1 MiB first bucket, then 25 MiB).
CASES = (("the lab's model", lab_model, (None, 0.25, 1, 2, 4)),
         ("linear layers of exactly 1 MiB", exact_mib_model, (None, 1, 2)),
         ("an embedding model", mixed_model, (None, 0.3, 1)),
         ("a convolutional model", conv_model, (None, 0.5, 1)))


def example_input(name: str):
    """A batch for each model of CASES (the live check runs forward and backward)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    if name == "an embedding model":
        return torch.randint(0, 5000, (4, 8), generator=gen)
    if name == "a convolutional model":
        return torch.randn(2, 3, 16, 16, generator=gen)
    return torch.randn(4, 512 if name == "linear layers of exactly 1 MiB" else WIDTHS[0], generator=gen)


def param_nbytes(model) -> list[int]:
    """Bytes of each parameter's gradient, in ``model.parameters()`` order."""
    return [p.numel() * p.element_size() for p in model.parameters()]


def limits_nbytes(bucket_cap_mb) -> tuple[int, int]:
    """(first bucket's limit, every other bucket's) in bytes, as DDP derives them from ``bucket_cap_mb``."""
    import torch.distributed as dist

    cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * MiB)
    return (dist._DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else cap), cap


def torch_buckets(model, bucket_cap_mb, ready_order=None) -> list[list[int]]:
    """DDP's own assignment: the reducer's function on the parameters in ready order (None: reversed)."""
    import torch.distributed as dist

    params = list(model.parameters())
    order = list(reversed(range(len(params)))) if ready_order is None else list(ready_order)
    buckets, _ = dist._compute_bucket_assignment_by_size([params[i] for i in order], list(limits_nbytes(bucket_cap_mb)),
                                                        [False] * len(params), order)
    return [list(b) for b in buckets]


def _rule(nbytes: list[int], first: float, cap: float, strict: bool = False, order=None) -> list[list[int]]:
    """Variants of the rule, to name a mistake: ``strict`` closes before the cap would be passed, ``order``
    another order than the reverse of the registration."""
    buckets: list[list[int]] = []
    current: list[int] = []
    size, limit = 0, first
    for i in (reversed(range(len(nbytes))) if order is None else order):
        if strict and current and size + nbytes[i] > limit:
            buckets.append(current)
            current, size, limit = [], 0, cap
        current.append(i)
        size += nbytes[i]
        if not strict and size >= limit:
            buckets.append(current)
            current, size, limit = [], 0, cap
    return buckets + ([current] if current else [])


def _hint(got, want, nbytes: list[int], bucket_cap_mb, order) -> str:
    first, cap = limits_nbytes(bucket_cap_mb)
    decimal = (25 if bucket_cap_mb is None else bucket_cap_mb) * 1e6
    named = [(_rule(nbytes, first, cap, order=range(len(nbytes))), "buckets fill in the order gradients become "
              "ready: the last parameter first (reverse the list)"),
             (_rule(nbytes, first, cap), "use ready_order when it is given: DDP rebuilds its buckets in the order "
              "the gradients actually arrived"),
             (_rule(nbytes, first, cap, strict=True, order=order), "DDP adds the parameter, then closes the bucket "
              "once it holds at least the limit (>=), so a bucket may overshoot it"),
             (_rule(nbytes, cap, cap, order=order), "with bucket_cap_mb left at None the first bucket closes at "
              "torch.distributed._DEFAULT_FIRST_BUCKET_BYTES (1 MiB), not at 25 MiB"),
             (_rule(nbytes, 1 * MiB, cap, order=order), "a bucket_cap_mb you pass applies to the first bucket too (the "
              "1 MiB first bucket is only for the default)"),
             (_rule(nbytes, first if bucket_cap_mb is None else decimal, decimal, order=order), "bucket_cap_mb counts "
              "MiB: 2**20 bytes, not 10**6")]
    for variant, words in named:
        if got == variant and variant != want:
            return f": {words}"
    return ""


def bucket_difference(got, want, nbytes, name: str, bucket_cap_mb, order=None) -> str:
    """How the learner's buckets ``got`` (lists of parameter indices) differ from ``want``, in one sentence
    naming the first bucket that differs and, when it matches a known wrong rule, that rule ("" when equal)."""
    shown = "None (the default)" if bucket_cap_mb is None else f"{bucket_cap_mb:g}"
    if not isinstance(got, (list, tuple)) or not all(isinstance(b, (list, tuple)) for b in got):
        return f"ddp_buckets must return a list of buckets, each a list of parameter indices; got {got!r}"
    got = [[int(i) for i in b] for b in got]
    if got == want:
        return ""
    k = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
    mine = got[k] if k < len(got) else "nothing"
    theirs, theirs_nbytes = (want[k], sum(nbytes[i] for i in want[k])) if k < len(want) else ("nothing", 0)
    return (f"{name}, bucket_cap_mb={shown}: {len(got)} bucket(s), DDP makes {len(want)}; bucket {k} is {mine}, "
            f"DDP's is {theirs} ({theirs_nbytes} bytes){_hint(got, want, nbytes, bucket_cap_mb, order)}")


def _orders(n_params: int):
    """None (DDP's assumption), then an order in which each weight's gradient comes before its bias's."""
    yield None
    order = list(reversed(range(n_params)))
    for k in range(0, n_params - 1, 2):
        order[k], order[k + 1] = order[k + 1], order[k]
    yield order


def check_ddp_buckets(fn, live: bool = True, timeout_s: float = 60.0, cases=CASES, orders=None) -> Outcome:
    """The learner's buckets against torch's function on every case, then against DDP's rebuilt buckets.
    ``cases``: (name, make the model, caps) as :data:`CASES`; ``orders(n_params)``: the ready orders to try
    (None first: DDP's assumption), :func:`_orders` by default."""
    for name, make, caps in cases:
        model = make()
        nbytes = param_nbytes(model)
        for cap in caps:
            for order in (orders or _orders)(len(nbytes)):
                args = (list(nbytes), cap) if order is None else (list(nbytes), cap, list(order))
                got, failed = call("ddp_buckets", fn, *args, what=f"ddp_buckets(<{name}>, {cap})")
                if failed:
                    return failed
                label = name if order is None else (f"{name} given ready_order={order}" if orders else
                                                    f"{name} given ready_order (each weight's gradient before its "
                                                    "bias's)")
                problem = bucket_difference(got, torch_buckets(model, cap, order), nbytes, label, cap, order)
                if problem:
                    return Outcome(problem=problem)
    if not live:
        return Outcome()
    return _live(fn, timeout_s)


def rebuilt_in_group(rank, n_ranks) -> list[tuple[str, object, list[list[int]]]]:
    """Inside a rank: wrap each model of CASES in DDP with each cap, run three steps (DDP rebuilds its buckets at
    the start of the step after its first), and read the buckets it rebuilt."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    found: list[tuple[str, object, list[list[int]]]] = []
    for name, make, caps in CASES:
        x = example_input(name)
        for cap in caps:
            torch.manual_seed(0)
            model = DDP(make(), bucket_cap_mb=cap)
            for _ in range(3):
                model(x).float().sum().backward()
            text = str(model._get_ddp_logging_data().get("rebuilt_per_bucket_param_indices", ""))
            found.append((name, cap, [[int(i) for i in b.split()] for b in text.split(",") if b.strip()]))
    return found


def _rebuilt(timeout_s: float) -> dict:
    """{"problem", "rebuilt": rank 0's (name, cap, buckets) of :func:`rebuilt_in_group`}: DDP's own buckets, which
    do not depend on the learner's code (computed once per grading run: :mod:`commlab.labs.reference_cache`)."""
    from commlab.labs.checking import run_checked
    from commlab.labs.reference_cache import cached

    def compute() -> dict:
        outcome = run_checked(rebuilt_in_group, 2, what="DDP on 2 ranks", timeout_s=timeout_s, backend="gloo")
        return {"problem": outcome.problem, "rebuilt": outcome.rank_values[0] if outcome.ok else None}

    return cached("ddp_overlap-rebuilt", compute, keep=lambda found: not found["problem"])


def _live(fn, timeout_s: float) -> Outcome:
    found = _rebuilt(timeout_s)
    if found["problem"]:
        return Outcome(problem=found["problem"], backend="gloo")
    backend = "gloo"                            # the ranks return lists, not dicts with a backend: gloo was asked for
    models = {name: make() for name, make, _ in CASES}
    for name, cap, rebuilt in found["rebuilt"]:
        nbytes = param_nbytes(models[name])
        order = [i for bucket in rebuilt for i in bucket]       # the order DDP observed
        got, failed = call("ddp_buckets", fn, list(nbytes), cap, order)
        if failed:
            return failed
        problem = bucket_difference(got, rebuilt, nbytes,
                                    f"{name} under DDP (the buckets it rebuilt, ready_order={order})", cap, order)
        if problem:
            return Outcome(problem=problem, backend=backend)
    return Outcome(None, "", backend, {"rebuilt": found["rebuilt"]})


# --- the model as the simulator's layers --------------------------------------------------------------------


def nested_model():
    """An embedding, a bias-free linear layer and a LayerNorm inside a Sequential, and a half-precision layer."""
    import torch.nn as nn

    return nn.Sequential(nn.Embedding(100, 16), nn.Sequential(nn.Linear(16, 8, bias=False), nn.LayerNorm(8)),
                         nn.Linear(8, 4).half())


def _own_counts(model) -> list[tuple[int, int]]:
    """(parameters, bytes) of each module that owns parameters, in named_modules() order: counted here from
    the modules' weights and biases, independently of the learner's way."""
    found = []
    for _, module in model.named_modules():
        own = [p for p in (getattr(module, "weight", None), getattr(module, "bias", None)) if p is not None]
        if own:
            found.append((sum(p.numel() for p in own), sum(p.numel() * p.element_size() for p in own)))
    return found


LAYER_MODELS = (("the lab's model", lab_model), ("a nested model with a half-precision layer", nested_model))


def check_layers_from_model(fn, backward_s: float = 0.010, models=LAYER_MODELS) -> Outcome:
    """One Layer per module owning parameters, forward order, its gradients' bytes, backward time by share.
    ``models``: (name, make the model) as :data:`LAYER_MODELS`."""
    from commlab import overlap

    for name, make in models:
        counts = _own_counts(make())
        got, failed = call("layers_from_model", fn, make(), backward_s,
                           what=f"layers_from_model(<{name}>, {backward_s})")
        if failed:
            return failed
        got = tuple(got)
        if not all(isinstance(layer, overlap.Layer) for layer in got):
            return Outcome(problem=f"return overlap.Layer objects; got {[type(x).__name__ for x in got]}")
        nbytes, want_nbytes = [layer.nbytes for layer in got], [b for _, b in counts]
        if len(got) != len(counts):
            return Outcome(problem=f"{name}: {len(got)} layers; the model has {len(counts)} modules with parameters. "
                                   "Leave out the modules that own none (the ReLUs)")
        if nbytes == want_nbytes[::-1] and nbytes != want_nbytes:
            return Outcome(problem="the layers are in backward order; give them in forward order (the simulator "
                                   "reverses them itself)")
        if nbytes == [c for c, _ in counts] and nbytes != want_nbytes:
            return Outcome(problem="nbytes counts parameters; multiply by p.element_size() (4 bytes for float32, 2 "
                                   "for half precision)")
        if nbytes != want_nbytes:
            return Outcome(problem=f"{name}: nbytes per layer {nbytes}; expected {want_nbytes} (the weight and bias "
                                   "of each module, in bytes)")
        shares = np.array([layer.backward_s for layer in got])
        params = np.array([c for c, _ in counts], dtype=float)
        if not np.allclose(shares, backward_s * params / params.sum(), rtol=1e-9):
            return Outcome(problem=f"{name}: backward_s per layer {np.round(shares * 1e3, 4).tolist()} ms for a "
                                   f"{backward_s * 1e3:g} ms backward; split it in proportion to the parameter counts")
    return Outcome()


# --- cases drawn when a class is graded (commlab labs check --seed) -------------------------------------------

def drawn_model(seed: int, half: bool = False):
    """A model drawn from ``seed``: perhaps an embedding, 2 to 6 linear layers of 8 to 700 features (some
    without a bias) with ReLUs, perhaps a LayerNorm, some inside a nested Sequential; with ``half``, one of its
    linear layers in half precision (:func:`check_layers_from_model` counts 2 bytes for those)."""
    import numpy as np
    import torch
    import torch.nn as nn

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed % 2**31)
    layers: list = []
    width = int(rng.integers(8, 700))
    if rng.random() < 0.5:
        layers.append(nn.Embedding(int(rng.integers(50, 6000)), width))
    linears = []
    for _ in range(int(rng.integers(2, 7))):
        out = int(rng.integers(8, 700))
        linear = nn.Linear(width, out, bias=bool(rng.random() < 0.75))
        linears.append(linear)
        layers += [linear, nn.ReLU()]
        if rng.random() < 0.3:
            layers.append(nn.LayerNorm(out))
        width = out
    if half:
        linears[int(rng.integers(len(linears)))].half()
    if len(layers) > 3 and rng.random() < 0.5:       # some layers inside a nested Sequential
        cut = int(rng.integers(1, len(layers) - 1))
        layers = layers[:cut] + [nn.Sequential(*layers[cut:cut + 2])] + layers[cut + 2:]
    return nn.Sequential(*layers)


def _drawn_seeds(seed: int, task: str, n: int) -> list[int]:
    return [int(v) for v in np.random.default_rng([seed, sum(task.encode())]).integers(2**31, size=n)]


def drawn_layers_from_model(fn, seed: int) -> Outcome:
    """Two models drawn from ``seed`` (one with a half-precision layer) and a backward time of 1 ms to 1 s."""
    import functools

    first, second, timing = _drawn_seeds(seed, "layers_from_model", 3)
    models = ((f"a model drawn from seed {seed}", functools.partial(drawn_model, first)),
              (f"a model with a half-precision layer drawn from seed {seed}",
               functools.partial(drawn_model, second, True)))
    backward_s = float(10 ** np.random.default_rng(timing).uniform(-3, 0))
    return check_layers_from_model(fn, backward_s, models)


def drawn_ddp_buckets(fn, seed: int) -> Outcome:
    """Three float32 models drawn from ``seed``, each with DDP's default cap and two caps of 0.05 to 3 MiB
    drawn, in DDP's assumed order and in a ready order drawn, against torch's own assignment (no live DDP run:
    the reference is the function DDP's reducer calls)."""
    import functools

    seeds = _drawn_seeds(seed, "ddp_buckets", 4)
    rng = np.random.default_rng(seeds[-1])
    cases = tuple((f"a model drawn from seed {seed} (#{k + 1})", functools.partial(drawn_model, s),
                   (None, *(round(float(c), 3) for c in rng.uniform(0.05, 3.0, size=2)))) for k, s in
                  enumerate(seeds[:-1]))

    def orders(n_params: int):
        yield None
        yield [int(i) for i in np.random.default_rng([seeds[-1], n_params]).permutation(n_params)]

    return check_ddp_buckets(fn, live=False, cases=cases, orders=orders)
