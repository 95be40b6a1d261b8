"""DDP's gradient buckets on a timeline: backward compute against bucketed all-reduces (chapter 07).

What DDP does (torch 2.13, ``torch/nn/parallel/distributed.py`` and ``c10d/reducer.cpp``):

* gradients are grouped into buckets in the order they become ready, which is the reverse of the forward
  order (after the first iteration DDP rebuilds its buckets in the observed ready order);
* ``compute_bucket_assignment_by_size`` adds a parameter to the open bucket, then closes the bucket once its
  size is >= the limit. So a bucket may overshoot the cap by its last parameter, and a parameter larger than
  the cap closes whatever bucket it lands in (alone only if that bucket was empty). ``rule="strict"`` instead
  closes a bucket before a parameter would push it over the cap (the rule most explanations state);
* the limits are ``[first_bucket_bytes_cap, bucket_bytes_cap]``: the first bucket (the last layers' gradients,
  ready first) has its own limit. torch uses ``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` = 1 MiB when
  ``bucket_cap_mb`` is left at its default (25 MiB) and the bucket cap otherwise: ``first_bucket_mb`` here;
* a bucket's all-reduce starts once its last gradient is ready and the previous bucket's all-reduce is done
  (one communication stream; DDP launches buckets in order).

A bucket of S bytes costs the ring all-reduce time ``2(N-1)(alpha + S/(N B))``
(:func:`commlab.cost.ring_all_reduce_time_s`).

>>> cfg = DDPConfig(layers=uniform_layers(4, 2**20, 1e-3), n_ranks=2, alpha_s=0.0, bw_GBps=1.048576,
...                 bucket_cap_mb=2.0)
>>> [b.layers for b in assign_buckets(cfg)]        # reverse order, two 1 MiB layers per 2 MiB bucket
[(3, 2), (1, 0)]
>>> t = simulate(cfg)
>>> round(t.step_s, 6), round(t.exposed_comm_s, 6)  # each bucket: 2 * 1 * (2 MiB / (2 * B)) = 2 ms
(0.006, 0.002)
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from commlab.cost import ring_all_reduce_time_s
from commlab.errors import CommlabError, check_choice, check_n_ranks
from commlab.overlap.layers import Layer, check_layers, uniform_layers  # noqa: F401  (uniform_layers: doctest)
from commlab.overlap.timeline import CommInterval, ComputeInterval, Timeline
from commlab.units import MiB

DDP_DEFAULT_BUCKET_CAP_MB = 25.0   # torch.nn.parallel.distributed._DEFAULT_BUCKET_CAP_MB (MiB)
DDP_DEFAULT_FIRST_BUCKET_MB = 1.0  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB
RULES = ("ddp", "strict")


def check_comm(n_ranks: object, alpha_s: object, bw_GBps: object) -> None:
    """Validate the link of a simulator config; messages print the values."""
    check_n_ranks(n_ranks)
    if isinstance(alpha_s, bool) or not (isinstance(alpha_s, (int, float)) and math.isfinite(alpha_s) and alpha_s >= 0):
        raise CommlabError(f"alpha_s must be a finite number of seconds >= 0, got {alpha_s!r}")
    if isinstance(bw_GBps, bool) or not (isinstance(bw_GBps, (int, float)) and bw_GBps > 0):
        raise CommlabError(f"bw_GBps must be a number of GB/s > 0 (math.inf for free transfers), got {bw_GBps!r}")


def _check_cap(name: str, value: object) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0):
        raise CommlabError(f"{name} must be a number of MiB >= 0 (math.inf: one bucket), got {value!r}")


@dataclass(frozen=True, kw_only=True)
class DDPConfig:
    """One DDP training step's backward: the model, the link, the bucket policy."""

    layers: tuple[Layer, ...]
    """The model's layers in forward order."""
    n_ranks: int
    """Data-parallel ranks taking part in each all-reduce."""
    alpha_s: float
    """Per-message latency of the link, seconds."""
    bw_GBps: float
    """Unidirectional bandwidth per rank, GB/s (1e9 B/s)."""
    bucket_cap_mb: float = DDP_DEFAULT_BUCKET_CAP_MB
    """Bucket limit in MiB, as DDP's bucket_cap_mb; 0 gives one bucket per layer, math.inf a single bucket."""
    first_bucket_mb: float | None = None
    """Limit of the first bucket in MiB; None: the same as bucket_cap_mb (DDP with bucket_cap_mb passed)."""
    rule: str = "ddp"
    """"ddp": close a bucket once it reaches the cap (torch); "strict": close it before it would exceed the cap."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", check_layers(self.layers))
        check_comm(self.n_ranks, self.alpha_s, self.bw_GBps)
        _check_cap("bucket_cap_mb", self.bucket_cap_mb)
        if self.first_bucket_mb is not None:
            _check_cap("first_bucket_mb", self.first_bucket_mb)
        check_choice("bucket rule", self.rule, RULES)

    def with_cap(self, bucket_cap_mb: float) -> DDPConfig:
        return dataclasses.replace(self, bucket_cap_mb=bucket_cap_mb)


@dataclass(frozen=True)
class Bucket:
    """A group of layers' gradients all-reduced together."""

    index: int
    layers: tuple[int, ...]   # forward-order indices, in the order their gradients become ready
    nbytes: int


def _limits_nbytes(config: DDPConfig) -> tuple[float, float]:
    first_mb = config.bucket_cap_mb if config.first_bucket_mb is None else config.first_bucket_mb
    return first_mb * MiB, config.bucket_cap_mb * MiB


def assign_buckets(config: DDPConfig) -> tuple[Bucket, ...]:
    """Group gradients into buckets in ready order (reverse forward order), as DDP's reducer does.

    Layers without parameters (nbytes 0) produce no gradient and join no bucket.
    """
    first_cap, cap = _limits_nbytes(config)
    groups: list[list[int]] = []
    open_layers: list[int] = []
    open_nbytes = 0

    def close() -> None:
        nonlocal open_layers, open_nbytes
        groups.append(open_layers)
        open_layers, open_nbytes = [], 0

    for i in reversed(range(len(config.layers))):
        nbytes = config.layers[i].nbytes
        if nbytes == 0:
            continue
        limit = first_cap if not groups else cap
        if config.rule == "strict" and open_layers and open_nbytes + nbytes > limit:
            close()
            limit = cap
        open_layers.append(i)
        open_nbytes += nbytes
        if config.rule == "ddp" and open_nbytes >= limit:
            close()
    if open_layers:
        close()
    return tuple(Bucket(k, tuple(g), sum(config.layers[i].nbytes for i in g)) for k, g in enumerate(groups))


def backward_intervals(layers: Sequence[Layer]) -> tuple[ComputeInterval, ...]:
    """Backward runs from the last layer to the first, back to back on the compute stream."""
    intervals, t = [], 0.0
    for i in reversed(range(len(layers))):
        intervals.append(ComputeInterval(i, t, t + layers[i].backward_s, layers[i].name))
        t += layers[i].backward_s
    return tuple(intervals)


def all_reduce_time_s(config: DDPConfig, nbytes: int) -> float:
    """Ring all-reduce of one bucket: 2(N-1)(alpha + S/(N B)), from commlab.cost."""
    return float(ring_all_reduce_time_s(nbytes, config.n_ranks, config.alpha_s, config.bw_GBps * 1e9))


def _comm_intervals(config: DDPConfig, ready_s: Sequence[float], buckets) -> tuple[CommInterval, ...]:
    """One stream: each bucket starts at max(its ready time, the previous bucket's end)."""
    intervals, free_s = [], 0.0
    for bucket, ready in zip(buckets, ready_s):
        start = max(ready, free_s)
        free_s = start + all_reduce_time_s(config, bucket.nbytes)
        intervals.append(CommInterval(bucket.index, start, free_s, bucket.nbytes, bucket.layers))
    return tuple(intervals)


def simulate(config: DDPConfig) -> Timeline:
    """The overlapped step: each bucket's all-reduce starts once its last gradient is ready."""
    compute = backward_intervals(config.layers)
    end_of = {iv.layer: iv.end_s for iv in compute}
    buckets = assign_buckets(config)
    ready = [max(end_of[i] for i in b.layers) for b in buckets]
    return Timeline(compute, _comm_intervals(config, ready, buckets), f"DDP, {_cap_label(config)}")


def no_overlap(config: DDPConfig) -> Timeline:
    """The same buckets all-reduced one after another once the whole backward is done."""
    compute = backward_intervals(config.layers)
    buckets = assign_buckets(config)
    end_s = compute[-1].end_s
    return Timeline(compute, _comm_intervals(config, [end_s] * len(buckets), buckets),
                    f"no overlap, {_cap_label(config)}")


def _cap_label(config: DDPConfig) -> str:
    return "one bucket" if math.isinf(config.bucket_cap_mb) else f"bucket_cap_mb={config.bucket_cap_mb:g}"


@dataclass(frozen=True)
class CapSweep:
    """Costs of one step for each bucket cap (arrays aligned with caps_mb)."""

    caps_mb: np.ndarray
    step_s: np.ndarray
    exposed_comm_s: np.ndarray
    comm_s: np.ndarray
    n_buckets: np.ndarray

    @property
    def best_cap_mb(self) -> float:
        """The cap with the shortest step (the smallest such cap on a tie)."""
        return float(self.caps_mb[int(np.argmin(self.step_s))])


def sweep_bucket_caps(config: DDPConfig, caps_mb: Sequence[float]) -> CapSweep:
    """Simulate the step for each bucket cap: the bucket_cap_mb trade-off of chapter 07."""
    caps = np.asarray(caps_mb, dtype=float)
    if caps.ndim != 1 or caps.size == 0:
        raise CommlabError(f"caps_mb must be a non-empty 1-d sequence of MiB, got {caps_mb!r}")
    timelines = [simulate(config.with_cap(float(cap))) for cap in caps]
    return CapSweep(caps, np.array([t.step_s for t in timelines]), np.array([t.exposed_comm_s for t in timelines]),
                    np.array([t.comm_s for t in timelines]), np.array([t.n_collectives for t in timelines]))
