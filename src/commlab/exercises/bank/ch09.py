"""Chapter 9, parallelism from the communication view: DP sync, pipeline bubble, TP, ZeRO-3, EP, PP."""
from __future__ import annotations

import dataclasses

from commlab import hardware, parallelism, units
from commlab.exercises.bank.common import draw_ranks, duration, num, pick, rate, ratio_mistake, size
from commlab.exercises.model import Exercise, Mistake, Worked
from commlab.parallelism import ModelConfig, ParallelConfig
from commlab.parallelism.network import Network

_MODELS = ((1.3, 2048, 24), (7, 4096, 32), (13, 5120, 40), (70, 8192, 80))  # billions of params, hidden, layers
_DTYPES = (("FP16", 2), ("BF16", 2), ("FP32", 4))


_NODES = (("h100", "DGX H100"), ("a100-80gb", "DGX A100"))
"""Servers a multi-node DP group runs on: the planner's presets (8 GPUs on NVSwitch, 8 NICs each)."""


def _sync_question(rng):
    """A model, a dtype and a DP group: inside one 8-GPU node on its NVLink, or over n/8 such nodes whose NICs the
    GPUs share (chapter 9's node model), never one network port per GPU."""
    billions, _, _ = pick(rng, _MODELS)
    dtype, itemsize = pick(rng, _DTYPES)
    n = draw_ranks(rng, (4, 8, 16, 32, 64))
    if n <= 8:
        link = hardware.link(pick(rng, ("nvlink3", "nvlink4", "nvlink5")))
        return int(billions * 1e9), dtype, itemsize, n, link, None
    return int(billions * 1e9), dtype, itemsize, n, None, pick(rng, _NODES)


def _dp_sync(rng) -> Worked:
    n_params, dtype, itemsize, n, link, node = _sync_question(rng)
    sync = parallelism.gradient_sync(n_params, n, itemsize)
    grads = n_params * itemsize
    if link is not None:
        return _dp_sync_in_node(n_params, dtype, itemsize, n, link, sync, grads)
    gpu_name, server = node
    spec = parallelism.gpu(gpu_name)
    net = Network(spec, n_gpus=n)
    t_s, how = net.collective_s("all_reduce", grads, n, 1)
    nic = hardware.link(spec.inter)
    nodes, per_node = n // net.gpus_per_node, net.gpus_per_node
    egress_Bps = net.egress_GBps * 1e9
    question = (f"Data parallelism over {n} GPUs: {nodes} {server} nodes of {per_node} GPUs on NVSwitch, each node "
                f"with {net.cluster.nics_per_node} x {nic.title} NICs to the others. A {num(n_params / 1e9)}B-"
                f"parameter model's {dtype} gradients are all-reduced once per step with NCCL. How long does the "
                "gradient sync take?")
    one_port = sync.bytes_per_rank_per_step / nic.unidir_Bps
    solution = (f"Gradients: S = {num(n_params / 1e9)}e9 x {itemsize} B = {size(grads)}. NCCL's rings (one per "
                f"NIC) cross each node boundary once, so a node's {net.cluster.nics_per_node} NICs carry its share "
                f"together: about 2(N-1)/N * S over the node's egress ({rate(egress_Bps)}), "
                f"{duration(sync.bytes_per_rank_per_step / egress_Bps)}, and NCCL's pick ({how}) in the cluster "
                f"model: {duration(t_s)}. (Not 2(N-1)/N * S over one NIC per GPU, {duration(one_port)}: the GPUs of "
                "a node share its NICs, and the hops inside the node run on NVLink.)")
    mistakes = (
        ratio_mistake(one_port, t_s, "one network port per GPU",
                      "a ring crosses each node once per channel; the node's NICs share the bytes"),
        ratio_mistake(grads / egress_Bps, t_s, "ring factor 2(N-1)/N forgotten",
                      "each GPU sends 2(N-1)/N * S, not S"),
        ratio_mistake(t_s * (4 if itemsize == 2 else 2) / itemsize, t_s, "wrong bytes per element",
                      f"{dtype} is {itemsize} bytes per gradient"),
    )
    return Worked(question, t_s, solution, mistakes, n_ranks=n,
                  params={"n_params": n_params, "itemsize": itemsize, "n_ranks": n, "link": nic.name,
                          "gpu": gpu_name})


def _dp_sync_in_node(n_params, dtype, itemsize, n, link, sync, grads) -> Worked:
    t_s = sync.time_s(link)
    question = (f"Data parallelism over {n} GPUs: a {num(n_params / 1e9)}B-parameter model's {dtype} gradients "
                f"are ring all-reduced once per step inside one node over {link.title} ({rate(link.unidir_Bps)} "
                f"one way, alpha {num(link.latency_s * 1e6)} us). How long does the gradient sync take?")
    solution = (f"Gradients: {num(n_params / 1e9)}e9 x {itemsize} B = {size(grads)}. Each GPU sends 2(N-1)/N * S = "
                f"{size(sync.bytes_per_rank_per_step)}; at {rate(link.unidir_Bps)} plus {2 * (n - 1)} latency terms: "
                f"{duration(t_s)}. (Not S / B = {duration(grads / link.unidir_Bps)}: that is one pass of the "
                "gradients, a common slip.)")
    other = 4 if itemsize == 2 else 2
    mistakes = (
        ratio_mistake(grads / link.unidir_Bps, t_s, "ring factor 2(N-1)/N forgotten",
                      "each GPU sends 2(N-1)/N * S, not S"),
        ratio_mistake(parallelism.gradient_sync(n_params, n, other).time_s(link), t_s,
                      "wrong bytes per element", f"{dtype} is {itemsize} bytes per gradient"),
        ratio_mistake(sync.bytes_per_rank_per_step / (2 * link.unidir_Bps), t_s, "used the bidirectional figure",
                      "each ring step sends one way"),
    )
    return Worked(question, t_s, solution, mistakes, n_ranks=n,
                  params={"n_params": n_params, "itemsize": itemsize, "n_ranks": n, "link": link.name})


def _bubble(rng) -> Worked:
    p = int(pick(rng, (2, 4, 8, 16)))
    m = int(pick(rng, (4, 8, 16, 32, 64)))
    fraction = parallelism.bubble_fraction(p, m)
    question = (f"A pipeline of p = {p} stages runs m = {m} micro-batches per step (1F1B). What share of the step "
                "does a stage sit idle in the bubble, in percent?")
    solution = (f"Bubble share = (p-1)/(m+p-1) = {p - 1}/{m + p - 1} = {num(100 * fraction)}%. More micro-batches "
                "shrink it, at the cost of memory.")
    mistakes = (ratio_mistake(parallelism.bubble_ratio(p, m), fraction, "bubble over useful time",
                              "(p-1)/m compares the bubble with the useful time; the share of the step is "
                              "(p-1)/(m+p-1)"),)
    return Worked(question, 100 * fraction, solution, mistakes, params={"p": p, "m": m})


def _tp_model(rng):
    billions, hidden, n_layers = pick(rng, _MODELS)
    seq_len = int(pick(rng, (2048, 4096, 8192)))
    micro_batch = int(pick(rng, (1, 2, 4)))
    tp = int(pick(rng, (2, 4, 8)))
    model = ModelConfig(n_params=int(billions * 1e9), hidden=hidden, n_layers=n_layers, seq_len=seq_len,
                        micro_batch=micro_batch)
    return model, tp


def _tp_volume(rng) -> Worked:
    model, tp = _tp_model(rng)
    one_layer = dataclasses.replace(model, n_layers=1)
    traffic = parallelism.tp_traffic(one_layer, ParallelConfig(tp=tp))
    sent = traffic.bytes_per_rank_per_step
    act = model.activation_nbytes
    question = (f"Megatron tensor parallelism over {tp} GPUs, hidden size {model.hidden}, micro-batch "
                f"{model.micro_batch} x {model.seq_len} tokens, BF16 activations. For one transformer layer, forward "
                "and backward, how many MB does each GPU send in TP all-reduces?")
    solution = (f"One all-reduce carries A = b s h x 2 B = {size(act)}. Per layer: 2 in forward (attention, MLP) "
                f"and 2 in backward = 4. Each sends 2(t-1)/t * A = {size(2 * (tp - 1) / tp * act)} per GPU; "
                f"x 4 = {size(sent)}.")
    mistakes = (Mistake(0.5, "forward only", "the backward has its own 2 all-reduces per layer"),
                Mistake(0.25, "one all-reduce per layer", "attention and MLP each need one, in both passes"),
                Mistake(tp / (2 * (tp - 1)), "ring factor 2(t-1)/t forgotten", "each all-reduce sends 2(t-1)/t * A"))
    return Worked(question, sent / units.MB, solution, mistakes, n_ranks=tp, params={"tp": tp})


def _tp_time(rng) -> Worked:
    model, tp = _tp_model(rng)
    link = hardware.link(pick(rng, ("nvlink4", "nvlink3", "ib-ndr", "roce-200")))
    traffic = parallelism.tp_traffic(model, ParallelConfig(tp=tp))
    t_s = traffic.time_s(link)
    calls = sum(item.calls_per_step for item in traffic)
    question = (f"A {num(model.n_params / 1e9)}B model ({model.n_layers} layers, hidden {model.hidden}) runs "
                f"tensor parallelism over {tp} GPUs on {link.title} ({rate(link.unidir_Bps)} one way, alpha "
                f"{num(link.latency_s * 1e6)} us); one micro-batch of {model.micro_batch} x {model.seq_len} "
                "tokens, BF16. How long do the TP all-reduces of one forward and backward take, if none overlaps "
                "compute?")
    per_call = traffic.items[0].time_per_call_s(link)
    solution = (f"{model.n_layers} layers x 4 = {calls} all-reduces of {size(model.activation_nbytes)}, each "
                f"2(t-1)(alpha + A/(t B)) = {duration(per_call)}: {duration(t_s)} in total.")
    mistakes = (Mistake(0.5, "forward only", "the backward repeats the 2 all-reduces per layer"),)
    return Worked(question, t_s, solution, mistakes, n_ranks=tp, params={"tp": tp, "link": link.name})


def _zero3_vs_dp(rng) -> Worked:
    billions, hidden, n_layers = pick(rng, _MODELS)
    n = draw_ranks(rng, (8, 16, 64))
    m = int(pick(rng, (1, 2, 4, 8)))
    model = ModelConfig(n_params=int(billions * 1e9), hidden=hidden, n_layers=n_layers, seq_len=1,
                        n_micro_batches=m)
    dp = parallelism.dp_traffic(model, ParallelConfig(dp=n)).bytes_per_rank_per_step
    z3 = parallelism.dp_traffic(model, ParallelConfig(dp=n, zero=3)).bytes_per_rank_per_step
    ratio = z3 / dp
    question = (f"{num(billions)}B parameters over {n} data-parallel GPUs, {m} micro-batch(es) per step. DDP "
                "all-reduces the gradients once per step. ZeRO-3/FSDP all-gathers each layer's parameters before "
                "its forward and again before its backward, and reduce-scatters its gradients, for every "
                "micro-batch. How many times more bytes does each GPU send per step with ZeRO-3?")
    solution = (f"DDP: 2(N-1)/N * P bytes per step. ZeRO-3: 3 x (N-1)/N * P per micro-batch (2 all-gathers, "
                f"1 reduce-scatter), x {m}. Ratio = 3m/2 = {num(ratio)}: 1.5x for one micro-batch.")
    mistakes = (Mistake(2 / 3, "one all-gather only", "parameters are gathered again for the backward"),
                Mistake(1 / m, "micro-batches left out", "FSDP gathers and reduce-scatters per micro-batch"))
    return Worked(question, ratio, solution, mistakes, params={"n_ranks": n, "m": m})


def _ep_all_to_all(rng) -> Worked:
    _, hidden, _ = pick(rng, _MODELS)
    ep = int(pick(rng, (4, 8, 16)))
    seq_len, top_k, b = int(pick(rng, (2048, 4096))), int(pick(rng, (1, 2))), int(pick(rng, (1, 2, 4)))
    model = ModelConfig(n_params=10**9, hidden=hidden, n_layers=1, seq_len=seq_len, micro_batch=b, n_moe_layers=1,
                        top_k=top_k)
    forward = parallelism.ep_traffic(model, ParallelConfig(dp=ep, ep=ep)).items[0]
    sent = forward.bytes_per_rank_per_step
    tokens = forward.nbytes_per_call
    question = (f"A mixture-of-experts layer over an expert-parallel group of {ep} GPUs: each GPU routes its "
                f"micro-batch of {b} x {seq_len} tokens (hidden {hidden}, BF16) to top-{top_k} experts spread "
                "evenly over the group. In the forward pass (dispatch all-to-all, then combine all-to-all), how many "
                "MB does each GPU send?")
    solution = (f"Each all-to-all moves the routed tokens: b x s x k x h x 2 B = {size(tokens)}; with E = {ep} the "
                f"expert-parallel group size, a GPU keeps 1/E and sends (E-1)/E of it: "
                f"{size((ep - 1) / ep * tokens)}. Dispatch + combine: {size(sent)}.")
    mistakes: tuple[Mistake, ...] = (
        Mistake(0.5, "dispatch only", "the outputs come back in a second all-to-all (combine)"),
        Mistake(ep / (ep - 1), "own share counted", f"1/{ep} of the tokens stay on the GPU"))
    if b > 1:
        mistakes += (Mistake(1 / b, "micro-batch left out", f"each GPU routes all {b} sequences of its micro-batch"),)
    return Worked(question, sent / units.MB, solution, mistakes, n_ranks=ep, params={"ep": ep, "b": b})


def _zero2_accumulation(rng) -> Worked:
    billions, hidden, n_layers = pick(rng, _MODELS)
    n = draw_ranks(rng, (8, 16, 64))
    m = int(pick(rng, (4, 8, 16, 32, 64)))
    model = ModelConfig(n_params=int(billions * 1e9), hidden=hidden, n_layers=n_layers, seq_len=1, n_micro_batches=m)
    z1, z2 = (parallelism.dp_traffic(model, ParallelConfig(dp=n, zero=z)).bytes_per_rank_per_step for z in (1, 2))
    ratio = z2 / z1
    question = (f"{num(billions)}B parameters over {n} data-parallel GPUs with gradient accumulation over {m} "
                "micro-batches per optimizer step. How many times more bytes does each GPU send per step under "
                "ZeRO-2 than under ZeRO-1?")
    solution = (f"ZeRO-1 keeps whole gradients, accumulates them locally and reduce-scatters once per step, then "
                f"all-gathers the updated parameters: 2 x (N-1)/N * P. ZeRO-2 keeps only its shard of the gradients, "
                f"so it must reduce-scatter after every micro-batch (DeepSpeed refuses no_sync under ZeRO-2): "
                f"({m} + 1) x (N-1)/N * P. Ratio (m + 1)/2 = {num(ratio)}.")
    mistakes = (Mistake(1 / ratio, "no difference", "sharded gradients cannot wait for the end of the step"),
                Mistake(2 * m / (m + 1), "all-gather per micro-batch too",
                        "the parameters are gathered once, after the optimizer step"))
    return Worked(question, ratio, solution, mistakes, params={"n_ranks": n, "m": m})


def _pp_send(rng) -> Worked:
    model, _ = _tp_model(rng)
    link = hardware.link(pick(rng, ("ib-hdr", "ib-ndr", "roce-100", "roce-400", "nvlink4")))
    item = parallelism.pp_traffic(model, ParallelConfig(pp=2)).items[0]
    t_s = item.time_per_call_s(link)
    question = (f"Pipeline parallelism: a stage sends its micro-batch's activations ({model.micro_batch} x "
                f"{model.seq_len} tokens, hidden {model.hidden}, BF16) to the next stage over {link.title} "
                f"({rate(link.unidir_Bps)} one way, alpha {num(link.latency_s * 1e6)} us). How long does one send "
                "take, in ms?")
    solution = (f"A = b s h x 2 B = {size(item.nbytes_per_call)}; t = alpha + A/B = {duration(t_s)}. Small next to "
                "TP's traffic, which is why PP can cross nodes.")
    mistakes = (ratio_mistake(item.nbytes_per_call / (2 * link.unidir_Bps) + link.latency_s, t_s,
                              "used the bidirectional figure", "one send uses one direction"),)
    return Worked(question, t_s * 1e3, solution, mistakes, params={"link": link.name})


EXERCISES = (
    Exercise("ch09.dp-sync", "DP gradient sync time", "s", 0.03,
             "Inside a node t = 2(N-1)(alpha + S/(N B)), S the gradient bytes and B one way; across nodes the "
             "node's NICs share the ring's bytes, about 2(N-1)/N * S over the node's egress (chapter 9, DP).",
             _dp_sync),
    Exercise("ch09.bubble", "Pipeline bubble", "%", 0.02,
             "Bubble share of the step = (p-1)/(m+p-1) (chapter 9, pipeline bubbles).", _bubble),
    Exercise("ch09.tp-volume", "TP all-reduce bytes per layer", "MB", 0.02,
             "4 all-reduces per layer (2 forward, 2 backward) of A = b s h x 2 bytes, 2(t-1)/t * A each "
             "(chapter 9, TP).", _tp_volume),
    Exercise("ch09.tp-time", "TP all-reduce time per step", "s", 0.03,
             "4 all-reduces per layer, each 2(t-1)(alpha + A/(t B)) (chapter 9, why TP stays in the node).",
             _tp_time),
    Exercise("ch09.zero3-vs-dp", "ZeRO-3 vs DDP traffic", "", 0.02,
             "ZeRO-3: 2 all-gathers + 1 reduce-scatter, (N-1)/N * P each, per micro-batch; DDP: one all-reduce "
             "(chapter 9, ZeRO).", _zero3_vs_dp),
    Exercise("ch09.ep-all-to-all", "EP all-to-all bytes", "MB", 0.02,
             "Each all-to-all sends (E-1)/E of the routed tokens b s k h x 2 bytes, E the expert-parallel group "
             "size; dispatch and combine (chapter 9, EP).", _ep_all_to_all),
    Exercise("ch09.zero2-accumulation", "ZeRO-2 under gradient accumulation", "", 0.02,
             "ZeRO-1 reduce-scatters once per step; ZeRO-2 after every micro-batch; both all-gather once "
             "(chapter 9, ZeRO).", _zero2_accumulation),
    Exercise("ch09.pp-send", "Pipeline activation send time", "ms", 0.02,
             "t = alpha + A/B with A = b s h x 2 bytes (chapter 9, PP).", _pp_send),
)
