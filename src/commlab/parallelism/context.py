"""Context parallelism: splitting the sequence of every micro-batch over c ranks (chapter 09).

Each rank of a context-parallel group keeps s/c tokens of every sequence for the whole layer (unlike SP, which
splits only the norms and dropout). Everything but attention is token by token, so it needs nothing from the
other ranks; attention needs every token's keys and values. Two ways to bring them, per layer and micro-batch,
with K_b = b (s/c) (w/t) dtype_nbytes one rank's block of keys (w = ``ModelConfig.kv_width``: h, or less with
grouped-query attention; t-way TP leaves each rank w/t of it, its share of the heads) and the same again for values:

| kind | primitive | forward | backward |
| --- | --- | --- | --- |
| ring attention | sendrecv (ring) | c-1 steps, each passing a K and a V block (2 K_b) | again, plus c-1 of grads |
| Ulysses | all_to_all | Q, K, V (b (s/c)(h + 2w) dtype) to split heads, output (b (s/c) h dtype) back | both reversed |

Ring attention (Liu, Zaharia, Abbeel, "Ring Attention with Blockwise Transformers", arXiv 2310.01889; Megatron-LM's
``--context-parallel-size`` with Transformer Engine's ``cp_comm_type="p2p"``) overlaps each step's send with the
attention of the block it already holds, which costs about 4 b (s/c)^2 h / t FLOPs per step forward: the
transfer hides once the blocks are long enough. Ulysses (Jacobs et al., "DeepSpeed Ulysses", arXiv 2309.14509)
needs the number of heads to be divisible by c and puts its all-to-alls on the critical path. Under full
recomputation the forward's communication runs again in the backward.

>>> from commlab.parallelism.config import ModelConfig, ParallelConfig
>>> m = ModelConfig(n_params=8 * 10**9, hidden=4096, n_layers=32, seq_len=131072, kv_hidden=1024)
>>> ring = cp_traffic(m, ParallelConfig(cp=8))
>>> [(i.primitive, i.nbytes_per_call, i.calls_per_step) for i in ring]     # 2 x 1 x 16384 x 1024 x 2 bytes
[('sendrecv', 67108864, 224), ('sendrecv', 67108864, 224), ('sendrecv', 67108864, 224)]
"""
from __future__ import annotations

from commlab.errors import CommlabError
from commlab.parallelism.config import ModelConfig, ParallelConfig
from commlab.parallelism.traffic import Traffic, TrafficItem


def _layers_per_stage(model: ModelConfig, par: ParallelConfig) -> int:
    if model.n_layers % par.pp:
        raise CommlabError(f"n_layers={model.n_layers} must be divisible by pp={par.pp} (layers per stage)")
    return model.n_layers // par.pp


def kv_block_nbytes(model: ModelConfig, par: ParallelConfig) -> int:
    """One rank's keys and values for one micro-batch: 2 b (s/c) (w/t) dtype_nbytes (w = kv_width; with TP each
    rank holds h_kv/t of the K/V width, its share of the heads)."""
    return round(2 * model.micro_batch * model.seq_len / par.cp * model.kv_width / par.tp * model.dtype_nbytes)


def cp_traffic(model: ModelConfig, par: ParallelConfig) -> Traffic:
    """Context parallelism's communication in one step (empty when cp == 1)."""
    if par.cp == 1:
        return Traffic(())
    per_layer = _layers_per_stage(model, par) * model.n_micro_batches
    if par.cp_kind == "ring":
        return _ring(model, par, per_layer)
    return _ulysses(model, par, per_layer)


def _ring(model: ModelConfig, par: ParallelConfig, per_layer: int) -> Traffic:
    kv, calls = kv_block_nbytes(model, par), (par.cp - 1) * per_layer
    items = [TrafficItem("CP", "sendrecv", "K and V blocks", "per layer, forward: c-1 ring steps", kv, calls, par.cp),
             TrafficItem("CP", "sendrecv", "K and V blocks", "per layer, backward: c-1 ring steps", kv, calls, par.cp),
             TrafficItem("CP", "sendrecv", "K and V gradients", "per layer, backward: c-1 ring steps", kv, calls,
                         par.cp)]
    if par.recompute == "full":
        items.append(TrafficItem("CP", "sendrecv", "K and V blocks", "per layer, recomputed forward", kv, calls,
                                 par.cp))
    return Traffic(tuple(items))


def _ulysses(model: ModelConfig, par: ParallelConfig, per_layer: int) -> Traffic:
    tokens = model.micro_batch * model.seq_len / par.cp * model.dtype_nbytes / par.tp     # each TP rank: its heads
    qkv, out = round(tokens * (model.hidden + 2 * model.kv_width)), round(tokens * model.hidden)
    items = [TrafficItem("CP", "all_to_all", "Q, K and V", "per layer, forward: sequence split to head split", qkv,
                         per_layer, par.cp),
             TrafficItem("CP", "all_to_all", "attention output", "per layer, forward: back to the sequence split", out,
                         per_layer, par.cp),
             TrafficItem("CP", "all_to_all", "output gradient", "per layer, backward", out, per_layer, par.cp),
             TrafficItem("CP", "all_to_all", "Q, K and V gradients", "per layer, backward", qkv, per_layer, par.cp)]
    if par.recompute == "full":
        items += [TrafficItem("CP", "all_to_all", what, "per layer, recomputed forward", n, per_layer, par.cp)
                  for what, n in (("Q, K and V", qkv), ("attention output", out))]
    return Traffic(tuple(items))
