"""The build-your-own-ring lab (labs/build_your_own_ring.ipynb, labs/scripts/build_your_own_ring.py): the
reference answers, and the recording, timing and in-group checks that the notebook and the script share.

The reader writes the two phases of the ring and the all-reduce made of them; with
``COMMLAB_LAB_SOLUTIONS=1`` the functions below replace theirs. Each phase works in place on a whole 1-D
buffer cut into N chunks of ``np.array_split`` sizes (``tracer.chunk(buffer, c)``) and records every send on
the tracer (:class:`commlab.p2p.Tracer`), so that the trace can be compared with the reference schedule
(:func:`commlab.schedules.compare_trace`) and animated (``commlab.viz.RingAnimation.from_trace``).

The ring (chapter 05, :mod:`commlab.schedules.ring`): in step s rank r sends to (r + 1) mod N and receives
from (r - 1) mod N.

* reduce-scatter, s = 0..N-2: send chunk (r - s - 1) mod N, receive chunk (r - s - 2) mod N and add it;
  afterwards rank r holds the sum of chunk r.
* all-gather, s = 0..N-2: send chunk (r - s) mod N, receive chunk (r - s - 1) mod N and store it.
* all-reduce: reduce-scatter in steps 0..N-2, then all-gather in steps N-1..2N-3; each rank sends
  2(N-1)/N of the buffer (Patarasuk and Yuan, 2009).
"""
from __future__ import annotations

import statistics
import time

from commlab.labs.checking import Outcome, device_and_sync, run_checked
from commlab.p2p import ring

# --- the reference answers: the ring of commlab.p2p.ring (one ring in the package), in the lab's signatures ----

reduce_scatter_steps = ring.reduce_scatter_steps
all_gather_steps = ring.all_gather_steps
ring_reduce_scatter = ring.ring_reduce_scatter
ring_all_gather = ring.ring_all_gather
ring_all_reduce = ring.ring_all_reduce


def reduce_scatter_steps_wrong_chunk(buffer, tracer, first_step=0):
    """The lab's classic slip, shown after the learner's own steps pass: in step s it sends chunk (r - s) mod N,
    the all-gather's index, instead of (r - s - 1) mod N; everything else as :func:`reduce_scatter_steps`."""
    rank, n = tracer.rank, tracer.n_ranks
    for s in range(n - 1):
        ring.ring_step(buffer, tracer, first_step + s, (rank - s) % n, (rank - s - 2) % n, reduce=True)


KINDS = {"reduce_scatter": ring_reduce_scatter, "all_gather": ring_all_gather, "all_reduce": ring_all_reduce}

# --- recording, timing, checking inside a group ------------------------------------------------------------


def _input(rank: int, length: int, device):
    """Small whole numbers as float32: every sum is exact, so any error is a real one."""
    import torch

    g = torch.Generator().manual_seed(7919 * rank + length)
    return torch.randint(-8, 9, (length,), generator=g).to(torch.float32).to(device)


def trace_in_group(rank, n_ranks, fn, length):
    """Inside a rank: run the all-reduce ``fn(x, tracer)`` once and gather every rank's recorded sends."""
    from commlab.p2p import Tracer

    device, sync = device_and_sync()
    tracer = Tracer(rank, n_ranks, length)
    fn(_input(rank, length, device), tracer)
    sync()
    return tracer.gather()


def record_trace(fn, n_ranks: int = 4, length: int = 8, timeout_s: float = 30.0) -> Outcome:
    """The trace of one run of ``fn`` on ``n_ranks`` gloo ranks (``details["trace"]``), for the animation."""
    outcome = run_checked(trace_in_group, n_ranks, fn, length, what=f"{fn.__name__} on {n_ranks} ranks",
                          timeout_s=timeout_s, backend="gloo")
    return outcome if not outcome.ok else Outcome(outcome.values, "", "gloo", {"trace": outcome.rank_values[0]})


def timing_in_group(rank, n_ranks, fn, n_elements, n_repeats):
    """Inside a rank: median time of ``fn`` and of ``dist.all_reduce`` on the same data, and the largest error."""
    import torch.distributed as dist

    from commlab.p2p import Tracer

    device, sync = device_and_sync()
    x = _input(rank, n_elements, device)
    times_s = {"yours": [], "torch": []}
    for _ in range(n_repeats + 1):  # the first run of each warms up
        for name in times_s:
            dist.barrier()
            sync()
            start = time.perf_counter()
            if name == "yours":
                got = fn(x, Tracer(rank, n_ranks, n_elements))
            else:
                want = x.clone()
                dist.all_reduce(want)
            sync()
            times_s[name].append(time.perf_counter() - start)
    return {"backend": dist.get_backend(), "yours_s": statistics.median(times_s["yours"][1:]),
            "torch_s": statistics.median(times_s["torch"][1:]), "max_error": float((got - want).abs().max())}


def time_against_torch(fn, n_ranks: int = 4, n_elements: int = 1 << 20, n_repeats: int = 5,
                       timeout_s: float = 60.0) -> Outcome:
    """Median times of ``fn`` and of ``dist.all_reduce`` (rank 0's clock) in ``details``."""
    outcome = run_checked(timing_in_group, n_ranks, fn, n_elements, n_repeats,
                          what=f"timing {fn.__name__} on {n_ranks} ranks", timeout_s=timeout_s)
    if not outcome.ok:
        return outcome
    worst = max(v["max_error"] for v in outcome.rank_values)
    problem = f"{fn.__name__} differs from dist.all_reduce by up to {worst:g}" if worst > 0 else ""
    return Outcome(outcome.values, problem, outcome.backend, dict(outcome.rank_values[0]))


def _want(kind, x, tracer):
    """What torch.distributed's own collective gives this rank (all_reduce of a zero-padded chunk for
    all_gather: gloo's all_gather needs equal chunks, the ring does not)."""
    import torch.distributed as dist

    total = x.clone()
    if kind == "all_gather":
        total.zero_()
        tracer.chunk(total, tracer.rank).copy_(tracer.chunk(x, tracer.rank))
    dist.all_reduce(total)
    return tracer.chunk(total, tracer.rank) if kind == "reduce_scatter" else total


def check_in_group(rank, n_ranks, fn, kind, lengths) -> list[str]:
    """Inside a rank (the script under torchrun): ``fn`` of ``kind`` against torch for every length, and its
    trace against the ring schedule. Returns problems in words (empty when right)."""
    from commlab.p2p import Tracer
    from commlab.schedules import build, compare_trace

    device, sync = device_and_sync()
    problems = []
    for length in lengths:
        x, tracer = _input(rank, length, device), Tracer(rank, n_ranks, length)
        given = tracer.chunk(x, rank).clone() if kind == "all_gather" else x.clone()
        got = fn(given, tracer)
        sync()
        want = _want(kind, x, tracer)
        if got.numel() != want.numel() or not bool((got.flatten() == want).all()):
            problems.append(f"{kind} is wrong with n_ranks={n_ranks}, length={length} on rank {rank}")
        departure = compare_trace(build("ring-" + kind.replace("_", "-"), n_ranks), tracer.gather())
        if departure is not None and rank == 0:
            problems.append(f"{kind}, length={length}: the sends depart from the ring: {departure.message()}")
    return problems


# --- a failed check in a few words --------------------------------------------------------------------------


def _reader_frame(text: str) -> str:
    """'in reduce_scatter_steps, line 12' for the innermost frame outside commlab and torch, or ''."""
    import re

    frames = re.findall(r'File "([^"]*)", line (\d+),? in (\w+)', text.replace("\\", "/"))
    mine = [(line, name) for path, line, name in frames if "/commlab/" not in path and "/torch/" not in path]
    if not mine:
        return ""
    line, name = mine[0] if "most recent call first" in text else mine[-1]
    return f"in {name}, line {line}"


def in_words(report) -> str:
    """What is wrong, in two lines at most and without tracebacks ("" when nothing is): the first failure of a
    :class:`commlab.p2p.CheckReport`, or a right result whose sends were not recorded on the tracer."""
    from commlab.labs.checking import blocked_in

    if report.ok:
        return "" if report.traced else (f"{report.kind} gives the right results, but recorded no sends: send with "
                                         "tracer.send_op(...) so that the lab can check your schedule")
    if report.crash is None:
        restarted = report.kind == "all_reduce" and "unexpected transfer" in report.failure
        hint = ("\n(two sends from one rank in one step: are the all-gather's steps numbered from "
                "first_step = N - 1?)") if restarted else ""
        return report.failure + hint
    head, where = report.crash.splitlines()[0], _reader_frame(report.crash)
    if "SIGABRT" in report.crash:
        return (f"{head} a rank was aborted inside gloo. The usual cause is a message whose size differs from the "
                "receive posted for it (gloo prints \"Received data size doesn't match expected size\" above): in "
                "each step, the chunk a rank sends must be the chunk its right neighbour receives.")
    if "did not finish" in head:
        call = blocked_in(report.crash)
        where_text = f" ({where})" if where and call.startswith("dist.") else ""
        return f"{head}\nthe ranks were waiting in {call}{where_text}"
    cause = [line for line in report.crash.splitlines() if line.startswith("RuntimeError: ")]
    cause = cause[0].split(": ", 2)[-1] if cause else report.crash.splitlines()[1]
    if cause.startswith("NotImplementedError"):
        return f"{head.rstrip(':')}: not written yet ({cause}); fill in the cell marked 'your turn'"
    return f"{head} {cause}" + (f" ({where})" if where else "")
