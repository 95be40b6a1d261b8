"""Rabenseifner's halving-doubling all-reduce and the PAT-style log-step all-gather / reduce-scatter: results
against numpy, step counts, who talks to whom, bytes, and the alpha-beta cost read off the schedule itself."""
from __future__ import annotations

import math

import numpy as np
import pytest

from commlab import cost, schedules
from commlab.schedules import halving_doubling, pat

NEW = ("halving-doubling-all-reduce", "pat-reduce-scatter", "pat-all-gather")


def _inputs(schedule, rng, length=37):
    n = schedule.n_ranks
    if schedule.collective == "all_gather":
        return [rng.normal(size=int(rng.integers(0, 6))) for _ in range(n)]
    return [rng.normal(size=length) for _ in range(n)]


@pytest.mark.parametrize("algorithm", NEW)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 31, 32, 33, 100])
def test_results_equal_numpy(algorithm, n):
    schedule = schedules.build(algorithm, n)
    inputs = _inputs(schedule, np.random.default_rng(n))
    got = schedules.run(schedule, inputs, record=False).outputs
    total = np.sum(np.stack(inputs), axis=0) if schedule.collective != "all_gather" else None
    for r, out in enumerate(got):
        if schedule.collective == "all_gather":
            assert np.array_equal(out, np.concatenate(inputs))
        elif schedule.collective == "reduce_scatter":
            assert np.allclose(out, np.array_split(total, n)[r])
        else:
            assert np.allclose(out, total)


@pytest.mark.parametrize("n", range(1, 70))
def test_step_counts_are_logarithmic(n):
    p = 1 << (n.bit_length() - 1)
    extra = 2 if p < n else 0
    assert schedules.build("halving-doubling-all-reduce", n).n_steps == 2 * int(math.log2(p)) + extra
    for algorithm in ("pat-all-gather", "pat-reduce-scatter"):
        assert schedules.build(algorithm, n).n_steps == (math.ceil(math.log2(n)) if n > 1 else 0)


@pytest.mark.parametrize("p", [2, 4, 8, 16, 64])
def test_halving_doubling_pairs_ranks_d_apart_and_moves_the_rings_volume(p):
    s = schedules.build("halving-doubling-all-reduce", p)
    logp = int(math.log2(p))
    distances = [p >> (k + 1) for k in range(logp)] + [1 << k for k in range(logp)]   # halving, then doubling
    for step, d in zip(s.steps, distances):
        assert all(t.dst == t.src ^ d for t in step)
    sent = schedules.bytes_sent_per_rank(s, 1024 * p)
    assert np.allclose(sent, 2 * (p - 1) / p * 1024 * p)            # 2 (p-1)/p S, every rank


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 64])
def test_pat_sends_far_first_with_little_data_and_n_minus_1_chunks_in_all(n):
    transfers = pat.pat_all_gather_transfers(n)
    depth = pat.n_steps(n)
    per_step = [sum(1 for t in transfers if t.step == k and t.src == 0) for k in range(depth)]
    assert sum(per_step) == n - 1 and per_step == sorted(per_step)        # far steps carry the least
    dist = [{(t.dst - t.src) % n for t in transfers if t.step == k} for k in range(depth)]
    assert dist == [{1 << (depth - 1 - k)} for k in range(depth)]
    received = {(t.dst, t.chunk) for t in transfers}
    assert len(received) == len(transfers) == n * (n - 1)                # each missing chunk arrives exactly once
    assert all(dst != chunk for dst, chunk in received)


def _schedule_time_s(schedule, nbytes, alpha_s, bw_Bps):
    """Alpha-beta time read off the schedule: each step costs alpha plus its busiest rank's bytes over B."""
    sizes = np.diff(schedules.chunk_bounds(nbytes, schedule.n_chunks))
    total = 0.0
    for step in schedule.steps:
        per_rank = np.zeros(schedule.n_ranks)
        for t in step:
            per_rank[t.src] += sizes[t.chunk]
        total += alpha_s + per_rank.max() / bw_Bps
    return total


@pytest.mark.parametrize("n", [2, 4, 6, 8, 12, 16, 32])
def test_cost_formulas_match_the_schedules(n):
    alpha, bw, nbytes = 3e-6, 25e9, 1024 * 64 * n
    hd = schedules.build("halving-doubling-all-reduce", n)
    assert float(cost.rabenseifner_all_reduce_time_s(nbytes, n, alpha, bw)) == pytest.approx(
        _schedule_time_s(hd, nbytes, alpha, bw))
    for name, fn in (("pat-all-gather", cost.log_step_all_gather_time_s),
                     ("pat-reduce-scatter", cost.log_step_reduce_scatter_time_s)):
        assert float(fn(nbytes, n, alpha, bw)) == pytest.approx(_schedule_time_s(schedules.build(name, n), nbytes,
                                                                                  alpha, bw))


def test_halving_doubling_never_loses_to_the_ring_in_the_model_and_ties_at_zero_latency():
    sizes = np.geomspace(1, 1e10, 50)
    for n in (2, 8, 64, 1024):
        hd = cost.rabenseifner_all_reduce_time_s(sizes, n, 5e-6, 50e9)
        ring = cost.ring_all_reduce_time_s(sizes, n, 5e-6, 50e9)
        assert np.all(hd <= ring * (1 + 1e-12))
        assert np.allclose(cost.rabenseifner_all_reduce_time_s(sizes, n, 0.0, 50e9),
                           cost.ring_all_reduce_time_s(sizes, n, 0.0, 50e9))


def test_transpose_of_doubling_is_halving():
    assert halving_doubling.transpose(halving_doubling.doubling_all_gather_transfers(8)) == \
        halving_doubling.halving_reduce_scatter_transfers(8)
    assert halving_doubling.transpose([]) == []
