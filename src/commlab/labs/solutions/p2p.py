"""The p2p lab (labs/p2p.ipynb, labs/scripts/p2p.py): the reference answers, and the measurements and checks
that the notebook and the script share.

The reader writes three functions; with ``COMMLAB_LAB_SOLUTIONS=1`` the ones below replace them:

* :func:`ping_pong`: ``n_round_trips`` round trips of one buffer between ranks 0 and 1 with blocking
  ``send``/``recv``; half a round trip is the one-way time t(S) = alpha + S/B (chapter 03).
* :func:`halo_exchange_nonblocking`: swap buffers with both ring neighbours at once (``isend``/``irecv``).
* :func:`ring_exchange`: every rank sends to its right neighbour and receives from its left one without the
  deadlock of "everybody sends first" (chapter 03, "How not to deadlock").

The checks run the reader's code on real ranks through :func:`commlab.launch.run` with a timeout and return
:class:`Outcome` values whose ``problem`` says in words what went wrong (a deadlock names the ranks and the
call each was blocked in), so a notebook cell ends in ``assert outcome.ok, outcome.problem``.
"""
from __future__ import annotations

import time

# --- the reference answers ---------------------------------------------------------------------------------


def ping_pong(rank, buffer, n_round_trips):
    """Rank 0 sends ``buffer`` to rank 1 and receives it back, ``n_round_trips`` times; rank 1 mirrors it."""
    import torch.distributed as dist

    for _ in range(n_round_trips):
        if rank == 0:
            dist.send(buffer, dst=1)
            dist.recv(buffer, src=1)
        elif rank == 1:
            dist.recv(buffer, src=0)
            dist.send(buffer, dst=0)


def halo_exchange_blocking(rank, n_ranks, to_left, to_right, from_left, from_right):
    """The given, blocking version: pass right, then pass left; even ranks send first, odd ranks receive first."""
    import torch.distributed as dist

    left, right = (rank - 1) % n_ranks, (rank + 1) % n_ranks
    for send_buf, dst, recv_buf, src in ((to_right, right, from_left, left), (to_left, left, from_right, right)):
        if rank % 2 == 0:
            dist.send(send_buf, dst)
            dist.recv(recv_buf, src)
        else:
            dist.recv(recv_buf, src)
            dist.send(send_buf, dst)


def halo_exchange_nonblocking(rank, n_ranks, to_left, to_right, from_left, from_right):
    """Post both sends and both receives, then wait: the two exchanges (and both directions) overlap."""
    import torch.distributed as dist

    left, right = (rank - 1) % n_ranks, (rank + 1) % n_ranks
    requests = [dist.isend(to_right, right), dist.isend(to_left, left),
                dist.irecv(from_left, left), dist.irecv(from_right, right)]
    for request in requests:
        request.wait()


def ring_exchange(rank, n_ranks, outgoing, incoming):
    """Send ``outgoing`` to rank + 1 while receiving ``incoming`` from rank - 1 (mod N), posted together."""
    import torch.distributed as dist

    right, left = (rank + 1) % n_ranks, (rank - 1) % n_ranks
    ops = [dist.P2POp(dist.isend, outgoing, right), dist.P2POp(dist.irecv, incoming, left)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()


def ring_exchange_naive(rank, n_ranks, outgoing, incoming):
    """The broken exchange of the lab: every rank sends first, so on gloo every rank waits in ``send``."""
    import torch.distributed as dist

    dist.send(outgoing, (rank + 1) % n_ranks)
    dist.recv(incoming, (rank - 1) % n_ranks)


# --- launching the reader's code, and failures in words: commlab.labs.checking (shared by every lab) -------

from commlab.labs.checking import Outcome, blocked_in, describe_failure, device_and_sync, run_checked  # noqa: E402,F401


# --- ping-pong ----------------------------------------------------------------------------------------------


def _pattern(nbytes: int, device, seed: int | None = None):
    """Rank 0's bytes: 1, 2, ..., 251, 1, ... (or, with ``seed``, random bytes from 1 to 255 drawn from it)."""
    import torch

    if seed is not None:
        drawn = torch.randint(1, 256, (nbytes,), generator=torch.Generator().manual_seed(seed), dtype=torch.int64)
        return drawn.to(torch.uint8).to(device)
    return (torch.arange(nbytes, dtype=torch.int64) % 251 + 1).to(torch.uint8).to(device)


def _count_sends(fn, rank, buffer, n_round_trips) -> int:
    """Messages this rank sends (dist.send and dist.isend calls) during ``fn(rank, buffer, n_round_trips)``;
    0 when the reader's code holds its own reference to the functions and cannot be observed."""
    import torch.distributed as dist

    counted = [0]
    originals = {name: getattr(dist, name) for name in ("send", "isend")}

    def counting(original):
        def call(*args, **kwargs):
            counted[0] += 1
            return original(*args, **kwargs)
        return call

    try:
        for name, original in originals.items():
            setattr(dist, name, counting(original))
        fn(rank, buffer, n_round_trips)
    finally:
        for name, original in originals.items():
            setattr(dist, name, original)
    return counted[0]


def ping_pong_in_group(rank, n_ranks, fn, sizes_nbytes, n_round_trips, n_repeats, counted_trips: int = 3,
                       seed: int | None = None):
    """Inside a rank: check the data of a first call (``counted_trips`` round trips, its messages counted),
    warm up, then time ``n_repeats`` calls per size; the fastest call counts (other processes on a shared
    machine only ever add time). ``seed``: rank 0's bytes drawn from it (else a fixed pattern)."""
    import torch
    import torch.distributed as dist

    device, sync = device_and_sync()
    one_way_s: list[float] = []
    problems: list[str] = []
    for nbytes in sizes_nbytes:
        want = _pattern(nbytes, device, None if seed is None else seed + nbytes)
        buffer = want.clone() if rank == 0 else torch.zeros(nbytes, dtype=torch.uint8, device=device)
        sent = _count_sends(fn, rank, buffer, counted_trips)    # one message each way per round trip
        sync()
        if rank <= 1 and sent not in (0, counted_trips) and not one_way_s:
            problems.append(f"with n_round_trips={counted_trips}, rank {rank} sent {sent} messages instead of "
                            f"{counted_trips}: each round trip is one message each way, so loop n_round_trips times")
        if rank <= 1 and not torch.equal(buffer, want):
            problems.append(f"after one round trip of {nbytes} bytes, rank {rank}'s buffer does not hold rank 0's "
                            f"data ({'the reply did not come back' if rank == 0 else 'nothing arrived'})")
        fn(rank, buffer, n_round_trips if one_way_s else 25)  # warm-up, untimed (longer for the first size)
        times_s = []
        for _ in range(n_repeats):
            dist.barrier()
            start = time.perf_counter()
            fn(rank, buffer, n_round_trips)
            sync()
            times_s.append(time.perf_counter() - start)
        one_way_s.append(min(times_s) / (2 * n_round_trips))
    return {"backend": dist.get_backend(), "one_way_s": one_way_s, "problems": problems}


def measure_ping_pong(fn, sizes_nbytes, n_round_trips: int = 4, n_repeats: int = 7,
                      timeout_s: float = 60.0, counted_trips: int = 3, seed: int | None = None) -> Outcome:
    """One-way times ``details["one_way_s"]`` (rank 0's clock: the fastest of ``n_repeats`` calls of
    ``fn(rank, buffer, n_round_trips)``, divided by 2 n_round_trips), after checking the data moved
    (``counted_trips`` round trips of rank 0's bytes, drawn from ``seed`` when it is given)."""
    outcome = run_checked(ping_pong_in_group, 2, fn, list(sizes_nbytes), n_round_trips, n_repeats, counted_trips,
                          seed, what=f"{getattr(fn, '__name__', 'ping_pong')} on 2 ranks", timeout_s=timeout_s)
    if not outcome.ok:
        return outcome
    problems = [p for v in outcome.rank_values for p in v["problems"]]
    details = {"sizes_nbytes": list(sizes_nbytes), "one_way_s": outcome.rank_values[0]["one_way_s"]}
    return Outcome(outcome.values, problems[0] if problems else "", outcome.backend, details)


# --- two exchanges at once ----------------------------------------------------------------------------------


def halo_fills(n_ranks: int, seed: int | None = None) -> list[tuple[int, int]]:
    """(to_left's byte, to_right's byte) of each rank: 2r + 1 and 2r + 2, or, with ``seed``, distinct bytes
    from 1 to 255 drawn from it."""
    if seed is None:
        return [(2 * r + 1, 2 * r + 2) for r in range(n_ranks)]
    import numpy as np

    drawn = np.random.default_rng(seed).choice(np.arange(1, 256), size=2 * n_ranks, replace=False)
    return [(int(drawn[2 * r]), int(drawn[2 * r + 1])) for r in range(n_ranks)]


def _halo_buffers(rank: int, nbytes: int, device, fills=None):
    import torch

    to_left_byte, to_right_byte = (fills or halo_fills(rank + 1))[rank]
    to_left = torch.full((nbytes,), to_left_byte, dtype=torch.uint8, device=device)
    to_right = torch.full((nbytes,), to_right_byte, dtype=torch.uint8, device=device)
    return to_left, to_right, torch.zeros_like(to_left), torch.zeros_like(to_right)


def halo_in_group(rank, n_ranks, candidates, nbytes, n_repeats, seed: int | None = None):
    """Inside a rank: for each (name, fn), check what arrived from both neighbours, then time it (fastest).
    ``seed``: the bytes each rank sends drawn from it (:func:`halo_fills`)."""
    import torch.distributed as dist

    device, sync = device_and_sync()
    left, right = (rank - 1) % n_ranks, (rank + 1) % n_ranks
    times_s, problems = {}, []
    fills = halo_fills(n_ranks, seed)
    for name, fn in candidates:
        to_left, to_right, from_left, from_right = _halo_buffers(rank, nbytes, device, fills)
        runs_s = []
        for _ in range(n_repeats + 1):  # the first call is checked and not timed
            dist.barrier()
            sync()
            start = time.perf_counter()
            fn(rank, n_ranks, to_left, to_right, from_left, from_right)
            sync()
            runs_s.append(time.perf_counter() - start)
            if len(runs_s) == 1:
                got = (int(from_left[0]), int(from_left[-1]), int(from_right[0]), int(from_right[-1]))
                want = (fills[left][1],) * 2 + (fills[right][0],) * 2
                if got != want:
                    problems.append(f"{name} on rank {rank}: from_left should hold rank {left}'s to_right "
                                    f"({want[0]}) and from_right rank {right}'s to_left ({want[2]}); got "
                                    f"{got[0]} and {got[2]}")
        times_s[name] = min(runs_s[1:])
    return {"backend": dist.get_backend(), "times_s": times_s, "problems": problems}


def compare_halo_exchanges(candidates, n_ranks: int, nbytes: int, n_repeats: int = 5,
                           timeout_s: float = 60.0, seed: int | None = None) -> Outcome:
    """Run every ``(name, fn)`` halo exchange on ``n_ranks`` ranks, check what arrived, time each (rank 0's
    fastest of ``n_repeats``, ``details["times_s"][name]``); ``seed``: the bytes sent drawn from it."""
    names = " and ".join(name for name, _ in candidates)
    outcome = run_checked(halo_in_group, n_ranks, list(candidates), nbytes, n_repeats, seed,
                          what=f"{names} on {n_ranks} ranks", timeout_s=timeout_s)
    if not outcome.ok:
        return outcome
    problems = [p for v in outcome.rank_values for p in v["problems"]]
    return Outcome(outcome.values, problems[0] if problems else "", outcome.backend,
                   {"times_s": outcome.rank_values[0]["times_s"]})


# --- the deadlock and its fix -------------------------------------------------------------------------------


def probe_in_group(rank, n_ranks, sizes_nbytes, pause_s):
    """Inside ranks 0 and 1: rank 1 posts its receive ``pause_s`` late and rank 0 times its blocking send. A send
    that returns well before the receive was posted did not wait for it (an eager send); one that returns after
    about ``pause_s`` waited. (``is_completed()`` cannot tell: for gloo's send work it turns true only inside
    ``wait()``.) Returns ``{"send_s": {nbytes: seconds}}`` on rank 0."""
    import torch
    import torch.distributed as dist

    device, sync = device_and_sync()
    send_s = {}
    for nbytes in sizes_nbytes:
        buffer = torch.ones(nbytes, dtype=torch.uint8, device=device)
        dist.barrier()                                  # both ranks start the size together
        if rank == 0:
            start = time.perf_counter()
            dist.send(buffer, 1)
            sync()
            send_s[nbytes] = time.perf_counter() - start
        else:
            time.sleep(pause_s)                         # the receive is posted late on purpose
            dist.recv(buffer, 0)
    return {"backend": dist.get_backend(), "send_s": send_s}


#: A send that returned in less than this share of the receiver's delay did not wait for the receive.
EAGER_SHARE = 0.5


def probe_eager_sizes(sizes_nbytes, pause_s: float = 0.1, backend: str = "gloo", timeout_s: float = 30.0) -> dict:
    """{nbytes: True if a send of that size returned before the peer posted its receive} on 2 ranks: the send
    returned in less than ``EAGER_SHARE`` of the receiver's ``pause_s`` delay."""
    outcome = run_checked(probe_in_group, 2, list(sizes_nbytes), pause_s, what="the send probe",
                          backend=backend, timeout_s=timeout_s)
    if not outcome.ok:
        raise RuntimeError(outcome.problem)
    send_s = outcome.rank_values[0]["send_s"]
    return {n: send_s[n] < EAGER_SHARE * pause_s for n in sizes_nbytes}


def _outgoing(rank: int, n_elements: int, seed: int | None):
    """Rank ``rank``'s buffer: 10 r + (i mod 7), or, with ``seed``, whole numbers drawn from it."""
    import torch

    if seed is None:            # whole numbers below 2**24: exact in float32
        return torch.arange(n_elements, dtype=torch.float32).remainder_(7).add_(10 * rank)
    drawn = torch.Generator().manual_seed(seed * 1009 + rank)
    return torch.randint(-2**20, 2**20, (n_elements,), generator=drawn, dtype=torch.float32)


def exchange_in_group(rank, n_ranks, fn, n_elements, seed: int | None = None):
    """Inside a rank: ``fn(rank, n_ranks, outgoing, incoming)``, then what arrived held against the numpy
    reference (commlab.collectives' sendrecv: rank r receives rank r-1's buffer), which each rank computes from
    every rank's buffer as it was before the exchange (they are made from the rank and the seed, so no rank
    needs another's); only the ranks' verdicts are gathered, not their megabytes. Rank r sends
    10 r + (i mod 7), or, with ``seed``, whole numbers drawn from it."""
    import numpy as np
    import torch
    import torch.distributed as dist

    from commlab.collectives import spec

    device, sync = device_and_sync()
    outgoing = _outgoing(rank, n_elements, seed).to(device)
    incoming = torch.full_like(outgoing, -1.0)
    fn(rank, n_ranks, outgoing, incoming)
    sync()
    want = spec("sendrecv").reference([_outgoing(r, n_elements, seed).numpy() for r in range(n_ranks)])[rank]
    got = incoming.cpu().numpy()
    mine = None if np.array_equal(got, want) else (
        f"{getattr(fn, '__name__', 'fn')} on {n_ranks} ranks: rank {rank} should have received rank "
        f"{(rank - 1) % n_ranks}'s buffer (it starts {want[:3].tolist()}), got {got[:3].tolist()}")
    everyone: list = [None] * n_ranks
    dist.all_gather_object(everyone, mine)
    return {"backend": dist.get_backend(), "problems": [p for p in everyone if p][:1]}


def check_ring_exchange(fn, n_ranks_list=(2, 3, 4), n_elements: int = 256, timeout_s: float = 10.0,
                        backend: str = "auto", seed: int | None = None) -> Outcome:
    """Run ``fn(rank, n_ranks, outgoing, incoming)`` on each N with a timeout and check what arrived
    (``seed``: the buffers drawn from it)."""
    for n in n_ranks_list:
        outcome = run_checked(exchange_in_group, n, fn, n_elements, seed, what=f"{fn.__name__} on {n} ranks",
                              timeout_s=timeout_s, backend=backend)
        problems = [p for v in outcome.values or () for p in v["problems"]]
        if not outcome.ok or problems:
            return Outcome(problem=outcome.problem or problems[0], backend=outcome.backend)
    return Outcome(values=list(n_ranks_list), backend=outcome.backend)
