"""The bidirectional ring (chapter 05): two rings, half the data each, one each way.

Its schedule against numpy (every rank ends with the sum), every link busy both ways, the ring's bytes per
rank; its time formula against a step-by-step replay of the schedule's own transfers on point-to-point links
and behind a switch port; the animation offers it; bad input is refused in one line.
"""
from __future__ import annotations

import collections

import numpy as np
import pytest

from commlab import schedules
from commlab.cost.alpha_beta import bidirectional_ring_all_reduce_time_s, ring_all_reduce_time_s
from commlab.errors import CommlabError


def _replay_time_s(schedule, nbytes: float, alpha_s: float, link_Bps: float, port_Bps: float | None = None) -> float:
    """Written from the schedule alone: each step lasts alpha plus its slowest link (the bytes sent over each
    directed link at link_Bps) or, with a port, its busiest sender (everything it sends at port_Bps)."""
    chunk = nbytes / schedule.n_chunks
    total = 0.0
    for step in schedule.steps:
        per_link = collections.Counter((t.src, t.dst) for t in step)
        per_rank = collections.Counter(t.src for t in step)
        slowest = max(per_link.values()) * chunk / link_Bps
        if port_Bps is not None:
            slowest = max(slowest, max(per_rank.values()) * chunk / port_Bps)
        total += alpha_s + slowest
    return total


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 16])
def test_every_rank_ends_with_the_sum(n):
    schedule = schedules.build("bidir-ring-all-reduce", n)
    inputs = [np.random.default_rng(r).normal(size=101) for r in range(n)]
    for out in schedules.run(schedule, inputs).outputs:
        assert np.allclose(out, np.sum(inputs, axis=0))


@pytest.mark.parametrize("n", [3, 4, 7, 12])
def test_both_directions_of_every_ring_link_carry_the_same_load(n):
    schedule = schedules.build("bidir-ring-all-reduce", n)
    assert schedule.n_chunks == 2 * n and schedule.n_steps == 2 * (n - 1)
    for step in schedule.steps:
        pairs = [(t.src, t.dst) for t in step]
        assert sorted(pairs) == sorted([(r, (r + 1) % n) for r in range(n)] + [(r, (r - 1) % n) for r in range(n)])
    sent = schedules.bytes_sent_per_rank(schedule, 2 * n * 1000)     # whole chunks: exact
    assert np.allclose(sent, 2 * (n - 1) / n * 2 * n * 1000)          # the ring's 2(N-1)/N S per rank


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_the_formula_matches_a_replay_of_the_schedule(n):
    schedule = schedules.build("bidir-ring-all-reduce", n)
    nbytes, alpha, link = 2 * n * 1e6, 2e-6, 50e9
    own_links = float(bidirectional_ring_all_reduce_time_s(nbytes, n, alpha, link))
    assert own_links == pytest.approx(_replay_time_s(schedule, nbytes, alpha, link))
    for port in (link, 1.5 * link, 4 * link):
        behind = float(bidirectional_ring_all_reduce_time_s(nbytes, n, alpha, link, port_Bps=port))
        assert behind == pytest.approx(_replay_time_s(schedule, nbytes, alpha, link, port))


def test_own_links_halve_the_bandwidth_term_and_one_port_gains_nothing():
    s, n, b = 14e9, 8, 450e9
    one_way = float(ring_all_reduce_time_s(s, n, 0.0, b))
    assert float(bidirectional_ring_all_reduce_time_s(s, n, 0.0, b)) == pytest.approx(one_way / 2)
    assert float(bidirectional_ring_all_reduce_time_s(s, n, 0.0, b, port_Bps=b)) == pytest.approx(one_way)
    assert float(bidirectional_ring_all_reduce_time_s(s, 2, 0.0, b)) == pytest.approx(
        float(ring_all_reduce_time_s(s, 2, 0.0, b)))                  # two ranks: one link, nothing to gain
    sizes = np.array([1e3, 1e6, 1e9])
    assert np.all(bidirectional_ring_all_reduce_time_s(sizes, n, 1e-6, b) <= ring_all_reduce_time_s(sizes, n, 1e-6, b))


@pytest.mark.parametrize("bad", [0, -1.0, "fast"])
def test_a_bad_port_is_refused_in_one_line(bad):
    with pytest.raises(CommlabError, match="port_Bps"):
        bidirectional_ring_all_reduce_time_s(1e9, 8, 1e-6, 50e9, port_Bps=bad)


def test_the_ring_animation_offers_it():
    from commlab.viz.animation import RingAnimation

    anim = RingAnimation("ring-all-reduce", 4)
    assert "bidir-ring-all-reduce" in anim.algorithms
    anim.set_algorithm("bidir-ring-all-reduce").set_step(1)
    arrows = {(src, dst) for src, dst, _, _ in anim.arrows_shown()}
    assert {(0, 1), (1, 0)} <= arrows and len(arrows) == 8            # both ways round the circle
