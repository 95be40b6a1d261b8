"""cost: closed forms by hand, the corrected worked examples of the book (the seed article's errors), vectorisation,
the fit."""
import math

import numpy as np
import pytest

from commlab import cost
from commlab.errors import CommlabError


def test_ring_closed_form():
    # 2(N-1)(alpha + S/(N B)) by hand: N=4, alpha=1us, S=1MB, B=10GB/s
    assert float(cost.ring_all_reduce_time_s(1e6, 4, 1e-6, 1e10)) == pytest.approx(6 * (1e-6 + 1e6 / 4e10))
    assert float(cost.tree_all_reduce_time_s(1e6, 4, 1e-6, 1e10)) == pytest.approx(4 * (1e-6 + 1e-4))
    assert float(cost.naive_all_reduce_time_s(1e6, 4, 1e-6, 1e10)) == pytest.approx(6 * (1e-6 + 1e-4))
    assert float(cost.tree_all_reduce_time_s(1e6, 5, 0, 1e10)) == pytest.approx(6 * 1e-4)
    assert float(cost.recursive_doubling_all_reduce_time_s(1e6, 8, 0, 1e10)) == pytest.approx(3e-4)
    assert float(cost.recursive_doubling_all_reduce_time_s(1e6, 6, 0, 1e10)) == pytest.approx(4e-4)


def test_corrected_worked_examples():
    """7B FP16 grads over 8 GPUs: 24.5 GB per rank, ~54 ms on NVLink 4; 70B ~544 ms; ~4.9 s at 50 GB/s (the seed
    article had 31 and 311 ms, S/450)."""
    s7, s70 = 7e9 * 2, 70e9 * 2
    assert 2 * 7 / 8 * s7 == pytest.approx(24.5e9)
    assert float(cost.ring_all_reduce_time_s(s7, 8, 0, 450e9)) * 1e3 == pytest.approx(54.4, abs=0.1)
    assert float(cost.ring_all_reduce_time_s(s70, 8, 0, 450e9)) * 1e3 == pytest.approx(544.4, abs=0.1)
    assert float(cost.ring_all_reduce_time_s(s70, 8, 0, 50e9)) == pytest.approx(4.9, abs=0.01)
    # the seed's 31 ms was S/450 GB/s: one transfer of the gradients, not the all-reduce
    assert s7 / 450e9 * 1e3 == pytest.approx(31.1, abs=0.1)
    assert float(cost.collective_time_s("all_reduce", s7, 8, "nvlink4")) * 1e3 == pytest.approx(54.4, abs=0.2)


def test_vectorised_over_sizes():
    sizes = np.geomspace(1, 1e10, 100_000)
    t = cost.ring_all_reduce_time_s(sizes, 8, 5e-6, 50e9)
    assert t.shape == sizes.shape and np.all(np.diff(t) > 0)
    for algo in cost.ALL_REDUCE_ALGOS:
        assert cost.all_reduce_time_s(algo, sizes, 8, 5e-6, 50e9).shape == sizes.shape


def test_pipelined_trees_limits():
    s, b = 1e9, 1e10
    # no latency: infinitely many pieces, 3S/B for a binary tree, 2S/B for the double tree
    assert float(cost.pipelined_tree_all_reduce_time_s(s, 16, 0.0, b)) == pytest.approx(3 * s / b)
    assert float(cost.double_tree_all_reduce_time_s(s, 16, 0.0, b)) == pytest.approx(2 * s / b)
    # one piece: (2D)(alpha + c S/B)
    one_piece = cost.double_tree_all_reduce_time_s(s, 16, 1e-6, b, n_chunks=1)
    assert float(one_piece) == pytest.approx(8 * (1e-6 + 2 * s / b))
    # the optimum is no worse than any fixed piece count
    best = float(cost.double_tree_all_reduce_time_s(s, 16, 1e-5, b))
    for k in (1, 4, 64, 1024, 10**5):
        assert best <= float(cost.double_tree_all_reduce_time_s(s, 16, 1e-5, b, n_chunks=k)) * (1 + 1e-9)


def test_double_tree_approaches_the_ring_for_large_messages():
    s, n, a, b = 1e10, 64, 5e-6, 50e9
    ring, dbt = float(cost.ring_all_reduce_time_s(s, n, a, b)), float(cost.double_tree_all_reduce_time_s(s, n, a, b))
    assert 1.0 < dbt / ring < 1.1


def test_crossover_closed_form():
    n, a, b = 64, 5e-6, 50e9
    d = math.ceil(math.log2(n))
    by_hand = (2 * (n - 1) - 2 * d) * a * b / (2 * d - 2 * (n - 1) / n)
    assert cost.crossover_nbytes("ring", "tree", n, a, b) == pytest.approx(by_hand, rel=1e-6)
    assert math.isnan(cost.crossover_nbytes("ring", "naive", 8, a, b))  # the ring always wins


def test_algbw_busbw():
    assert float(cost.algbw_GBps(1e9, 0.01)) == pytest.approx(100)
    assert float(cost.busbw_GBps("all_reduce", 1e9, 0.01, 8)) == pytest.approx(175)
    with pytest.raises(CommlabError):
        cost.algbw_GBps(1e9, 0)


def test_fit_recovers_known_parameters_with_noise():
    rng = np.random.default_rng(0)
    sizes = np.geomspace(8, 1 << 30, 28)
    t = (20e-6 + sizes / 40e9) * (1 + 0.02 * rng.standard_normal(len(sizes)))
    fit = cost.fit_alpha_beta(sizes, t)
    assert fit.alpha_s == pytest.approx(20e-6, rel=0.05)
    assert fit.bw_GBps == pytest.approx(40, rel=0.05)
    assert fit.r2 > 0.99


def test_fit_refuses_too_little_data():
    with pytest.raises(CommlabError, match="two distinct sizes"):
        cost.fit_alpha_beta([1e6], [1e-3])


def test_bad_parameters():
    with pytest.raises(CommlabError, match="nbytes"):
        cost.ring_all_reduce_time_s(-1, 4, 0, 1e9)
    with pytest.raises(CommlabError, match="algorithm"):
        cost.all_reduce_time_s("star", 1, 4, 0, 1e9)


def test_p2p_time_and_half_bandwidth_size():
    a, b = 2e-6, 25e9
    assert float(cost.p2p_time_s(a * b, a, b)) == pytest.approx(2 * a)   # at S = alpha*B both terms are equal
    assert float(cost.collective_time_s("sendrecv", 1e6, 2, "ib-ndr")) == pytest.approx(1e-6 + 1e6 / 50e9)
