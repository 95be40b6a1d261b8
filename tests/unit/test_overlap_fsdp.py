"""FSDP forward prefetching: closed forms for identical layers, a hand-worked schedule, properties."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commlab.errors import CommlabError
from commlab.overlap import FSDPConfig, Layer, layers_from, simulate_fsdp_forward, uniform_layers

MS = 1e-3


def _run(layers, prefetch, n_ranks=4, alpha_s=0.0, bw_GBps=1.0):
    return simulate_fsdp_forward(FSDPConfig(layers=layers, n_ranks=n_ranks, alpha_s=alpha_s, bw_GBps=bw_GBps,
                                            prefetch=prefetch))


@pytest.mark.parametrize("gather_ms, compute_ms", [(1.0, 3.0), (3.0, 1.0), (2.0, 2.0)])
def test_identical_layers_match_the_closed_forms(gather_ms, compute_ms):
    # all-gather of S over N = 4 ranks at 1 GB/s, alpha = 0: (N-1) S / (N B) = 0.75 S / 1e9 s
    n_layers, n_ranks = 6, 4
    nbytes = int(round(gather_ms * MS * 1e9 / 0.75))
    a = (n_ranks - 1) * nbytes / (n_ranks * 1e9)
    c = compute_ms * MS
    layers = uniform_layers(n_layers, nbytes, backward_s=2 * c, forward_s=c)
    on, off = _run(layers, True), _run(layers, False)
    assert off.step_s == pytest.approx(n_layers * (a + c))
    assert on.step_s == pytest.approx(a + (n_layers - 1) * max(a, c) + c)
    assert off.exposed_comm_s == pytest.approx(off.comm_s)
    assert on.compute_s == pytest.approx(n_layers * c) and on.comm_s == pytest.approx(n_layers * a)


def test_hand_worked_schedule_with_prefetch():
    # all-gathers (N = 2, 1 GB/s, alpha = 0.1 ms): (N-1)(alpha + S/(N B)) = 0.1 ms + S / 2e9
    # S = 2e6, 6e6, 2e6 bytes -> 1.1, 3.1, 1.1 ms; forward 2, 1, 2 ms
    # AG0 [0, 1.1]; C0 [1.1, 3.1]; AG1 issued at C0's start 1.1 -> [1.1, 4.2]; C1 [4.2, 5.2]
    # AG2 issued at C1's start 4.2 -> [4.2, 5.3]; C2 [5.3, 7.3]
    layers = layers_from([2e6, 6e6, 2e6], [4 * MS, 2 * MS, 4 * MS], [2 * MS, 1 * MS, 2 * MS])
    t = _run(layers, True, n_ranks=2, alpha_s=0.1 * MS)
    def ms(intervals):
        return [(round(c.start_s / MS, 9), round(c.end_s / MS, 9)) for c in intervals]

    assert ms(t.comm) == [(0, 1.1), (1.1, 4.2), (4.2, 5.3)]
    assert ms(t.compute) == [(1.1, 3.1), (4.2, 5.2), (5.3, 7.3)]
    assert t.step_s == pytest.approx(7.3 * MS)
    assert t.exposed_comm_s == pytest.approx(7.3 * MS - 5 * MS)
    assert {c.op for c in t.comm} == {"all_gather"}


def test_free_communication_exposes_nothing():
    layers = uniform_layers(5, 10**9, backward_s=2 * MS)
    for prefetch in (True, False):
        t = _run(layers, prefetch, bw_GBps=math.inf)
        assert t.exposed_comm_s == 0.0 and t.step_s == pytest.approx(5 * MS)


def test_forward_time_defaults_to_half_the_backward():
    t = _run([Layer(nbytes=0, backward_s=4 * MS)], True)
    assert t.compute[0].duration_s == pytest.approx(2 * MS)


def test_bad_config_names_the_value():
    with pytest.raises(CommlabError, match="prefetch"):
        FSDPConfig(layers=uniform_layers(2, 1, MS), n_ranks=2, alpha_s=0.0, bw_GBps=1.0, prefetch="yes")
    with pytest.raises(CommlabError, match="forward_s"):
        Layer(nbytes=1, backward_s=MS, forward_s=math.nan)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**9), st.floats(0, 10 * MS)), min_size=1, max_size=10),
       st.integers(1, 16), st.floats(0, 1e-3), st.floats(1.0, 900.0))
def test_prefetch_never_slower_and_within_bounds(spec, n_ranks, alpha_s, bw_GBps):
    layers = layers_from([nb for nb, _ in spec], [2 * f for _, f in spec], [f for _, f in spec])
    on, off = (_run(layers, p, n_ranks, alpha_s, bw_GBps) for p in (True, False))
    tol = 1e-12 + 1e-9 * off.step_s
    assert on.step_s <= off.step_s + tol
    assert off.step_s == pytest.approx(off.compute_s + off.comm_s, rel=1e-9, abs=1e-15)
    assert on.step_s >= max(on.compute_s, on.comm_s) - tol
    for gather, compute in zip(on.comm, on.compute):
        assert compute.start_s >= gather.end_s - tol   # a layer runs only on gathered parameters
