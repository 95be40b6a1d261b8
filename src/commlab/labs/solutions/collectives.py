"""The collectives lab (labs/collectives.ipynb, labs/scripts/collectives.py): the reference answers, and the
checks that the notebook and the script share.

The reader fills in three things; with ``COMMLAB_LAB_SOLUTIONS=1`` the ones below replace them:

* :func:`my_predictions`: for N = 4 ranks holding 8 float32 elements each (rank r: 10 r + 1, ..., 10 r + 8),
  what the asked rank holds after each collective and how many bytes rank 1 sends (chapter 04's table).
  The check holds the table against :mod:`commlab.collectives` (numpy reference, bytes per rank).
* :func:`run_collective`: the torch.distributed call of each collective, run live and compared on every rank
  with the numpy reference.
* :func:`all_reduce_by_halves`: all_reduce as reduce_scatter followed by all_gather, compared with
  ``dist.all_reduce``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from commlab.labs.checking import Outcome, device_and_sync, run_checked

#: The collectives of the lab, in the order of chapter 04 (barrier carries no data).
OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter",
       "barrier")
#: Collectives whose result torch.distributed defines on the root only: the table asks about the root there.
ROOT_ONLY = ("reduce", "gather")
ROOT = 0
#: The rank whose bytes the table asks for (never the root, so every row has a non-trivial answer).
SENDER = 1

# --- the reference answers ---------------------------------------------------------------------------------


def my_predictions() -> dict:
    """(elements the asked rank holds afterwards, its last element, bytes rank 1 sends) for N = 4, 8 float32
    per rank (S = 32 B, the size of one input), rank r holding 10 r + [1..8], root 0."""
    return {
        "broadcast": (8, 8, 32),            # rank 0's buffer; a chain 0 -> 1 -> 2 -> 3: rank 1 forwards S
        "reduce": (8, 92, 32),              # on the root: 8 + 18 + 28 + 38; every non-root sends S
        "all_reduce": (8, 92, 48),          # ring: 2 (N-1)/N S = 2 * 3/4 * 32
        "all_gather": (32, 38, 96),         # 4 x 8 in rank order; (N-1)/N of the 128 B result
        "reduce_scatter": (2, 76, 24),      # rank 1 gets chunk 1 = elements 2, 3 of the sum: 4+14+24+34
        "all_to_all": (8, 34, 24),          # chunk 1 of every rank: 3, 4, 13, 14, 23, 24, 33, 34
        "gather": (32, 38, 32),             # on the root: everything; rank 1 sends its own 32 B
        "scatter": (2, 4, 0),               # chunk 1 of the root's buffer: 3, 4; only the root sends
        "barrier": (0, None, 0),            # no data at all
    }


def run_collective(op, x, rank, n_ranks, root=0):
    """Run collective ``op`` on this rank's input ``x``; return what this rank holds afterwards (None for barrier).

    Inputs follow torch: all_gather and gather take the rank's own piece; reduce_scatter, all_to_all and
    scatter take the whole buffer (scatter's only on the root) and hand out chunks of len(x) / n_ranks.
    """
    import torch
    import torch.distributed as dist

    if op == "barrier":
        dist.barrier()
        return None
    if op in ("broadcast", "reduce", "all_reduce"):
        out = x.clone()
        if op == "broadcast":
            dist.broadcast(out, src=root)
        elif op == "reduce":
            dist.reduce(out, dst=root)
        else:
            dist.all_reduce(out)
        return out
    if op == "all_gather":
        out = x.new_empty(n_ranks * x.numel())
        dist.all_gather_single(out, x)
    elif op == "reduce_scatter":
        out = x.new_empty(x.numel() // n_ranks)
        dist.reduce_scatter_single(out, x)
    elif op == "all_to_all":
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x)
    elif op == "gather":
        parts = [torch.empty_like(x) for _ in range(n_ranks)] if rank == root else None
        dist.gather(x, parts, dst=root)
        out = torch.cat(parts) if rank == root else None
    else:  # scatter
        out = x.new_empty(x.numel() // n_ranks)
        dist.scatter(out, list(x.chunk(n_ranks)) if rank == root else None, src=root)
    return out


def all_reduce_by_halves(x, n_ranks):
    """The sum of every rank's ``x`` (length a multiple of n_ranks) as reduce_scatter, then all_gather."""
    import torch.distributed as dist

    shard = x.new_empty(x.numel() // n_ranks)
    dist.reduce_scatter_single(shard, x)      # rank r: chunk r of the sum
    out = x.new_empty(x.numel())
    dist.all_gather_single(out, shard)   # every rank: all the summed chunks, in rank order
    return out


# --- what commlab.collectives says: the table's answers ---------------------------------------------------


@dataclass(frozen=True)
class Answer:
    n_out: int
    """Elements the asked rank holds after the call (0: nothing)."""
    last: float | None
    """Its last element (None when it holds nothing)."""
    sent_nbytes: float
    """Bytes rank SENDER sends under commlab.collectives' ring / chain implementation."""


def lab_inputs(op: str, n_ranks: int, length: int, seed: int | None = None) -> list[np.ndarray]:
    """Rank r's input: 10 r + [1, ..., length] as float32 (every collective of the lab takes ``length``), or,
    with ``seed``, whole numbers from -1000 to 1000 drawn from it (exact in float32, and in their sums)."""
    if seed is not None:
        rng = np.random.default_rng([seed, len(op)])
        return [rng.integers(-1000, 1001, size=length).astype(np.float32) for _ in range(n_ranks)]
    return [(10 * r + np.arange(1, length + 1)).astype(np.float32) for r in range(n_ranks)]


def asked_rank(op: str) -> int:
    return ROOT if op in ROOT_ONLY else SENDER


def answers(n_ranks: int = 4, length: int = 8, itemsize: int = 4) -> dict[str, Answer]:
    """The table's answers from commlab.collectives: ``spec(op).reference`` and ``bytes_sent_per_rank``."""
    from commlab.collectives import spec

    out = {}
    for op in OPS[:-1]:
        s = spec(op)
        held = s.reference(lab_inputs(op, n_ranks, length), root=ROOT)[asked_rank(op)]
        count = length // n_ranks if s.input_count(1, n_ranks) == n_ranks else length
        size_nbytes = s.size_nbytes(count, itemsize, n_ranks)
        sent = float(s.bytes_sent_per_rank(size_nbytes, n_ranks, root=ROOT)[SENDER])
        out[op] = Answer(len(held), float(held[-1]) if len(held) else None, sent)
    out["barrier"] = Answer(0, None, 0.0)
    return out


def _same(got, want) -> bool:
    if want is None or got is None:
        return got is None and want is None
    try:
        return abs(float(got) - float(want)) < 1e-9
    except (TypeError, ValueError):
        return False


def grade_predictions(predicted: dict, n_ranks: int = 4, length: int = 8) -> tuple[list[tuple], list[str]]:
    """(rows (op, field, predicted, expected, right), problems in words) of the reader's table."""
    if not isinstance(predicted, dict):
        return [], [f"my_predictions() must return a dict of op -> (n_out, last, sent_nbytes), got {predicted!r}"]
    rows, problems = [], []
    for op, want in answers(n_ranks, length).items():
        got = predicted.get(op)
        if not (isinstance(got, (tuple, list)) and len(got) == 3):
            problems.append(f"{op}: expected a tuple (n_out, last, sent_nbytes), got {got!r}")
            continue
        for name, g, w in zip(("n_out", "last", "sent_nbytes"), got, (want.n_out, want.last, want.sent_nbytes)):
            rows.append((op, name, g, w, _same(g, w)))
            if not _same(g, w):
                problems.append(f"{op}: {name} is {w!r}, not {g!r}" if g is not None else f"{op}: {name} not filled in")
    return rows, problems


# --- running them live --------------------------------------------------------------------------------------


def _verdict(op: str, rank: int, got, want) -> str | None:
    """None when ``got`` (what the reader's code returned) equals the numpy reference ``want``."""
    if want is None:
        return None if got is None else f"{op} on rank {rank}: expected None (no data), got {type(got).__name__}"
    if got is None:
        return f"{op} on rank {rank}: returned None; return the tensor this rank holds afterwards"
    got = np.asarray(got.detach().cpu() if hasattr(got, "detach") else got).ravel()
    if got.shape != want.shape:
        return f"{op} on rank {rank}: expected {want.size} elements, got {got.size}"
    if not np.array_equal(got, want):
        worst = int(np.argmax(np.abs(got - want)))
        return f"{op} on rank {rank}: element {worst} is {got[worst]:g}, the reference says {want[worst]:g}"
    return None


def _run_one(fn, op, x, rank, n_ranks, root=ROOT):
    """(what the rank holds, None) or (None, the exception in words)."""
    try:
        return fn(op, x, rank, n_ranks, root), None
    except NotImplementedError as exc:
        return None, f"{op}: not written yet ({exc})"
    except Exception as exc:  # noqa: BLE001 - the reader's mistake, reported in words
        return None, f"{op} on rank {rank} raised {type(exc).__name__}: {exc}"


def collectives_in_group(rank, n_ranks, fn, length, timed_barrier=True, root: int = ROOT,
                         seed: int | None = None) -> dict:
    """Inside a rank: every collective of OPS through ``fn``, each held against the numpy reference.

    Returns {op: None (right) or a problem in words}. The barrier check: rank r arrives 20 r ms late, and
    no rank may leave before the last has arrived (one clock: ``timed_barrier=False`` across machines).
    ``root``: the root of the rooted collectives; ``seed``: the inputs drawn from it (:func:`lab_inputs`).
    """
    import torch
    import torch.distributed as dist

    from commlab.collectives import spec

    device, sync = device_and_sync()
    verdicts = {}
    for op in OPS:
        inputs = lab_inputs(op, n_ranks, length, seed)
        x = torch.from_numpy(inputs[rank]).to(device)
        if op == "barrier":
            time.sleep(0.02 * rank)
        arrived_s = time.time()
        got, problem = _run_one(fn, op, x, rank, n_ranks, root)
        sync()
        left_s = time.time()
        if op == "barrier":
            verdicts[op] = problem or _barrier_verdict(rank, n_ranks, arrived_s, left_s, timed_barrier)
            continue
        want = spec(op).reference(inputs, root=root)[rank] if (rank == root or op not in ROOT_ONLY) else "any"
        verdicts[op] = problem or (None if isinstance(want, str) else _verdict(op, rank, got, want))
    return {"backend": dist.get_backend(), "verdicts": verdicts}


def _barrier_verdict(rank, n_ranks, arrived_s, left_s, timed) -> str | None:
    import torch.distributed as dist

    arrivals: list = [None] * n_ranks
    dist.all_gather_object(arrivals, arrived_s)
    if timed and left_s < max(arrivals) - 1e-3:
        return (f"barrier: rank {rank} left {1e3 * (max(arrivals) - left_s):.0f} ms before the last rank arrived; "
                "did it call dist.barrier()?")
    return None


def check_collectives(fn, n_ranks: int = 4, length: int = 8, timeout_s: float = 60.0, root: int = ROOT,
                      seed: int | None = None) -> Outcome:
    """Run ``fn(op, x, rank, n_ranks, root)`` for every op on ``n_ranks`` ranks; ``details["verdicts"][op]``
    is None where every rank matched the numpy reference, else the first problem."""
    outcome = run_checked(collectives_in_group, n_ranks, fn, length, True, root, seed,
                          what=f"run_collective on {n_ranks} ranks" + (f", root {root}" if root != ROOT else ""),
                          timeout_s=timeout_s)
    if not outcome.ok:
        return outcome
    verdicts = {op: next((v["verdicts"][op] for v in outcome.rank_values if v["verdicts"][op]), None) for op in OPS}
    wrong = [problem for problem in verdicts.values() if problem]
    return Outcome(outcome.values, wrong[0] if wrong else "", outcome.backend, {"verdicts": verdicts})


def halves_in_group(rank, n_ranks, fn, length, seed: int = 0) -> dict:
    """Inside a rank: ``fn(x, n_ranks)`` against ``dist.all_reduce`` of the same random whole numbers (rank r's
    drawn from ``seed`` + r)."""
    import torch
    import torch.distributed as dist

    device, sync = device_and_sync()
    g = torch.Generator().manual_seed(seed + rank)
    x = torch.randint(-50, 50, (length,), generator=g).to(torch.float32).to(device)
    want = x.clone()
    dist.all_reduce(want)
    got, problem = _run_one(lambda op, t, r, n, root: fn(t, n), "all_reduce_by_halves", x.clone(), rank, n_ranks)
    sync()
    if problem is None:
        problem = _verdict("all_reduce_by_halves", rank, got, want.cpu().numpy())
    return {"backend": dist.get_backend(), "problem": problem}


def check_all_reduce_by_halves(fn, n_ranks: int = 4, length: int = 4096, timeout_s: float = 30.0,
                               seed: int = 0) -> Outcome:
    outcome = run_checked(halves_in_group, n_ranks, fn, length, seed, what=f"all_reduce_by_halves on {n_ranks} ranks",
                          timeout_s=timeout_s)
    problems = [v["problem"] for v in outcome.values or () if v["problem"]]
    return outcome if not outcome.ok else Outcome(outcome.values, problems[0] if problems else "", outcome.backend)
