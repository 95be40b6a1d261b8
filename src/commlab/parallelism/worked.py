"""The chapter's worked examples as one-line helpers (chapter 09).

Data-parallel gradient sync of a 7B model in FP16 (14 GB) over 8 GPUs: each rank sends 2 (7/8) S = 24.5 GB
(not ~28 GB), which takes about 54 ms at NVLink 4's 450 GB/s (not 31 ms: that is S/450, one pass of the
gradients). A 70B model: 245 GB and about 544 ms. Across nodes, times come from the cluster model
(:class:`commlab.parallelism.network.Network`): a node's NICs share what its GPUs send.

>>> sync = gradient_sync(7 * 10**9, 8)
>>> sync.bytes_per_rank_per_step / 1e9, round(sync.time_s("nvlink4") * 1e3)
(24.5, 54)

Why TP stays inside the NVLink domain: one Megatron all-reduce carries a micro-batch's hidden states,
b s h x 2 bytes (1 x 4096 x 8192 x 2 = 64 MiB for a 70B-class model), four times per layer per micro-batch.

>>> ar = tp_all_reduce(micro_batch=1, seq_len=4096, hidden=8192, tp=8)
>>> round(ar.time_s("nvlink4") * 1e3, 2)                                   # ms per all-reduce inside a node
0.27
>>> from commlab.parallelism.catalogue import gpu
>>> from commlab.parallelism.network import Network
>>> t, _ = Network(gpu("h100"), n_gpus=64).collective_s("all_reduce", ar.nbytes_per_call, 8, 8)
>>> round(t * 1e3, 2)                                                      # the same group, one GPU a node
3.01
"""
from __future__ import annotations

from commlab.parallelism.config import ModelConfig, ParallelConfig
from commlab.parallelism.strategies import dp_traffic, tp_traffic
from commlab.parallelism.traffic import TrafficItem


def gradient_sync(n_params: int, n_ranks: int, dtype_nbytes: int = 2) -> TrafficItem:
    """DDP's all-reduce of all gradients over ``n_ranks`` data-parallel ranks, once per step."""
    model = ModelConfig(n_params=n_params, hidden=1, n_layers=1, seq_len=1, dtype_nbytes=dtype_nbytes)
    (item,) = dp_traffic(model, ParallelConfig(dp=n_ranks))
    return item


def tp_all_reduce(micro_batch: int, seq_len: int, hidden: int, tp: int, dtype_nbytes: int = 2) -> TrafficItem:
    """One of Megatron TP's forward all-reduces (b s h dtype bytes over the ``tp`` group), one call per step."""
    model = ModelConfig(n_params=1, hidden=hidden, n_layers=1, seq_len=seq_len, micro_batch=micro_batch,
                        dtype_nbytes=dtype_nbytes)
    forward = tp_traffic(model, ParallelConfig(tp=tp)).items[0]
    return TrafficItem(forward.strategy, forward.primitive, forward.what, "one call", forward.nbytes_per_call,
                       1, forward.n_ranks)
