"""Checks of the p2p lab (labs/p2p.ipynb): the ping-pong loop on 2 ranks (the data must make the round trip,
and ``n_round_trips`` must be honoured), the non-blocking halo exchange against the blocking one, and a ring
exchange that cannot deadlock on 2, 3 and 4 ranks with messages large enough that gloo's send waits for the
receive. The measurements themselves are :mod:`commlab.labs.solutions.p2p`'s. When a class is graded, the same
checks run on cases drawn from the seed (``drawn_<task>``): other sizes, round-trip counts, rank counts and
the bytes every rank sends, so that code which writes the public cases' answers instead of communicating fails.
"""
from __future__ import annotations

from commlab.labs.checking import Outcome

#: 8 B, 32 B, ..., 8 MiB: the notebook's sweep
PING_PONG_SIZES = tuple(8 * 4**k for k in range(11))
HALO_NBYTES = 4 * 2**20
#: 8 MiB messages: on gloo a send of this size waits for its receive, so a circle of sends deadlocks
RING_ELEMENTS = 2 * 2**20


#: What ``commlab labs check`` changes when it grades (the verdicts do not depend on it): one timed call of one
#: round trip per size instead of the notebook's seven of four, the timings being the notebook's plot, not part
#: of the check (which moves and counts the data of its own three round trips first).
GRADING = {"ping_pong": {"n_repeats": 1, "n_round_trips": 1}, "halo_exchange_nonblocking": {"n_repeats": 1}}


def check_ping_pong(fn, sizes_nbytes=PING_PONG_SIZES, n_repeats: int = 7, n_round_trips: int = 4) -> Outcome:
    """``details["one_way_s"]``: the one-way time at each size."""
    from commlab.labs.solutions import p2p as lab

    return lab.measure_ping_pong(fn, list(sizes_nbytes), n_round_trips=n_round_trips, n_repeats=n_repeats)


def check_halo_exchange_nonblocking(fn, n_ranks: int = 2, nbytes: int = HALO_NBYTES, n_repeats: int = 5) -> Outcome:
    """Both versions on the same ranks; ``details["times_s"]`` by name."""
    from commlab.labs.solutions import p2p as lab

    return lab.compare_halo_exchanges([("blocking", lab.halo_exchange_blocking), ("non-blocking", fn)], n_ranks, nbytes,
                                      n_repeats=n_repeats)


def check_ring_exchange(fn, n_elements: int = RING_ELEMENTS, timeout_s: float = 10.0) -> Outcome:
    from commlab.labs.solutions import p2p as lab

    return lab.check_ring_exchange(fn, (2, 3, 4), n_elements=n_elements, timeout_s=timeout_s)


# --- cases drawn when a class is graded (commlab labs check --seed) -------------------------------------------

def _rng(seed: int, task: str):
    import numpy as np

    return np.random.default_rng([seed, sum(task.encode())])


def drawn_ping_pong(fn, seed: int) -> Outcome:
    """Three sizes from 1 B to 4 MiB, a round-trip count of 2 or 4 to 6 for the message count (the public
    check counts 3), and rank 0's bytes, all drawn from ``seed``; one timed call per size."""
    from commlab.labs.solutions import p2p as lab

    rng = _rng(seed, "ping_pong")
    sizes = sorted(int(round(10 ** x)) for x in rng.uniform(0, 6.6, size=3))
    trips = int(rng.choice([2, 4, 5, 6]))
    return lab.measure_ping_pong(fn, sizes, n_round_trips=int(rng.integers(1, 4)), n_repeats=1,
                                 counted_trips=trips, seed=int(rng.integers(2**31)))


def drawn_halo_exchange_nonblocking(fn, seed: int) -> Outcome:
    """2, 3 or 4 ranks, a size from 1 B to 1 MiB and the bytes each rank sends to either side, drawn."""
    from commlab.labs.solutions import p2p as lab

    rng = _rng(seed, "halo_exchange_nonblocking")
    n_ranks, nbytes = int(rng.integers(2, 5)), int(round(10 ** rng.uniform(0, 6)))
    return lab.compare_halo_exchanges([("blocking", lab.halo_exchange_blocking), ("non-blocking", fn)], n_ranks,
                                      nbytes, n_repeats=1, seed=int(rng.integers(2**31)))


def drawn_ring_exchange(fn, seed: int, timeout_s: float = 10.0) -> Outcome:
    """2, 3 or 4 ranks, buffers of at least RING_ELEMENTS float32 (a circle of blocking sends still deadlocks)
    holding whole numbers drawn from ``seed``."""
    from commlab.labs.solutions import p2p as lab

    rng = _rng(seed, "ring_exchange")
    n_ranks = int(rng.integers(2, 5))
    n_elements = RING_ELEMENTS + int(rng.integers(1, RING_ELEMENTS // 4))
    return lab.check_ring_exchange(fn, (n_ranks,), n_elements=n_elements, timeout_s=timeout_s,
                                   seed=int(rng.integers(2**31)))
