"""Chapter 4, understanding: which collective a layout needs, calls out of order, what busbw's factor is for."""
from __future__ import annotations

from commlab import collectives
from commlab.exercises.bank.common import num, pick
from commlab.exercises.bank.concepts import scenario_short
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked

_REDUCES = "it adds the ranks' tensors; here every rank holds a different piece, nothing is to be added"

#: layouts and the collective each needs (chapter 4's table, "which parallelism uses which collective")
SCENARIOS = [
    {"text": "Data parallelism: every rank computed the gradients of its own batch and every rank must step with "
             "their sum.", "accepted": ("all_reduce", "allreduce"),
     "why": "every rank needs the whole sum: all_reduce (or reduce_scatter then all_gather).",
     "wrong": {"reduce": "reduce leaves the sum on one root; the other ranks would step without it.",
               "all_gather": "all_gather collects the ranks' tensors side by side; it does not add them.",
               "reduce_scatter": "reduce_scatter leaves each rank only its slice of the sum; the full sum needs an "
                                 "all_gather after it."}},
    {"text": "FSDP: each rank holds a 1/N slice of a layer's weights and, before the layer's forward, every rank "
             "needs the whole weight.", "accepted": ("all_gather", "allgather", "all_gather_single",
                                                     "all_gather_into_tensor"),
     "why": "the slices are concatenated on every rank: all_gather.",
     "wrong": {"all_reduce": f"all_reduce {_REDUCES}.", "broadcast": "broadcast copies one rank's tensor; here "
               "each rank owns a different slice.", "reduce_scatter": f"reduce_scatter {_REDUCES}, and it shrinks "
               "the tensor instead of growing it."}},
    {"text": "ZeRO-2: every rank computed full gradients of its own batch, and each rank keeps (and steps) only the "
             "sum of its 1/N slice.", "accepted": ("reduce_scatter", "reducescatter", "reduce_scatter_single",
                                                   "reduce_scatter_tensor"),
     "why": "a sum, cut into slices, one per rank: reduce_scatter, half the bytes of an all_reduce.",
     "wrong": {"all_reduce": "all_reduce gives every rank the whole sum, twice the traffic of what a rank keeps.",
               "scatter": "scatter cuts one root's tensor; it adds nothing.",
               "all_gather": "all_gather concatenates; it does not add."}},
    {"text": "Expert parallelism: each rank holds tokens routed to every expert, and must send each expert's tokens to "
             "the rank that owns that expert.", "accepted": ("all_to_all", "alltoall", "all_to_all_single"),
     "why": "every rank sends a different piece to every other rank: all_to_all.",
     "wrong": {"all_gather": "all_gather would send every token to every rank, N times the bytes needed.",
               "scatter": "scatter has a single sender; here every rank sends.",
               "all_reduce": f"all_reduce {_REDUCES}."}},
    {"text": "Rank 0 loaded a checkpoint from disk; every other rank needs the same weights before training starts.",
     "accepted": ("broadcast",),
     "why": "one root's tensor copied to every rank: broadcast.",
     "wrong": {"all_gather": "all_gather would also send every other rank's (empty) tensor to everyone.",
               "scatter": "scatter gives each rank a different slice of the root's tensor, not the whole.",
               "all_reduce": "all_reduce of the weights with zeros elsewhere works, but moves twice the bytes of a "
                             "broadcast and adds for nothing."}},
]


def _which_collective(rng) -> Worked:
    return scenario_short(rng, SCENARIOS, "Which collective does this need? (a torch.distributed name)")


def _out_of_order(rng) -> Worked:
    n = int(pick(rng, (2, 4, 8)))
    case = pick(rng, ("swapped", "skipped"))
    if case == "swapped":
        stem = (f"On {n} ranks, every rank but the last calls dist.all_reduce(a) then dist.all_reduce(b); the last "
                "rank calls dist.all_reduce(b) then dist.all_reduce(a). a and b are float32 tensors of the same "
                "shape. What happens?")
        right = Choice("Both calls complete, with wrong sums: the last rank's b is added to everyone else's a",
                       "collectives are matched by the order of the calls, not by the tensors' names; same shapes "
                       "mean nothing notices.")
        wrong = [Choice("It deadlocks", "each rank's first call meets the others' first call: same size, same type, "
                        "so they match and complete."),
                 Choice("torch.distributed reorders the calls by tensor",
                        "no backend knows which tensor is which; it only sees the n-th collective of the group.")]
    else:
        stem = (f"On {n} ranks, rank 0 skips a dist.all_reduce(t) that every other rank makes, then all ranks call "
                "dist.barrier(). What happens?")
        right = Choice("It never completes normally: the others wait in all_reduce for rank 0, whose barrier does "
                       "not match their call; it hangs until a timeout, or fails",
                       "every rank of a group must make the same collectives in the same order.")
        wrong = [Choice("The all_reduce completes without rank 0's contribution",
                        "a collective completes only when every rank of the group has joined it."),
                 Choice("Rank 0's barrier matches the others' all_reduce, so everything completes",
                        "a barrier is a collective of its own (gloo) or a small all_reduce (NCCL); either way the "
                        "others' calls do not match it and the job hangs or fails.")]
    return choice_worked(rng, stem, right, wrong, right.feedback, params={"case": case, "n": n})


def _busbw_factor(rng) -> Worked:
    op = pick(rng, ("all_reduce", "all_gather", "reduce_scatter"))
    n = int(pick(rng, (4, 8, 16)))
    factor = collectives.busbw_factor(op, n)
    stem = (f"nccl-tests reports {op} on {n} ranks with busbw = algbw x {num(factor)}. Why that factor?")
    right = Choice("It turns the bytes of the buffer into the bytes each rank really moves over its link, so busbw "
                   "compares with the link's bandwidth at any N",
                   f"a ring {op} sends {'2(N-1)/N' if op == 'all_reduce' else '(N-1)/N'} of the buffer per rank "
                   "(nccl-tests' PERFORMANCE.md).")
    wrong = [Choice("It counts both directions of the link",
                    "busbw compares with one direction; the factor depends on N, not on directions."),
             Choice("It corrects for the protocol's overhead (LL, LL128)",
                    "protocols change the time; the factor is a count of bytes, the same for every protocol."),
             Choice("It converts the buffer's size from GiB to GB",
                    "nccl-tests' size column is in bytes; and a unit change would not depend on the number of ranks.")]
    return choice_worked(rng, stem, right, wrong, f"busbw = algbw x {num(factor)}, the per-rank bytes over the "
                         "buffer's.", params={"op": op, "n": n})


EXERCISES = (
    Exercise("ch04.which-collective", "Which collective this layout needs", "", 0,
             "Does every rank end with a sum, a concatenation, a slice, or its own pieces from everyone? (chapter 4)",
             _which_collective, kind="short"),
    Exercise("ch04.out-of-order", "Collectives out of order", "", 0,
             "How does a backend match one rank's call with the others'? (chapter 4, the rules of a collective call)",
             _out_of_order, kind="choice"),
    Exercise("ch04.busbw-why", "What busbw's factor is for", "", 0,
             "What does each rank actually send in a ring, compared with the buffer's size? (chapter 4)",
             _busbw_factor, kind="choice"),
)
