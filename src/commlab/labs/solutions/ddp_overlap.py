"""Reference solutions of the DDP overlap lab (labs/ddp_overlap.ipynb, labs/scripts/ddp_overlap.py).

The reader turns a real ``torch.nn`` model into the layers of commlab's DDP simulator (chapter 07) and writes
DDP's own bucketing rule:

* :func:`layers_from_model`: one :class:`commlab.overlap.Layer` per module that owns parameters, in forward
  order (DDP itself reverses it: gradients become ready from the last layer back), with the parameters' bytes
  and a share of the measured backward time proportional to the layer's parameter count (for a linear layer
  both the weight-gradient and the input-gradient products scale with in x out);
* :func:`ddp_buckets`: which parameters DDP all-reduces together, checked against torch's own function and the
  buckets DDP rebuilds on live ranks (:mod:`commlab.labs.checks.ddp_overlap` states the rule and its sources).

No torch import: the model is only asked for its modules and parameters.
"""
from __future__ import annotations

from commlab.errors import CommlabError


def _own_parameters(module) -> list:
    return list(module.parameters(recurse=False))


def layers_from_model(model, backward_s: float) -> tuple:
    """The simulator's layers for ``model``: modules owning parameters, forward (registration) order.

    ``nbytes`` = sum of numel x element_size of the module's own parameters; ``backward_s`` is split in
    proportion to parameter counts; ``name`` is the module's path and type, e.g. ``"0 Linear"``.
    """
    from commlab.overlap import Layer

    owners = [(name, module) for name, module in model.named_modules() if _own_parameters(module)]
    if not owners:
        raise CommlabError(f"the model {type(model).__name__} has no parameters, so DDP has nothing to all-reduce")
    counts = [sum(p.numel() for p in _own_parameters(m)) for _, m in owners]
    total = sum(counts)
    return tuple(Layer(sum(p.numel() * p.element_size() for p in _own_parameters(m)), backward_s * count / total,
                       name=f"{name} {type(m).__name__}")
                 for (name, m), count in zip(owners, counts))


def ddp_buckets(param_nbytes, bucket_cap_mb=None, ready_order=None) -> list[list[int]]:
    """DDP's buckets for parameters of ``param_nbytes`` bytes (``model.parameters()`` order): lists of parameter
    indices, in the order DDP all-reduces them, each in the order its gradients become ready.

    ``ready_order``: the parameter indices in the order their gradients became ready (what DDP observed in the
    first backward pass); None: the reverse of the registration order, DDP's assumption before it has seen one.
    A parameter joins the open bucket, which closes once it holds at least its limit (torch ``reducer.cpp``,
    ``compute_bucket_assignment_by_size``). The first
    bucket's limit is ``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` = 1 MiB when ``bucket_cap_mb`` is None,
    else the cap; the others' ``int(cap * 2**20)`` bytes, 25 MiB by default (torch ``distributed.py``).

    >>> ddp_buckets([2**20, 2048, 2**20, 2048])          # default: the 1 MiB first bucket, then up to 25 MiB
    [[3, 2], [1, 0]]
    >>> ddp_buckets([2**20, 2048, 2**20, 2048], bucket_cap_mb=0.5)
    [[3, 2], [1, 0]]
    >>> ddp_buckets([100, 100, 100], bucket_cap_mb=100 / 2**20)   # closes at the cap exactly
    [[2], [1], [0]]
    >>> ddp_buckets([2**20, 2048, 2**20, 2048], ready_order=[2, 3, 0, 1])
    [[2], [3, 0, 1]]
    """
    cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2**20)
    limit = 2**20 if bucket_cap_mb is None else cap
    buckets, current, size = [], [], 0
    order = reversed(range(len(param_nbytes))) if ready_order is None else ready_order
    for index in order:
        current.append(index)
        size += param_nbytes[index]
        if size >= limit:
            buckets.append(current)
            current, size, limit = [], 0, cap
    return buckets + ([current] if current else [])
