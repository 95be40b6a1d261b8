"""Overlapping compute and communication, simulated (chapter 07 and the DDP overlap lab).

* :mod:`~commlab.overlap.ddp`: DDP's gradient buckets against the backward pass, ``bucket_cap_mb`` sweeps;
* :mod:`~commlab.overlap.fsdp`: FSDP's parameter all-gathers against the forward pass, with and without prefetch;
* :mod:`~commlab.overlap.timeline`: the :class:`Timeline` both return (exposed communication, overlap fraction).

Pure layer: numpy only.
"""
from commlab.overlap.ddp import (
    DDP_DEFAULT_BUCKET_CAP_MB, DDP_DEFAULT_FIRST_BUCKET_MB, Bucket, CapSweep, DDPConfig, assign_buckets,
    backward_intervals, no_overlap, simulate, sweep_bucket_caps,
)
from commlab.overlap.fsdp import FSDPConfig, simulate_fsdp_forward
from commlab.overlap.layers import Layer, layers_from, uniform_layers
from commlab.overlap.timeline import CommInterval, ComputeInterval, Timeline

__all__ = [
    "DDP_DEFAULT_BUCKET_CAP_MB", "DDP_DEFAULT_FIRST_BUCKET_MB", "Bucket", "CapSweep", "CommInterval",
    "ComputeInterval", "DDPConfig", "FSDPConfig", "Layer", "Timeline", "assign_buckets", "backward_intervals",
    "layers_from", "no_overlap", "simulate", "simulate_fsdp_forward", "sweep_bucket_caps", "uniform_layers",
]
