"""FSDP's forward: gather each layer's parameters before it runs, prefetching the next (chapter 07).

FSDP (ZeRO-3) keeps 1/N of every layer's parameters on each rank, so before layer i's forward it all-gathers
the full parameters (S = the layer's nbytes, each rank contributing S/N; ring time
``(N-1)(alpha + S/(N B))``, :func:`commlab.cost.ring_all_gather_time_s`).

* ``prefetch=True``: the all-gather of layer i+1 is issued when layer i's compute starts and runs on the
  communication stream during that compute; one layer ahead, as FSDP2's default overlap and FSDP1's
  ``forward_prefetch`` ("prefetches the next forward-pass all-gather before the current forward computation").
* ``prefetch=False``: layer i+1's all-gather starts only when layer i's compute has finished, so every
  all-gather is exposed.

Simplified: one all-gather in flight at a time, no reduce-scatter (backward), no memory limit, no
resharding. For n identical layers with all-gather time a and compute time c the step is
``n (a + c)`` without prefetching and ``a + (n-1) max(a, c) + c`` with it.

>>> layers = uniform_layers(3, nbytes=2 * 10**9, backward_s=0.02, forward_s=0.01)
>>> on = simulate_fsdp_forward(FSDPConfig(layers=layers, n_ranks=2, alpha_s=0.0, bw_GBps=100.0))
>>> off = simulate_fsdp_forward(FSDPConfig(layers=layers, n_ranks=2, alpha_s=0.0, bw_GBps=100.0, prefetch=False))
>>> round(on.step_s, 6), round(off.step_s, 6)     # a = 1 * 1e9 / 100e9 = 10 ms = c
(0.04, 0.06)
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.cost import ring_all_gather_time_s
from commlab.errors import CommlabError
from commlab.overlap.ddp import check_comm
from commlab.overlap.layers import Layer, check_layers, uniform_layers  # noqa: F401  (uniform_layers: doctest)
from commlab.overlap.timeline import CommInterval, ComputeInterval, Timeline


@dataclass(frozen=True, kw_only=True)
class FSDPConfig:
    """One FSDP forward pass: the model, the link, prefetching on or off."""

    layers: tuple[Layer, ...]
    """Layers in forward order; nbytes is the full (unsharded) parameter size, forward_time_s the compute."""
    n_ranks: int
    """Ranks the parameters are sharded over."""
    alpha_s: float
    """Per-message latency of the link, seconds."""
    bw_GBps: float
    """Unidirectional bandwidth per rank, GB/s (1e9 B/s)."""
    prefetch: bool = True
    """Issue layer i+1's all-gather when layer i's compute starts (True) or ends (False)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", check_layers(self.layers))
        check_comm(self.n_ranks, self.alpha_s, self.bw_GBps)
        if not isinstance(self.prefetch, bool):
            raise CommlabError(f"prefetch must be True or False, got {self.prefetch!r}")


def all_gather_time_s(config: FSDPConfig, nbytes: int) -> float:
    """Ring all-gather of a layer's full parameters: (N-1)(alpha + S/(N B)), from commlab.cost."""
    return float(ring_all_gather_time_s(nbytes, config.n_ranks, config.alpha_s, config.bw_GBps * 1e9))


def simulate_fsdp_forward(config: FSDPConfig) -> Timeline:
    """Timeline of the forward: all-gathers on the communication stream, layer compute on the other."""
    compute: list[ComputeInterval] = []
    comm: list[CommInterval] = []
    comm_free_s = compute_end_s = 0.0
    for i, layer in enumerate(config.layers):
        issue_s = 0.0 if i == 0 else (compute[-1].start_s if config.prefetch else compute_end_s)
        gather_start = max(issue_s, comm_free_s)
        comm_free_s = gather_start + all_gather_time_s(config, layer.nbytes)
        comm.append(CommInterval(i, gather_start, comm_free_s, layer.nbytes, (i,), op="all_gather"))
        start = max(comm_free_s, compute_end_s)
        compute_end_s = start + layer.forward_time_s
        compute.append(ComputeInterval(i, start, compute_end_s, layer.name))
    label = "FSDP forward, " + ("prefetch" if config.prefetch else "no prefetch")
    return Timeline(tuple(compute), tuple(comm), label)
