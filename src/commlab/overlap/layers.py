"""A model as the overlap simulators see it: layers with parameter bytes and compute times.

A layer stands for the parameters whose gradients become ready together at the end of that layer's backward
(for DDP) or that FSDP gathers together before that layer's forward. Real DDP buckets individual parameter
tensors (a weight and its bias); treating a layer as one tensor is the simplification here.

>>> layers = uniform_layers(4, nbytes=8 * 2**20, backward_s=0.002)
>>> len(layers), layers[0].nbytes, layers[0].forward_time_s
(4, 8388608, 0.001)
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from commlab.errors import CommlabError

#: backward costs about twice the forward (two matrix products per forward one: Kaplan et al. 2020, sec. 2.1)
BACKWARD_OVER_FORWARD = 2.0


def _check_time(name: str, value: object) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    if not ok:
        raise CommlabError(f"{name} must be a finite number of seconds >= 0, got {value!r}")


@dataclass(frozen=True)
class Layer:
    """One layer, in forward order."""

    nbytes: int
    """Bytes of the layer's parameters (= of its gradients, same dtype); 0 for a layer without parameters."""
    backward_s: float
    """Backward compute time of the layer, seconds."""
    forward_s: float | None = None
    """Forward compute time, seconds; None means backward_s / 2 (see BACKWARD_OVER_FORWARD)."""
    name: str = ""
    """Label for plots: "embed", "block 3", ..."""

    def __post_init__(self) -> None:
        if not isinstance(self.nbytes, int) or isinstance(self.nbytes, bool) or self.nbytes < 0:
            raise CommlabError(f"Layer.nbytes must be a whole number of bytes >= 0, got {self.nbytes!r}")
        _check_time("Layer.backward_s", self.backward_s)
        if self.forward_s is not None:
            _check_time("Layer.forward_s", self.forward_s)

    @property
    def forward_time_s(self) -> float:
        return self.backward_s / BACKWARD_OVER_FORWARD if self.forward_s is None else self.forward_s


def uniform_layers(n_layers: int, nbytes: int, backward_s: float, forward_s: float | None = None) -> tuple[Layer, ...]:
    """``n_layers`` identical layers named "layer 0", "layer 1", ..."""
    if not isinstance(n_layers, int) or isinstance(n_layers, bool) or n_layers < 1:
        raise CommlabError(f"n_layers must be a whole number >= 1, got {n_layers!r}")
    return tuple(Layer(int(nbytes), backward_s, forward_s, f"layer {i}") for i in range(n_layers))


def layers_from(nbytes: Sequence[int], backward_s: Sequence[float],
                forward_s: Sequence[float] | None = None) -> tuple[Layer, ...]:
    """Layers from parallel sequences, in forward order.

    >>> [l.nbytes for l in layers_from([10, 20], [1.0, 2.0])]
    [10, 20]
    """
    forwards = [None] * len(nbytes) if forward_s is None else list(forward_s)
    if not (len(nbytes) == len(backward_s) == len(forwards)):
        raise CommlabError(f"nbytes, backward_s and forward_s must have the same length, got "
                           f"{len(nbytes)}, {len(backward_s)} and {len(forwards)}")
    return tuple(Layer(int(nb), float(b), None if f is None else float(f), f"layer {i}")
                 for i, (nb, b, f) in enumerate(zip(nbytes, backward_s, forwards)))


def check_layers(layers: object) -> tuple[Layer, ...]:
    """Return ``layers`` as a non-empty tuple of Layer, or raise CommlabError naming what was given."""
    try:
        result = tuple(cast("Iterable[Layer]", layers))      # what it holds is checked below
    except TypeError:
        raise CommlabError(f"layers must be a sequence of Layer, got {layers!r}") from None
    if not result or not all(isinstance(layer, Layer) for layer in result):
        raise CommlabError(f"layers must be a non-empty sequence of Layer, got {result!r}")
    return result
