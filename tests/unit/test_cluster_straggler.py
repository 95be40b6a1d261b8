"""Stragglers and failures: a slow NIC against the model's network term, E[max] against sampling, Llama 3's rate."""
from __future__ import annotations

import numpy as np
import pytest

from commlab.cluster import cluster_cost, preset
from commlab.cluster import straggler as st
from commlab.errors import CommlabError


def test_a_slow_nic_stretches_the_network_time_of_every_algorithm_that_waits_on_it():
    big = np.array([2.0**34, 2.0**35])
    healthy = cluster_cost("all_reduce", big, "h100-1k-superpod", 128, "nvls-sharp")["nvls-sharp"].time_s
    half = cluster_cost("all_reduce", big, st.with_slow_nics("h100-1k-superpod", 0.5), 128,
                        "nvls-sharp")["nvls-sharp"].time_s
    assert (half[1] - half[0]) / (healthy[1] - healthy[0]) == pytest.approx(2.0, rel=0.01)
    slow = st.slow_nic_cost("all_reduce", 2.0**34, "h100-1k-superpod", 128, 0.5)
    assert all(b >= a for a, b in slow.values()) and slow["nvls-tree"][1] > 1.7 * slow["nvls-tree"][0]
    with pytest.raises(CommlabError, match="fraction"):
        st.with_slow_nics(preset("aws-p5"), 0.0)


def test_expected_maximum_matches_sampling():
    rng = np.random.default_rng(0)
    for n in (1, 2, 16, 1024):
        sampled = rng.standard_normal((4000, n)).max(axis=1).mean()
        assert st.expected_max_normal(n) == pytest.approx(sampled, abs=0.03)


def test_failure_rate_is_llama3s_per_gpu_rate():
    assert st.hours_between_interruptions(st.LLAMA3_GPUS) == pytest.approx(54 * 24 / 419)
    assert st.hours_between_interruptions(1024) == pytest.approx(16 * 54 * 24 / 419)
    assert sum(st.LLAMA3_CAUSES.values()) < st.LLAMA3_UNEXPECTED
    assert st.any_degraded(16384, 1e-4) == pytest.approx(1 - (1 - 1e-4) ** 16384)
    with pytest.raises(CommlabError):
        st.hours_between_interruptions(0)
