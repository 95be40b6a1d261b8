"""Ring reduce-scatter, all-gather and all-reduce written with ``isend``/``irecv`` (chapter 05, and the
reference answer of the build-your-own-ring lab).

They follow :mod:`commlab.schedules.ring` step for step: in step s rank r sends to (r + 1) mod N and
receives from (r - 1) mod N, both posted at once with ``dist.batch_isend_irecv`` so no rank waits for its
neighbour to finish sending first (the deadlock of two blocking sends).

* reduce-scatter, s = 0..N-2: send chunk (r - s - 1) mod N; receive chunk (r - s - 2) mod N and add it.
  After N-1 steps rank r holds the sum of chunk r (what ``dist.reduce_scatter`` gives rank r).
* all-gather, s = 0..N-2: send chunk (r - s) mod N; receive chunk (r - s - 1) mod N and store it.
* all-reduce: reduce-scatter (steps 0..N-2) then all-gather (steps N-1..2N-3); each rank sends
  2(N-1)/N of the buffer, the bandwidth lower bound (Patarasuk and Yuan, 2009).

Chunks have ``np.array_split`` sizes (:func:`commlab.schedules.chunk_bounds`), so any length works, zero
included. Reductions are sums. Pass ``tracer=`` to record every send (:class:`commlab.p2p.Tracer`).
"""
from __future__ import annotations

from commlab.p2p.tracer import Tracer


def _group():
    import torch.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def _bounds(length: int, n_ranks: int) -> list[int]:
    from commlab.schedules import chunk_bounds

    return [int(b) for b in chunk_bounds(length, n_ranks)]


def _exchange(send, dst: int, recv, src: int) -> None:
    """Send ``send`` to ``dst`` while receiving ``recv`` from ``src``; return when both are done."""
    import torch.distributed as dist

    ops = [dist.P2POp(dist.isend, send, dst), dist.P2POp(dist.irecv, recv, src)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()


def reduce_scatter_steps(buffer, bounds: list[int], tracer: Tracer | None = None, first_step: int = 0) -> None:
    """N-1 ring reduce-scatter steps on ``buffer`` in place; afterwards chunk r is complete on rank r."""
    import torch

    rank, n = _group()
    right, left = (rank + 1) % n, (rank - 1) % n
    scratch = torch.empty(max(bounds[c + 1] - bounds[c] for c in range(n)), dtype=buffer.dtype,
                          device=buffer.device)
    for s in range(n - 1):
        send_c, recv_c = (rank - s - 1) % n, (rank - s - 2) % n
        into = scratch[:bounds[recv_c + 1] - bounds[recv_c]]
        if tracer is not None:
            tracer.record(right, step=first_step + s, chunk=send_c, reduce=True)
        _exchange(buffer[bounds[send_c]:bounds[send_c + 1]], right, into, left)
        buffer[bounds[recv_c]:bounds[recv_c + 1]].add_(into)


def all_gather_steps(buffer, bounds: list[int], tracer: Tracer | None = None, first_step: int = 0) -> None:
    """N-1 ring all-gather steps on ``buffer`` in place; chunk r must be complete on rank r before."""
    rank, n = _group()
    right, left = (rank + 1) % n, (rank - 1) % n
    for s in range(n - 1):
        send_c, recv_c = (rank - s) % n, (rank - s - 1) % n
        if tracer is not None:
            tracer.record(right, step=first_step + s, chunk=send_c, reduce=False)
        _exchange(buffer[bounds[send_c]:bounds[send_c + 1]], right,
                  buffer[bounds[recv_c]:bounds[recv_c + 1]], left)


def _working_copy(x, in_place: bool):
    """The 1-D buffer the ring works on: ``x`` itself (in place; it must be contiguous) or a copy."""
    from commlab.errors import CommlabError

    if not in_place:
        return x.detach().flatten().clone()
    if x.dim() != 1 or not x.is_contiguous():
        raise CommlabError(f"in_place=True needs a contiguous 1-D tensor, got shape {tuple(x.shape)}")
    return x.detach()


def ring_reduce_scatter(x, tracer: Tracer | None = None):
    """Rank r's chunk r of the sum of every rank's ``x`` (1-D; ``x`` itself is left unchanged)."""
    rank, n = _group()
    buffer = x.detach().flatten().clone()
    bounds = _bounds(buffer.numel(), n)
    reduce_scatter_steps(buffer, bounds, tracer)
    return buffer[bounds[rank]:bounds[rank + 1]].clone()


def ring_all_gather(chunk, length: int | None = None, tracer: Tracer | None = None):
    """The whole buffer of ``length`` elements, rank r contributing chunk r (``chunk``).

    ``length`` defaults to ``N * chunk.numel()`` (chunks of equal size); give it when the chunks have
    ``np.array_split`` sizes that differ by one.
    """
    import torch

    from commlab.errors import CommlabError

    rank, n = _group()
    length = n * chunk.numel() if length is None else length
    bounds = _bounds(length, n)
    if bounds[rank + 1] - bounds[rank] != chunk.numel():
        raise CommlabError(f"rank {rank}: chunk {rank} of a length-{length} buffer on {n} ranks has "
                           f"{bounds[rank + 1] - bounds[rank]} elements, got {chunk.numel()}")
    buffer = torch.empty(length, dtype=chunk.dtype, device=chunk.device)
    buffer[bounds[rank]:bounds[rank + 1]] = chunk.detach().flatten()
    all_gather_steps(buffer, bounds, tracer)
    return buffer


def ring_all_reduce(x, tracer: Tracer | None = None, in_place: bool = False):
    """The sum of every rank's ``x``: reduce-scatter, then all-gather.

    ``x`` is left unchanged and a new 1-D tensor returned, unless ``in_place`` (then ``x``, contiguous and
    1-D, is overwritten with the sum and returned, as ``dist.all_reduce`` does; this avoids allocating and
    first touching a buffer the size of ``x``, which costs as much as a network step on a CPU).
    """
    rank, n = _group()
    buffer = _working_copy(x, in_place)
    bounds = _bounds(buffer.numel(), n)
    reduce_scatter_steps(buffer, bounds, tracer)
    all_gather_steps(buffer, bounds, tracer, first_step=n - 1)
    return buffer
