"""DDP bucket timeline: hand-worked schedules, limits, properties, and torch's own bucket assignment."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commlab.errors import CommlabError
from commlab.overlap import (
    DDPConfig, Layer, assign_buckets, layers_from, no_overlap, simulate, sweep_bucket_caps, uniform_layers,
)

MiB = 1024 * 1024
MS = 1e-3


def _config(nbytes, backward_s, **kwargs) -> DDPConfig:
    defaults = dict(n_ranks=2, alpha_s=0.5 * MS, bw_GBps=1.0)
    return DDPConfig(layers=layers_from(nbytes, backward_s), **(defaults | kwargs))


def _buckets(config):
    return [b.layers for b in assign_buckets(config)]


def test_buckets_follow_ddp_rule_by_hand():
    # sizes (MiB) in forward order 4, 3, 2, 6, 1; reverse order 1, 6 -> 7 >= 5 closes; 2, 3 -> 5 >= 5 closes; 4
    cfg = _config([4 * MiB, 3 * MiB, 2 * MiB, 6 * MiB, 1 * MiB], [MS] * 5, bucket_cap_mb=5)
    assert _buckets(cfg) == [(4, 3), (2, 1), (0,)]
    assert [b.nbytes for b in assign_buckets(cfg)] == [7 * MiB, 5 * MiB, 4 * MiB]


def test_buckets_follow_strict_rule_by_hand():
    # 1 then 6 would exceed 5: close [1]; 6 alone (larger than the cap); 2 + 3 = 5 fits; 4 would exceed
    cfg = _config([4 * MiB, 3 * MiB, 2 * MiB, 6 * MiB, 1 * MiB], [MS] * 5, bucket_cap_mb=5, rule="strict")
    assert _buckets(cfg) == [(4,), (3,), (2, 1), (0,)]


def test_first_bucket_has_its_own_limit():
    # DDP's default: a 1 MiB first bucket, then 25 MiB
    cfg = _config([10 * MiB, 10 * MiB, 10 * MiB, MiB // 2, MiB // 2], [MS] * 5, bucket_cap_mb=25, first_bucket_mb=1)
    assert _buckets(cfg) == [(4, 3), (2, 1, 0)]
    assert _buckets(cfg.with_cap(25)) == _buckets(cfg)
    # without a first-bucket limit: 0.5 + 0.5 + 10 + 10 = 21 < 25, + 10 = 31 >= 25 closes after the last layer
    assert _buckets(_config([10 * MiB, 10 * MiB, 10 * MiB, MiB // 2, MiB // 2], [MS] * 5)) == [(4, 3, 2, 1, 0)]


def test_layers_without_parameters_join_no_bucket():
    cfg = _config([MiB, 0, MiB], [MS, MS, MS], bucket_cap_mb=0)
    assert _buckets(cfg) == [(2,), (0,)]


def test_one_bucket_per_layer_schedule_by_hand():
    # N = 2: all-reduce of S bytes = 2 * 1 * (alpha + S / (2 B)) = 2 alpha + S / B = 1 ms + S / (1e9 B/s)
    # backward: L2 [0, 2], L1 [2, 3], L0 [3, 4] ms; all-reduces 4, 3, 2 ms
    # comm: L2 [2, 6], L1 [max(3, 6), 9], L0 [max(4, 9), 11]
    t = simulate(_config([1e6, 2e6, 3e6], [1 * MS, 1 * MS, 2 * MS], bucket_cap_mb=0))
    backward = [(c.layer, round(c.start_s / MS, 9), round(c.end_s / MS, 9)) for c in t.compute]
    assert backward == [(2, 0.0, 2.0), (1, 2.0, 3.0), (0, 3.0, 4.0)]
    got = [(c.layers, round(c.start_s / MS, 9), round(c.end_s / MS, 9)) for c in t.comm]
    assert got == [((2,), 2.0, 6.0), ((1,), 6.0, 9.0), ((0,), 9.0, 11.0)]
    assert t.step_s == pytest.approx(11 * MS)
    assert t.compute_s == pytest.approx(4 * MS)
    assert t.exposed_comm_s == pytest.approx(7 * MS)
    assert t.overlap_fraction == pytest.approx(1 - 7 / 9)


def test_communication_hidden_when_it_fits_in_the_gaps():
    # 4 layers of 1e6 bytes, 5 ms backward each; each all-reduce 2 ms: all but the last one hidden
    t = simulate(_config([int(1e6)] * 4, [5 * MS] * 4, bucket_cap_mb=0))
    assert t.step_s == pytest.approx(20 * MS + 2 * MS)
    assert t.exposed_comm_s == pytest.approx(2 * MS)
    assert t.overlap_fraction == pytest.approx(6 / 8)


def test_free_communication_exposes_nothing():
    t = simulate(_config([MiB] * 6, [MS] * 6, alpha_s=0.0, bw_GBps=math.inf, bucket_cap_mb=1))
    assert t.exposed_comm_s == 0.0
    assert t.step_s == pytest.approx(6 * MS)
    assert t.overlap_fraction == 1.0


def test_one_bucket_exposes_the_whole_all_reduce():
    n, alpha, bw = 8, 10e-6, 50.0
    cfg = _config([3 * MiB, 5 * MiB, 7 * MiB], [MS] * 3, n_ranks=n, alpha_s=alpha, bw_GBps=bw, bucket_cap_mb=math.inf)
    t = simulate(cfg)
    s = 15 * MiB
    by_hand = 2 * (n - 1) * (alpha + s / (n * bw * 1e9))
    assert len(t.comm) == 1 and t.comm[0].start_s == pytest.approx(3 * MS)
    assert t.exposed_comm_s == pytest.approx(by_hand)
    assert no_overlap(cfg).step_s == pytest.approx(t.step_s)


def test_no_overlap_runs_the_same_buckets_after_backward():
    cfg = _config([MiB] * 5, [MS] * 5, bucket_cap_mb=2)
    base, over = no_overlap(cfg), simulate(cfg)
    assert [c.layers for c in base.comm] == [c.layers for c in over.comm]
    assert base.comm[0].start_s == pytest.approx(5 * MS)
    assert base.exposed_comm_s == pytest.approx(base.comm_s)
    assert over.exposed_comm_s < base.exposed_comm_s


def test_sweep_matches_single_simulations_and_shows_the_tradeoff():
    # big alpha: tiny buckets pay many latencies; one bucket waits for the whole backward
    cfg = DDPConfig(layers=uniform_layers(24, 4 * MiB, 2 * MS), n_ranks=8, alpha_s=200e-6, bw_GBps=25.0)
    caps = [0, 4, 16, 64, math.inf]
    sweep = sweep_bucket_caps(cfg, caps)
    for i, cap in enumerate(caps):
        t = simulate(cfg.with_cap(cap))
        assert sweep.step_s[i] == t.step_s and sweep.n_buckets[i] == len(t.comm)
    assert list(sweep.n_buckets) == sorted(sweep.n_buckets, reverse=True)
    assert sweep.best_cap_mb not in (0.0, math.inf)


@pytest.mark.parametrize("kwargs, match", [
    (dict(bucket_cap_mb=-1), "bucket_cap_mb"),
    (dict(first_bucket_mb=-0.5), "first_bucket_mb"),
    (dict(rule="greedy"), "greedy"),
    (dict(n_ranks=0), "n_ranks"),
    (dict(alpha_s=-1e-6), "alpha_s"),
    (dict(bw_GBps=0), "bw_GBps"),
])
def test_bad_config_names_the_value(kwargs, match):
    with pytest.raises(CommlabError, match=match):
        _config([MiB], [MS], **kwargs)


def test_bad_layers_name_the_value():
    with pytest.raises(CommlabError, match="non-empty"):
        DDPConfig(layers=(), n_ranks=2, alpha_s=0.0, bw_GBps=1.0)
    with pytest.raises(CommlabError, match="nbytes"):
        Layer(nbytes=1.5, backward_s=MS)
    with pytest.raises(CommlabError, match="backward_s"):
        Layer(nbytes=1, backward_s=-MS)
    with pytest.raises(CommlabError, match="same length"):
        layers_from([1, 2], [MS])


layer_lists = st.lists(st.tuples(st.integers(0, 40 * MiB), st.floats(0, 10 * MS)), min_size=1, max_size=12)
configs = st.builds(
    lambda layers, n, alpha, bw, cap, first, rule: DDPConfig(
        layers=layers_from([nb for nb, _ in layers], [b for _, b in layers]), n_ranks=n, alpha_s=alpha,
        bw_GBps=bw, bucket_cap_mb=cap, first_bucket_mb=first, rule=rule),
    layer_lists, st.integers(1, 16), st.floats(0, 1e-3), st.floats(0.5, 900.0),
    st.one_of(st.floats(0, 100), st.just(math.inf)), st.one_of(st.none(), st.floats(0, 30)),
    st.sampled_from(["ddp", "strict"]))


@settings(max_examples=150, deadline=None)
@given(configs)
def test_overlap_never_loses_and_never_beats_the_bounds(cfg):
    t, base = simulate(cfg), no_overlap(cfg)
    tol = 1e-12 + 1e-9 * base.step_s
    assert t.exposed_comm_s <= base.exposed_comm_s + tol
    assert t.step_s >= max(t.compute_s, t.comm_s) - tol
    assert t.step_s <= t.compute_s + t.comm_s + tol
    assert 0.0 <= t.overlap_fraction <= 1.0
    ready = {c.layer: c.end_s for c in t.compute}
    for prev, cur in zip(t.comm, t.comm[1:]):
        assert cur.start_s >= prev.end_s - tol
    for c in t.comm:
        assert c.start_s >= max(ready[i] for i in c.layers) - tol


@settings(max_examples=150, deadline=None)
@given(configs)
def test_buckets_partition_gradients_in_ready_order_within_limits(cfg):
    buckets = assign_buckets(cfg)
    order = [i for b in buckets for i in b.layers]
    assert order == [i for i in reversed(range(len(cfg.layers))) if cfg.layers[i].nbytes > 0]
    first_mb = cfg.bucket_cap_mb if cfg.first_bucket_mb is None else cfg.first_bucket_mb
    for k, b in enumerate(buckets):
        limit = (first_mb if k == 0 else cfg.bucket_cap_mb) * MiB
        without_last = b.nbytes - cfg.layers[b.layers[-1]].nbytes
        if cfg.rule == "ddp":
            assert without_last < limit or len(b.layers) == 1  # it closed as soon as it reached the limit
            assert b.nbytes >= limit or k == len(buckets) - 1
        else:
            assert b.nbytes <= limit or len(b.layers) == 1   # over the cap only when one layer alone is


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12 * MiB), min_size=1, max_size=10), st.floats(0.1, 30),
       st.one_of(st.none(), st.floats(0.1, 5)))
def test_bucket_assignment_matches_torch_reducer(sizes, cap_mb, first_mb):
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    first = cap_mb if first_mb is None else first_mb
    ready = list(reversed(range(len(sizes))))
    tensors = [torch.empty(sizes[i], dtype=torch.uint8) for i in ready]
    limits = [int(first * MiB), int(cap_mb * MiB)]
    expected, _ = dist._compute_bucket_assignment_by_size(tensors, limits, [False] * len(sizes), ready)
    # torch takes the limits in whole bytes: give the simulator the same ones
    cfg = _config(sizes, [MS] * len(sizes), bucket_cap_mb=limits[1] / MiB, first_bucket_mb=limits[0] / MiB)
    assert _buckets(cfg) == [tuple(b) for b in expected]


def test_exposed_intervals_add_up_to_exposed_time():
    """The red bands of chapter 07: spans with communication and no compute, summing to exposed_comm_s."""
    from commlab.overlap import DDPConfig, simulate, uniform_layers

    for cap_mb in (0.5, 4.0, 25.0, math.inf):
        cfg = DDPConfig(layers=uniform_layers(12, 4 * 2**20, 2e-3), n_ranks=8, alpha_s=20e-6, bw_GBps=5.0,
                        bucket_cap_mb=cap_mb)
        timeline = simulate(cfg)
        spans = timeline.exposed_intervals()
        assert sum(end - start for start, end in spans) == pytest.approx(timeline.exposed_comm_s, abs=1e-12)
        for start, end in spans:
            assert not any(c.start_s < end and c.end_s > start for c in timeline.compute)
