"""Reference solutions of the DDP overlap lab (labs/ddp_overlap.ipynb, labs/scripts/ddp_overlap.py).

The reader turns a real ``torch.nn`` model into the layers of commlab's DDP simulator (chapter 07) and picks a
``bucket_cap_mb`` from the simulated sweep:

* :func:`layers_from_model`: one :class:`commlab.overlap.Layer` per module that owns parameters, in forward
  order (DDP itself reverses it: gradients become ready from the last layer back), with the parameters' bytes
  and a share of the measured backward time proportional to the layer's parameter count (for a linear layer
  both the weight-gradient and the input-gradient products scale with in x out);
* :func:`choose_bucket_cap_mb`: the cap with the shortest simulated step (the smallest one on a tie).

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


def choose_bucket_cap_mb(sweep) -> float:
    """The cap of a :class:`commlab.overlap.CapSweep` with the shortest simulated step (the smallest on a tie):
    small enough that the first buckets start while backward still runs, large enough not to pay the
    per-message latency too many times."""
    return sweep.best_cap_mb
