"""Failures and stragglers at scale: one slow NIC, one late GPU, one broken part somewhere.

* **A slow NIC.** NCCL splits a collective's bytes evenly over its channels and each ring (or tree) channel
  crosses the network on the same NIC index of every node; the collective ends when its slowest channel does.
  One NIC running at a fraction ``f`` of its speed (a port trained down to 200 Gb/s, a flapping cable, a hot
  optic) therefore costs every collective that uses it as much as if every NIC were that slow: its network
  time grows by 1/f, however many nodes there are. :func:`with_slow_nics` gives the cluster with its NICs at
  that fraction, which is what the collective sees; :func:`slow_nic_cost` compares the two.
* **A late GPU.** A collective starts when its last rank arrives, so a synchronous step waits for the slowest of
  N GPUs: with independent normal delays of spread sigma, the expected wait is sigma x E[max of N]
  (:func:`expected_max_normal`): 3.3 sigma at 1,024 GPUs, 4.0 at 16,384 (sqrt(2 ln N) overestimates it a little).
* **Failures.** Meta's 54-day Llama 3 405B run on 16,384 H100 saw 419 unexpected interruptions (148 faulty GPUs,
  72 HBM3, 35 network switches and cables, ...), one every 3.1 hours (arXiv 2407.21783, section 3.3.4, table 5).
  With failures independent and proportional to the number of GPUs, a job of N GPUs is interrupted every
  ``3.1 h x 16,384 / N`` (:func:`hours_between_interruptions`).

>>> round(hours_between_interruptions(16384), 2), round(hours_between_interruptions(1024), 1)
(3.09, 49.5)
>>> round(expected_max_normal(1024), 2), round(expected_max_normal(2), 3)     # 1/sqrt(pi) for two
(3.27, 0.564)
"""
from __future__ import annotations

import dataclasses

import numpy as np

from commlab.cluster.model import cluster_cost
from commlab.cluster.presets import preset
from commlab.cluster.spec import Cluster
from commlab.errors import CommlabError

#: Llama 3 405B pre-training (arXiv 2407.21783, section 3.3.4 and table 5): a 54-day snapshot on 16,384 H100
LLAMA3_GPUS = 16384
LLAMA3_DAYS = 54
LLAMA3_UNEXPECTED = 419
LLAMA3_CAUSES = {"faulty GPU": 148, "GPU HBM3 memory": 72, "network switch and cable": 35, "GPU SRAM memory": 19,
                 "GPU system processor": 17, "CPU": 2}
LLAMA3_SOURCE = "https://arxiv.org/abs/2407.21783"


def with_slow_nics(cluster: Cluster | str, fraction: float) -> Cluster:
    """The cluster with every NIC at ``fraction`` of its speed: what a collective that waits for its slowest
    channel sees when one NIC runs that slow (see the module docstring)."""
    c = cluster if isinstance(cluster, Cluster) else preset(cluster)
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise CommlabError(f"a slow NIC runs at a fraction of its speed in (0, 1], got {fraction!r}")
    return dataclasses.replace(c, name=f"{c.name} (a NIC at {fraction:.0%})", nic_Gbps=c.nic_Gbps * fraction)


def slow_nic_cost(op: str, nbytes, cluster: Cluster | str, nodes: int, fraction: float, algos="all"
                  ) -> dict[str, tuple[float, float]]:
    """{algorithm: (time_s healthy, time_s with one NIC at ``fraction``)} for one size ``nbytes``."""
    c = cluster if isinstance(cluster, Cluster) else preset(cluster)
    healthy = cluster_cost(op, [nbytes], c, nodes, algos)
    slow = cluster_cost(op, [nbytes], with_slow_nics(c, fraction), nodes, algos)
    return {a: (float(healthy[a].ran_time_s[0]), float(slow[a].ran_time_s[0])) for a in healthy.available()}


def expected_max_normal(n: int, points: int = 4001) -> float:
    """E[max of n independent standard normal variables], by integrating x d(Phi(x)^n) on a grid."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise CommlabError(f"n must be a whole number >= 1, got {n!r}")
    x = np.linspace(-8.0, 8.0, points)
    pdf = np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    cdf = np.cumsum(pdf) * (x[1] - x[0])
    density = n * cdf ** (n - 1) * pdf
    return float(np.sum(x * density) * (x[1] - x[0]))


def hours_between_interruptions(n_gpus: int) -> float:
    """Mean hours between unexpected interruptions of a job on ``n_gpus`` GPUs, at Llama 3's per-GPU rate."""
    if not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise CommlabError(f"n_gpus must be a whole number >= 1, got {n_gpus!r}")
    return LLAMA3_DAYS * 24 / LLAMA3_UNEXPECTED * LLAMA3_GPUS / n_gpus


def any_degraded(n_parts: int, p_each: float) -> float:
    """Probability that at least one of ``n_parts`` independent parts is degraded, each with probability p."""
    if not 0 <= p_each <= 1:
        raise CommlabError(f"p_each must be a probability in [0, 1], got {p_each!r}")
    return float(1 - (1 - p_each) ** n_parts)
