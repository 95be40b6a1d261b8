"""Chapter 3, understanding: which exchanges deadlock, a send buffer touched too early, what NCCL's send waits for."""
from __future__ import annotations

from commlab.exercises.bank.common import pick
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked

_VARIANTS = {
    "both send first": (
        "other = 1 - rank\ndist.send(x, dst=other)\ndist.recv(y, src=other)", True,
        "both ranks sit in send: on gloo a send does not complete before the peer posts the matching receive, and "
        "neither ever reaches its recv"),
    "even/odd order": (
        "other = 1 - rank\nif rank % 2 == 0:\n    dist.send(x, dst=other)\n    dist.recv(y, src=other)\nelse:\n"
        "    dist.recv(y, src=other)\n    dist.send(x, dst=other)", False,
        "rank 0 sends while rank 1 receives, then the other way: every send meets a posted receive"),
    "isend then recv": (
        "other = 1 - rank\nreq = dist.isend(x, dst=other)\ndist.recv(y, src=other)\nreq.wait()", False,
        "isend returns at once, so both ranks reach recv; each receive completes the other's send, then wait() "
        "returns"),
    "both receive first": (
        "other = 1 - rank\ndist.recv(y, src=other)\ndist.send(x, dst=other)", True,
        "both ranks wait in recv for a message nobody sends: each sends only after its receive"),
}


def _deadlock(rng) -> Worked:
    name = pick(rng, tuple(_VARIANTS))
    code, hangs, why = _VARIANTS[name]
    body = "\n".join("    " + line for line in code.splitlines())
    stem = ("Two ranks on gloo run this, each with its own tensors x and y of 1 MiB (rank is 0 or 1):\n\n"
            f"{body}\n\nWhat happens?")
    deadlock = Choice("It deadlocks", f"{why[0].upper()}{why[1:]}.")
    finishes = Choice("It finishes: each rank gets the other's tensor", f"{why[0].upper()}{why[1:]}.")
    buffered = Choice("It finishes, because send copies x into a buffer and returns",
                      "gloo does not complete a send before the receiver has posted its receive (chapter 3 shows "
                      "both ranks blocked in send); MPI's small-message buffering is not something to rely on.")
    tags = Choice("It deadlocks, because the two messages have the same tag",
                  "tags only tell messages between the same pair apart; matching fails here only if the order does.")
    if hangs:
        right = Choice(deadlock.text, deadlock.feedback)
        wrong = [Choice(finishes.text, f"No: {why}."), buffered]
    else:
        right = Choice(finishes.text, finishes.feedback)
        wrong = [Choice(deadlock.text, f"No: {why}."), tags]
    return choice_worked(rng, stem, right, wrong, f"{'Deadlock' if hangs else 'No deadlock'}: {why}.",
                         params={"variant": name})


def _isend_buffer(rng) -> Worked:
    op = pick(rng, ("x.add_(1)", "x.zero_()", "x.mul_(2)"))
    stem = ("A rank sends a tensor without blocking, then keeps working on it:\n\n"
            f"    req = dist.isend(x, dst=1)\n    {op}\n    req.wait()\n\nWhat does rank 1 receive?")
    right = Choice("Either value, or a mix: x must not change until req.wait() has returned",
                   "PyTorch's docs for isend: modifying the tensor before the request completes causes undefined "
                   "behaviour. The bytes leave while the rank goes on.")
    wrong = [Choice("x as it was when isend was called: isend takes a copy",
                    "isend sends from x itself, without a copy, until the request completes."),
             Choice(f"x after {op}: the send happens at req.wait()",
                    "the transfer may start at once on a background thread (gloo) or stream (NCCL); wait() only "
                    "waits for it to finish."),
             Choice("Nothing: the program raises an error",
                    "nothing checks that the buffer stays untouched; the result is silently undefined.")]
    return choice_worked(rng, stem, right, wrong, "A send buffer belongs to the transfer until wait() returns.",
                         params={"op": op})


def _nccl_send(rng) -> Worked:
    size = pick(rng, ("4 KiB", "64 MiB", "1 GiB"))
    stem = (f"On two GPUs with NCCL, rank 0 calls dist.send(x, dst=1) for a {size} tensor x on its GPU, and the call "
            "returns after a few microseconds. What has happened when it returns?")
    right = Choice("The send was queued on a CUDA stream; the copy runs later on the GPU, and the host did not wait "
                   "for it", "NCCL's calls only enqueue work; time it with torch.cuda.synchronize() or CUDA events "
                   "(chapter 3, gloo and NCCL: who waits?).")
    wrong = [Choice("The data has arrived in rank 1's buffer",
                    "that holds for gloo's blocking send on the CPU; NCCL returns before its kernel has run."),
             Choice("The data is in a host staging buffer, ready to be sent",
                    "NCCL moves GPU memory to GPU memory (NVLink, PCIe or GPUDirect RDMA); the host stages nothing."),
             Choice("Rank 1 has posted its receive",
                    "the host of rank 0 learns nothing about rank 1 here; a missing receive shows up later as a hang "
                    "at the next synchronisation.")]
    return choice_worked(rng, stem, right, wrong, "NCCL calls are asynchronous to the host: they enqueue a kernel "
                         "on the current stream.", params={"size": size})


EXERCISES = (
    Exercise("ch03.deadlock", "Does this exchange deadlock?", "", 0,
             "Who is waiting for whom? On gloo a send waits for the matching receive (chapter 3).", _deadlock,
             kind="choice"),
    Exercise("ch03.isend-buffer", "A send buffer changed too early", "", 0,
             "What does isend's request stand for, and when is the buffer yours again? (chapter 3)", _isend_buffer,
             kind="choice"),
    Exercise("ch03.nccl-send-returns", "What NCCL's send has done when it returns", "", 0,
             "Which thread or stream runs NCCL's work, and who waits for it? (chapter 3)", _nccl_send,
             kind="choice"),
)
