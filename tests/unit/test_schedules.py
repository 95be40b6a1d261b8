"""schedules: every algorithm against numpy's sum for N = 1..64 and any length, and the ring's properties."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from commlab import schedules
from commlab.errors import CommlabError
from commlab.schedules import tree


def _inputs(schedule, length, seed):
    rng = np.random.default_rng(seed)
    n = schedule.n_ranks
    if schedule.collective == "all_gather":
        sizes = [length // n + (1 if r < length % n else 0) for r in range(n)]
        return [rng.normal(size=k) for k in sizes]
    return [rng.normal(size=length) for _ in range(n)]


def _numpy_answer(schedule, inputs):
    """Written here from numpy alone, not from commlab.collectives."""
    n = schedule.n_ranks
    if schedule.collective == "all_gather":
        return [np.concatenate(inputs)] * n
    total = np.sum(np.stack(inputs), axis=0)
    if schedule.collective == "reduce_scatter":
        return np.array_split(total, n)
    return [total] * n


@settings(max_examples=150, deadline=None)
@given(algorithm=st.sampled_from(schedules.ALGORITHMS), n=st.integers(1, 64), length=st.integers(0, 200),
       seed=st.integers(0, 2**16))
def test_every_schedule_equals_numpy(algorithm, n, length, seed):
    schedule = schedules.build(algorithm, n)
    inputs = _inputs(schedule, length, seed)
    got = schedules.run(schedule, inputs, record=False).outputs
    for g, want in zip(got, _numpy_answer(schedule, inputs)):
        assert np.allclose(g, want)


@pytest.mark.parametrize("algorithm", schedules.ALGORITHMS)
def test_recorded_and_unrecorded_runs_agree(algorithm):
    schedule = schedules.build(algorithm, 6)
    inputs = _inputs(schedule, 23, 3)
    a, b = schedules.run(schedule, inputs), schedules.run(schedule, inputs, record=False)
    assert len(a.states) == schedule.n_steps + 1 and a.holds.shape[0] == schedule.n_steps + 1
    assert all(np.allclose(x, y) for x, y in zip(a.outputs, b.outputs))


@pytest.mark.parametrize("n", range(1, 65))
def test_ring_all_reduce_shape(n):
    s = schedules.build("ring-all-reduce", n)
    assert s.n_steps == 2 * (n - 1)
    for step in s.steps:
        assert sorted(t.src for t in step) == list(range(n))          # every rank sends one chunk per step
        assert all(t.dst == (t.src + 1) % n for t in step)            # forwards
    nbytes = 10**6 + 7
    sent = schedules.bytes_sent_per_rank(s, nbytes)
    chunk = math.ceil(nbytes / n)
    assert np.all(np.abs(sent - 2 * (n - 1) / n * nbytes) <= 2 * (n - 1) * (chunk - nbytes / n) + 1e-6)
    assert np.all(np.abs(sent - 2 * (n - 1) / n * nbytes) <= chunk * 2)


@pytest.mark.parametrize("n", range(1, 65))
def test_tree_depth_is_ceil_log2(n):
    want = math.ceil(math.log2(n)) if n > 1 else 0
    parents = tree.tree_parents(n)
    depth = 0
    for r in range(n):
        d, node = 0, r
        while parents[node] != -1:
            node, d = parents[node], d + 1
        depth = max(depth, d)
    assert depth == want == tree.depth(n)
    assert schedules.build("tree-all-reduce", n).n_steps == 2 * want
    children = [sum(1 for p in parents if p == r) for r in range(n)]
    assert max(children, default=0) <= 2


@pytest.mark.parametrize("n", range(2, 33))
def test_double_tree_leaves_are_inner_nodes_in_the_other_tree(n):
    a, b = tree.tree_parents(n), tree.tree_parents(n, mirrored=True)
    inner_a = {p for p in a if p != -1}
    inner_b = {p for p in b if p != -1}
    leaves_a = set(range(n)) - inner_a
    # NCCL's guarantee: a leaf of one tree is not a leaf of the other (up to one rank for small N)
    assert len(leaves_a - inner_b) <= 1
    assert sorted(p for p in b).count(-1) == 1


def test_ring_reduce_scatter_ends_with_chunk_r_on_rank_r():
    s = schedules.build("ring-reduce-scatter", 5)
    run = schedules.run(s, [np.full(5, float(r)) for r in range(5)])
    holds = run.holds[-1]
    for r in range(5):
        assert holds[r, r].all()          # chunk r of rank r holds every rank's contribution


def test_describe_step_names_every_transfer():
    s = schedules.build("ring-all-reduce", 4)
    text = schedules.describe_step(s, 2)
    for t in s.steps[2]:
        assert f"rank {t.src} sends chunk {t.chunk} to rank {t.dst}, which adds it" in text
    assert "stores it" in schedules.describe_step(s, 3)


def test_compare_trace_finds_the_first_departure():
    s = schedules.build("ring-all-reduce", 4)
    good = list(s.transfers())
    assert schedules.compare_trace(s, good) is None
    wrong_chunk = [t if (t.step, t.src) != (2, 1) else schedules.Transfer(2, 1, 2, (t.chunk + 1) % 4, True)
                   for t in good]
    d = schedules.compare_trace(s, wrong_chunk)
    assert (d.step, d.kind) == (2, "wrong chunk")
    no_reduce = [t if (t.step, t.src) != (0, 3) else schedules.Transfer(0, 3, 0, t.chunk, False) for t in good]
    assert schedules.compare_trace(s, no_reduce).kind == "missing reduce"
    wrong_peer = [t if (t.step, t.src) != (1, 0) else schedules.Transfer(1, 0, 2, t.chunk, True) for t in good]
    assert schedules.compare_trace(s, wrong_peer).kind == "wrong peer"
    assert schedules.compare_trace(s, good[:-1]).kind == "missing transfer"
    assert "step 2" in d.message()


def test_compare_trace_from_another_n_is_an_error():
    with pytest.raises(CommlabError, match="ranks"):
        schedules.compare_trace(schedules.build("ring-all-reduce", 4),
                                schedules.build("ring-all-reduce", 6).transfers())


@pytest.mark.parametrize("bad", [0, -1, 5000, 2.5, "4"])
def test_bad_n(bad):
    with pytest.raises(CommlabError, match="n_ranks"):
        schedules.build("ring-all-reduce", bad)


def test_bad_inputs():
    s = schedules.build("ring-all-reduce", 3)
    with pytest.raises(CommlabError, match="3 input"):
        schedules.run(s, [np.zeros(3)])
    with pytest.raises(CommlabError, match="same length"):
        schedules.run(s, [np.zeros(3), np.zeros(3), np.zeros(4)])
