"""Check a reader's own ring on real gloo ranks against torch.distributed's collective (the
build-your-own-ring lab).

``check_ring(fn, "all_reduce")`` starts N ranks for every N asked (one launch per N), and on each rank, for
every length, calls ``fn(x, tracer)`` and compares the result with the torch collective on the same input:
``dist.all_reduce`` for all_reduce; the rank's chunk of ``dist.all_reduce`` for reduce_scatter (torch's
reduce_scatter needs equal chunks, the ring does not); for all_gather, ``dist.all_reduce`` of a buffer that
is zero but for the rank's own chunk. Inputs are small integers stored as float32, so every sum is exact and
any error is a real one. When ``fn`` records its sends on the tracer, the gathered trace is also compared with
the ring schedule (:func:`commlab.schedules.compare_trace`).

What ``fn`` receives and returns, by ``kind`` (``tracer`` knows ``rank``, ``n_ranks``, ``length`` and
``chunk_bounds``; ``fn(x)`` with one parameter is called without it):

* all_reduce: ``x`` the whole buffer (``length`` elements); return the sum, ``length`` elements.
* reduce_scatter: ``x`` the whole buffer; return this rank's chunk of the sum.
* all_gather: ``x`` this rank's chunk; return the whole buffer, chunks in rank order.
"""
from __future__ import annotations

import inspect

from commlab.errors import CommlabError, check_choice
from commlab.p2p.report import CaseResult, CheckReport, describe_crash
from commlab.p2p.tracer import Tracer

KINDS = ("all_reduce", "reduce_scatter", "all_gather")
DEFAULT_LENGTHS = (0, 1, 5, 17, 64, 1000)


def _input(rank: int, length: int, seed: int):
    import torch

    generator = torch.Generator().manual_seed(seed * 1_000_003 + rank * 10_007 + length)
    return torch.randint(-8, 9, (length,), generator=generator).to(torch.float32)


def _references(kind: str, xs: list, tracers: list[Tracer]) -> list:
    """What torch.distributed's own collective gives this rank for each whole-buffer input of ``xs``: one
    ``dist.all_reduce`` of the inputs laid end to end (a sum is elementwise, so each slice is that input's sum),
    not one a case."""
    import torch
    import torch.distributed as dist

    parts = []
    for x, tracer in zip(xs, tracers):
        if kind == "all_gather":  # zero but for this rank's chunk: the sum over ranks is the gathered buffer
            alone = torch.zeros_like(x)
            tracer.chunk(alone, tracer.rank).copy_(tracer.chunk(x, tracer.rank))
            parts.append(alone)
        else:
            parts.append(x)
    total = torch.cat(parts) if parts else torch.zeros(0)
    dist.all_reduce(total)
    wants = list(total.split([part.numel() for part in parts]))
    if kind == "reduce_scatter":
        return [tracer.chunk(want, tracer.rank).clone() for want, tracer in zip(wants, tracers)]
    return wants


def _gather_traces(local: list[dict], n_ranks: int) -> list[dict]:
    """Every rank's records, one trace per (function, length) as :meth:`Tracer.gather` sorts them, from one
    ``all_gather_object`` for all of them; ``local`` holds this rank's records, length -> transfers, one dict
    per function."""
    import torch.distributed as dist

    everyone: list = [None] * n_ranks
    dist.all_gather_object(everyone, local)
    return [{length: sorted(t for part in everyone for t in part[i][length]) for length in mine}
            for i, mine in enumerate(local)]


def _compare(n_ranks: int, length: int, rank: int, got, want) -> CaseResult:
    import torch

    if not isinstance(got, torch.Tensor):
        return CaseResult(n_ranks, length, rank, None, f"returned {type(got).__name__}, not a tensor")
    got = got.detach().cpu().flatten().to(want.dtype)
    if got.numel() != want.numel():
        return CaseResult(n_ranks, length, rank, None,
                          f"returned {got.numel()} elements where {want.numel()} were expected")
    if want.numel() == 0:
        return CaseResult(n_ranks, length, rank, 0.0, "")
    error = (got - want).abs()
    worst = int(torch.argmax(error))
    max_error = float(error[worst])
    note = "" if max_error == 0 else (f"element {worst}: expected {want[worst].item():g}, "
                                      f"got {got[worst].item():g}")
    return CaseResult(n_ranks, length, rank, max_error, note)


def _call(fn, x, tracer: Tracer):
    takes_tracer = len(inspect.signature(fn).parameters) >= 2
    return fn(x, tracer) if takes_tracer else fn(x)


def _check_rank(rank: int, n_ranks: int, fn, kind: str, lengths: tuple[int, ...], seed: int) -> dict:
    """Inside one rank: every length, compared, and this rank's own records (length -> transfers), for
    :func:`_check_ranks` to gather with the other ranks'."""
    xs = [_input(rank, length, seed) for length in lengths]
    tracers = [Tracer(rank, n_ranks, length) for length in lengths]
    wants = _references(kind, xs, tracers)
    results = []
    for length, x, tracer, want in zip(lengths, xs, tracers, wants):
        given = tracer.chunk(x, rank).clone() if kind == "all_gather" else x.clone()
        try:
            got = _call(fn, given, tracer)
        except Exception as exc:
            raise RuntimeError(f"{kind} with n_ranks={n_ranks}, length={length}: "
                               f"{type(exc).__name__}: {exc}") from exc
        results.append(_compare(n_ranks, length, rank, got, want))
    return {"results": results, "traces": {length: list(tracer.transfers) for length, tracer in zip(lengths, tracers)}}


def _validate(fn, kind: str, n_ranks_list, lengths, timeout_s: float):
    if not callable(fn):
        raise CommlabError(f"fn must be a function fn(x, tracer) -> tensor, got {fn!r}")
    check_choice("kind", kind, KINDS)
    n_list = tuple(n_ranks_list)
    if not n_list or any(not isinstance(n, int) or isinstance(n, bool) or not 2 <= n <= 64 for n in n_list):
        raise CommlabError(f"n_ranks_list must hold whole numbers from 2 to 64, got {n_list!r}")
    length_list = tuple(lengths)
    if not length_list or any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in length_list):
        raise CommlabError(f"lengths must be whole numbers >= 0, got {length_list!r}")
    if not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool) or not timeout_s > 0:
        raise CommlabError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    return n_list, length_list


def _check_ranks(rank: int, n_ranks: int, pairs: list, lengths: tuple[int, ...], seed: int) -> list[dict]:
    """Inside one rank: :func:`_check_rank` for each (fn, kind) of ``pairs``, in turn, and their traces gathered
    at once."""
    parts = [_check_rank(rank, n_ranks, fn, kind, lengths, seed) for fn, kind in pairs]
    traces = _gather_traces([part["traces"] for part in parts], n_ranks)
    return [{"results": part["results"], "traces": trace if rank == 0 else {}} for part, trace in zip(parts, traces)]


class _Verdict:
    """What :func:`check_ring` has found so far for one (fn, kind): the cases, the traces, the departures."""

    def __init__(self, kind: str, algorithm: str):
        self.kind, self.algorithm = kind, algorithm
        self.cases: list[CaseResult] = []
        self.departures: list[tuple] = []
        self.traced: list[tuple[int, int]] = []

    def add(self, n: int, per_rank: list[dict]) -> CheckReport:
        """The report once the parts of the launch at N = ``n`` (one dict per rank) are counted."""
        from commlab.schedules import build, compare_trace

        self.cases += [case for part in per_rank for case in part["results"]]
        for length, trace in per_rank[0]["traces"].items():
            if trace:
                self.traced.append((n, length))
                departure = compare_trace(build(self.algorithm, n), trace)
                if departure is not None:
                    self.departures.append((n, length, departure))
        return self.report()

    def report(self, crash=None) -> CheckReport:
        return CheckReport(self.kind, self.algorithm, tuple(self.cases), tuple(self.departures), tuple(self.traced),
                           crash=crash)


def check_ring(fn, kind: str, n_ranks_list=range(2, 9), lengths=DEFAULT_LENGTHS, timeout_s: float = 60.0,
               seed: int = 0, algorithm: str | None = None) -> CheckReport:
    """Run ``fn`` on real gloo ranks for each N in ``n_ranks_list`` and each length; compare with torch.

    Stops at the first N that fails and returns a :class:`CheckReport` whose text names the first failure
    (N, length, rank, max error, or the exception / deadlock); ``report.ok`` is True when all passed. The
    recorded trace, if ``fn`` used its tracer, is compared with ``algorithm`` (default: the ring schedule of
    ``kind``). ``timeout_s`` bounds each launch: a deadlocked ring is stopped and reported with its stack.
    """
    from commlab.launch import RankError, run

    n_list, length_list = _validate(fn, kind, n_ranks_list, lengths, timeout_s)
    verdict = _Verdict(kind, algorithm or "ring-" + kind.replace("_", "-"))
    report = verdict.report()
    for n in n_list:
        try:
            per_rank = [part for (part,) in run(_check_ranks, n, [(fn, kind)], length_list, seed, backend="gloo",
                                                timeout_s=timeout_s, verbose=False)]
        except RankError as exc:
            return verdict.report(crash=describe_crash(kind, n, exc, timeout_s))
        report = verdict.add(n, per_rank)
        if not report.ok:
            return report
    return report


def check_rings(pairs, n_ranks_list=range(2, 9), lengths=DEFAULT_LENGTHS, timeout_s: float = 60.0,
                seed: int = 0) -> list[CheckReport] | None:
    """:func:`check_ring` for several ``(fn, kind)`` pairs with one launch per N for all of them (each pair on
    its ring schedule): the report :func:`check_ring` gives each pair, or None where a launch failed (a crash
    or a deadlock, whose report must name the pair it came from: run :func:`check_ring` on each pair then).
    A pair that fails at some N is not run at the larger ones, as :func:`check_ring` stops there."""
    from commlab.launch import RankError, run

    pairs = list(pairs)
    checked = [_validate(fn, kind, n_ranks_list, lengths, timeout_s) for fn, kind in pairs]
    n_list, length_list = checked[0] if checked else ((), ())
    verdicts = [_Verdict(kind, "ring-" + kind.replace("_", "-")) for _, kind in pairs]
    reports = [v.report() for v in verdicts]
    for n in n_list:
        live = [i for i, r in enumerate(reports) if r.ok]
        if not live:
            break
        try:
            per_rank = run(_check_ranks, n, [pairs[i] for i in live], length_list, seed, backend="gloo",
                           timeout_s=timeout_s, verbose=False)
        except RankError:
            return None
        for j, i in enumerate(live):
            reports[i] = verdicts[i].add(n, [part[j] for part in per_rank])
    return reports
