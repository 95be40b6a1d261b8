"""Hybrid sharding (HSDP): shard inside a group of s ranks, replicate over r such groups (chapters 07 and 09).

FSDP with a 2-D device mesh (FSDP2: ``fully_shard(module, mesh=init_device_mesh(..., (r, s)))``; FSDP1:
``ShardingStrategy.HYBRID_SHARD``) keeps each parameter sharded over the s ranks of its shard group, which is
normally one node. Per layer and micro-batch, with P_l the layer's parameter bytes:

| collective | group | buffer | when |
| --- | --- | --- | --- |
| all_gather (parameters) | shard (s) | P_l | before the forward |
| all_gather (parameters) | shard (s) | P_l | before the backward (not with ``reshard_after_forward=False``) |
| reduce_scatter (gradients) | shard (s) | P_l | after the backward |
| all_reduce (gradient shards) | replicate (r) | P_l / s | after the reduce-scatter |

So only the all-reduce of one shard crosses nodes: 2 (r-1)/r x P/s bytes per GPU per micro-batch, against
3 (N-1)/N x P for FSDP fully sharded over all N = r s ranks. FSDP2 all-reduces after every backward unless told
not to (``set_requires_all_reduce(False)`` on all but the last micro-batch of an accumulation).

>>> from commlab.parallelism.config import ModelConfig
>>> m = ModelConfig(n_params=7 * 10**9, hidden=4096, n_layers=32, seq_len=4096)
>>> t = hsdp_traffic(m, shard=8, replicate=8)
>>> round(t.only("HSDP replicate").bytes_per_rank_per_step / 1e9, 3)      # 2 (7/8) x 14 GB / 8
3.062
"""
from __future__ import annotations

from commlab.errors import CommlabError
from commlab.parallelism.config import ModelConfig
from commlab.parallelism.traffic import Traffic, TrafficItem


def hsdp_traffic(model: ModelConfig, shard: int, replicate: int, reshard_after_forward: bool = True) -> Traffic:
    """One step of HSDP over ``replicate`` groups of ``shard`` ranks (module docstring)."""
    for name, value in (("shard", shard), ("replicate", replicate)):
        if not isinstance(value, int) or value < 1:
            raise CommlabError(f"{name} must be a whole number >= 1, got {value!r}")
    per_layer = round(model.params_nbytes / model.n_layers)
    calls = model.n_layers * model.n_micro_batches
    items = []
    if shard > 1:
        items.append(TrafficItem("HSDP shard", "all_gather", "parameters", "per layer, before its forward",
                                 per_layer, calls, shard))
        if reshard_after_forward:
            items.append(TrafficItem("HSDP shard", "all_gather", "parameters", "per layer, before its backward",
                                     per_layer, calls, shard))
        items.append(TrafficItem("HSDP shard", "reduce_scatter", "gradients", "per layer, after its backward",
                                 per_layer, calls, shard))
    if replicate > 1:
        items.append(TrafficItem("HSDP replicate", "all_reduce", "gradient shards",
                                 "per layer, after its reduce-scatter", round(per_layer / shard), calls, replicate))
    return Traffic(tuple(items))
