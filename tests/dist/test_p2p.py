"""commlab.p2p on real gloo ranks: equal to torch.distributed's collectives, traces equal to the schedules,
and check_ring's verdicts on right and wrong rings."""
from __future__ import annotations

import sys

import pytest

from commlab import p2p
from commlab.errors import CommlabError
from commlab.launch import run

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

LENGTHS = (0, 1, 5, 17, 64)


def _torch_references(x, rank: int, n_ranks: int) -> dict:
    """What torch.distributed's own collectives give for this rank's x (uneven chunks included)."""
    import torch
    import torch.distributed as dist

    total = x.clone()
    dist.all_reduce(total)
    pieces = list(x.tensor_split(n_ranks))  # np.array_split sizes
    mine = torch.empty_like(pieces[rank])
    dist.reduce_scatter(mine, [p.clone() for p in pieces])
    everyone: list = [None] * n_ranks
    dist.all_gather_object(everyone, pieces[rank])
    return {"all_reduce": total, "reduce_scatter": mine, "all_gather": torch.cat(everyone)}


def _compare_all(rank: int, n_ranks: int) -> list:
    """For every length and algorithm: (name, length, equal to torch, departure from the schedule)."""
    import torch

    from commlab.schedules import build, compare_trace

    out = []
    for length in LENGTHS:
        g = torch.Generator().manual_seed(1000 * length + rank)
        x = torch.randn(length, generator=g, dtype=torch.float64)
        ref = _torch_references(x, rank, n_ranks)
        runs = {
            "ring-all-reduce": lambda t, x=x, ref=ref: (p2p.ring_all_reduce(x, t), ref["all_reduce"]),
            "ring-reduce-scatter": lambda t, x=x, ref=ref: (p2p.ring_reduce_scatter(x, t), ref["reduce_scatter"]),
            "ring-all-gather": lambda t, x=x, ref=ref: (p2p.ring_all_gather(x.tensor_split(n_ranks)[rank], t),
                                                     ref["all_gather"]),
            "tree-all-reduce": lambda t, x=x, ref=ref: (p2p.tree_all_reduce(x, t), ref["all_reduce"]),
        }
        for name, call in runs.items():
            tracer = p2p.Tracer(length=length)
            got, want = call(tracer)
            trace = tracer.gather()
            same = got.shape == want.shape and torch.allclose(got, want, rtol=1e-12, atol=1e-12)
            out.append((name, length, same, compare_trace(build(name, n_ranks), trace)))
    return out


@pytest.mark.parametrize("n_ranks", range(2, 9))
def test_ring_and_tree_equal_torch_and_follow_their_schedules(n_ranks):
    per_rank = run(_compare_all, n_ranks, backend="gloo", verbose=False, timeout_s=120)
    for rank, results in enumerate(per_rank):
        for name, length, same, departure in results:
            assert same, f"{name} differs from torch on rank {rank} of {n_ranks}, length {length}"
            assert departure is None, f"{name}, length {length}: {departure.message()}"


def _good_ring(x, tracer):
    return p2p.ring_all_reduce(x, tracer)


def _off_by_one_on_rank_1(x, tracer):
    y = p2p.ring_all_reduce(x)
    if tracer.rank == 1 and x.numel() == 5:
        y[3] += 1
    return y


def _wrong_chunk(x, tracer):
    """Right result (uses torch), but records sends that send the wrong chunk in step 0."""
    import torch.distributed as dist

    n, r = tracer.n_ranks, tracer.rank
    for s in range(2 * (n - 1)):
        chunk = (r - s - 1) % n if s < n - 1 else (r - s + n - 1) % n
        tracer.record((r + 1) % n, step=s, chunk=(chunk + (s == 0)) % n, reduce=s < n - 1)
    y = x.clone()
    dist.all_reduce(y)
    return y


def _deadlock(x, tracer):
    import torch.distributed as dist

    y = x.clone()
    dist.recv(y, (tracer.rank - 1) % tracer.n_ranks)  # every rank waits to receive first
    return y


def test_check_ring_passes_a_right_ring_and_says_so():
    report = p2p.check_ring(_good_ring, "all_reduce", n_ranks_list=[2, 3], lengths=[0, 5, 17], timeout_s=60)
    assert report.ok, report.failure
    assert len(report.cases) == (2 + 3) * 3
    assert "follow ring-all-reduce step for step" in str(report)


def _reference_rs(x, tracer):
    return p2p.ring_reduce_scatter(x, tracer)


def _reference_ag(chunk, tracer):
    return p2p.ring_all_gather(chunk, tracer)


def _reference_ag_untraced(chunk):
    import torch.distributed as dist

    return p2p.ring_all_gather(chunk, length=chunk.numel() * dist.get_world_size())


@pytest.mark.parametrize("fn, kind, traced", [(_reference_rs, "reduce_scatter", True),
                                              (_reference_ag, "all_gather", True),
                                              (_reference_ag_untraced, "all_gather", False)])
def test_check_ring_passes_the_reference_reduce_scatter_and_all_gather(fn, kind, traced):
    lengths = [0, 5, 17] if traced else [0, 6, 12]  # the untraced all_gather assumes equal chunks
    report = p2p.check_ring(fn, kind, n_ranks_list=[3], lengths=lengths, timeout_s=60)
    assert report.ok, report.failure
    assert bool(report.traced) == traced
    assert ("schedule was not checked" in str(report)) != traced


def test_check_ring_names_the_first_wrong_case():
    report = p2p.check_ring(_off_by_one_on_rank_1, "all_reduce", n_ranks_list=[2, 3], lengths=[0, 5],
                            timeout_s=60)
    assert not report.ok
    assert report.failure.startswith("all_reduce is wrong with n_ranks=2, length=5 on rank 1: max error 1")


def test_check_ring_names_the_first_departure_from_the_schedule():
    report = p2p.check_ring(_wrong_chunk, "all_reduce", n_ranks_list=[3], lengths=[6], timeout_s=60)
    assert "depart from ring-all-reduce: step 0: wrong chunk" in report.failure


def test_check_ring_reports_a_deadlock_with_where_it_was():
    report = p2p.check_ring(_deadlock, "all_reduce", n_ranks_list=[2], lengths=[4], timeout_s=4)
    assert "did not finish within 4 s: a deadlock?" in report.failure
    assert "in _deadlock" in report.failure


def test_tracer_refuses_impossible_transfers_without_a_group():
    tracer = p2p.Tracer(rank=1, n_ranks=4, length=10)
    assert [int(b) for b in tracer.chunk_bounds] == [0, 3, 6, 8, 10]
    with pytest.raises(CommlabError, match="dst must be a whole number from 0 to 3, got 4"):
        tracer.record(4, step=0, chunk=0)
    with pytest.raises(CommlabError, match="cannot send to itself"):
        tracer.record(1, step=0, chunk=0)


def test_check_ring_refuses_bad_arguments():
    with pytest.raises(CommlabError, match="unknown kind 'allreduce'"):
        p2p.check_ring(_good_ring, "allreduce")
    with pytest.raises(CommlabError, match="n_ranks_list must hold whole numbers from 2 to 64"):
        p2p.check_ring(_good_ring, "all_reduce", n_ranks_list=[1])
