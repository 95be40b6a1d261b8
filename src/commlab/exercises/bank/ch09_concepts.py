"""Chapter 9, understanding: where the bubble goes with interleaving, which collective a layout needs, ZeRO's stages."""
from __future__ import annotations

from commlab import parallelism
from commlab.exercises.bank.common import num, pick
from commlab.exercises.bank.concepts import scenario_short
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked

#: layouts and their collective (chapter 9's table, "every strategy is a collective")
LAYOUTS = [
    {"text": "Tensor parallelism (Megatron): after a row-parallel linear layer each rank holds a partial sum of the "
             "layer's output, and every rank needs the whole output.", "accepted": ("all_reduce", "allreduce"),
     "why": "partial sums that every rank needs in full: all_reduce (with sequence parallelism, a reduce_scatter "
            "instead, the all_gather moving before the next layer).",
     "wrong": {"all_gather": "all_gather concatenates; partial sums must be added.",
               "reduce_scatter": "reduce_scatter is what sequence parallelism uses; without it every rank needs the "
                                 "whole sum.",
               "send": "send/recv is pipeline parallelism's, between consecutive stages."}},
    {"text": "Pipeline parallelism: stage s has computed a micro-batch's activations, which stage s+1 needs for its "
             "forward.", "accepted": ("send", "send_recv", "sendrecv", "isend", "p2p", "send and recv"),
     "why": "one rank to the next: point-to-point send and recv.",
     "wrong": {"broadcast": "broadcast sends to every rank of a group; only the next stage needs the activations.",
               "all_gather": "all_gather gives every rank everyone's tensor; here one rank sends to one.",
               "all_to_all": "all_to_all is expert parallelism's exchange among all ranks."}},
    {"text": "ZeRO-3 / FSDP: before a layer's forward, every rank needs the layer's whole weights, of which each "
             "holds a 1/N shard.", "accepted": ("all_gather", "allgather", "all_gather_single",
                                                "all_gather_into_tensor"),
     "why": "shards concatenated on every rank: all_gather (and a reduce_scatter of the gradients in backward).",
     "wrong": {"all_reduce": "all_reduce adds the ranks' tensors; the shards are different pieces.",
               "broadcast": "broadcast copies one rank's tensor; every rank owns a different shard.",
               "reduce_scatter": "reduce_scatter is ZeRO-3's backward (the gradients), not the forward's weights."}},
    {"text": "Mixture of experts: after the router, each rank holds tokens for every expert, and each expert lives on "
             "one rank.", "accepted": ("all_to_all", "alltoall", "all_to_all_single"),
     "why": "each rank sends a different slice to every other rank: all_to_all, twice per MoE layer.",
     "wrong": {"all_gather": "all_gather would send every token to every rank.",
               "scatter": "scatter has one sender; every rank sends here.",
               "all_reduce": "all_reduce adds tensors; tokens are moved, not added."}},
]


def _which_collective(rng) -> Worked:
    return scenario_short(rng, LAYOUTS, "Which collective (or call) does this need?")


def _interleaving(rng) -> Worked:
    p = int(pick(rng, (4, 8, 16)))
    m = int(pick(rng, (8, 16, 32)))
    v = int(pick(rng, (2, 4)))
    plain = parallelism.bubble_fraction(p, m)
    inter = parallelism.bubble_fraction(p, m, v)
    stem = (f"A 1F1B pipeline of {p} stages runs {m} micro-batches per step: by chapter 9's formula its bubble is "
            f"{num(100 * plain, 3)}% of the step. Interleaving gives each stage {v} model chunks instead of one "
            "block of layers. What happens to the bubble, and what does it cost?")
    right = Choice(f"It shrinks to {num(100 * inter, 3)}%: fill and drain take chunk-sized slots, {v} times shorter; "
                   f"the price is {v} times more point-to-point sends of activations",
                   f"(p-1)/(v m + p - 1) with v = {v} (Narayanan et al., SC21, sec. 2.2.2: the bubble shrinks by v, "
                   "the communication grows by v).")
    wrong = [Choice("It disappears: every stage always has a chunk to run",
                    "the pipeline still fills and drains; only the slots are shorter."),
             Choice(f"It shrinks to {num(100 * inter, 3)}%, at no extra communication",
                    f"each micro-batch now crosses the stage boundaries {v} times as often: {v} times the sends."),
             Choice(f"It stays at {num(100 * plain, 3)}%; interleaving only saves memory",
                    "interleaving is a schedule for time: the p-1 idle slots at each end become chunk-sized.")]
    return choice_worked(rng, stem, right, wrong, right.feedback, params={"p": p, "m": m, "v": v})


def _zero_stage(rng) -> Worked:
    billions = float(pick(rng, (7, 13, 70)))
    g = int(pick(rng, (8, 16, 64)))
    stage = int(pick(rng, (1, 2, 3)))
    n_params = billions * 1e9
    n_layers = {7: 32, 13: 40, 70: 80}[int(billions)]
    weights, grads, optim = parallelism.model_state_bytes(n_params, 1, 1, g, stage, n_layers)
    gb = 1e9
    stem = (f"A {num(billions)}B-parameter model trains with mixed-precision Adam on {g} data-parallel GPUs. By "
            f"chapter 9's model (2 + 2 + 12 bytes per parameter), one GPU holds {num(weights / gb, 3)} GB of weights, "
            f"{num(grads / gb, 3)} GB of gradients and {num(optim / gb, 3)} GB of optimizer states. Which ZeRO stage "
            "is this?")
    what = {0: "nothing is sharded: 16 bytes per parameter on every GPU",
            1: f"stage 1 shards only the optimizer states: 12/{g} bytes per parameter, weights and gradients whole",
            2: "stage 2 shards the optimizer states and the gradients; the weights stay whole",
            3: "stage 3 shards weights, gradients and optimizer states (with two layers gathered at a time)"}
    names = {0: "Plain data parallelism (stage 0)", 1: "ZeRO stage 1", 2: "ZeRO stage 2", 3: "ZeRO stage 3"}
    right = Choice(names[stage], f"{what[stage]} (Rajbhandari et al., SC20).")
    wrong = [Choice(names[k], f"not this one: {what[k]}.") for k in (0, 1, 2, 3) if k != stage]
    return choice_worked(rng, stem, right, wrong, right.feedback, params={"stage": stage, "g": g})


EXERCISES = (
    Exercise("ch09.which-collective", "Which collective a parallel layout needs", "", 0,
             "Partial sums, shards, activations to the next stage, tokens to experts? (chapter 9, 9.1)",
             _which_collective, kind="short"),
    Exercise("ch09.interleaving", "Where the bubble goes with interleaving", "", 0,
             "bubble = (p-1)/(v m + p - 1); what does a chunk-sized slot cost in sends? (chapter 9, 9.5)",
             _interleaving, kind="choice"),
    Exercise("ch09.zero-stage", "Which ZeRO stage from the memory", "", 0,
             "Which of weights, gradients and optimizer states are divided by the group? (chapter 9, 9.4)",
             _zero_stage, kind="choice"),
)
