"""The ring written with ``isend``/``irecv``: reduce-scatter, all-gather and all-reduce (chapter 05), and the
reference answer of the build-your-own-ring lab (:mod:`commlab.labs.solutions.build_your_own_ring` takes its
steps from here).

They follow :mod:`commlab.schedules.ring` step for step: in step s rank r sends to (r + 1) mod N and
receives from (r - 1) mod N, both posted at once with ``dist.batch_isend_irecv`` so no rank waits for its
neighbour to finish sending first (the deadlock of two blocking sends).

* reduce-scatter, s = 0..N-2: send chunk (r - s - 1) mod N; receive chunk (r - s - 2) mod N and add it.
  After N-1 steps rank r holds the sum of chunk r (what ``dist.reduce_scatter`` gives rank r).
* all-gather, s = 0..N-2: send chunk (r - s) mod N; receive chunk (r - s - 1) mod N and store it.
* all-reduce: reduce-scatter (steps 0..N-2) then all-gather (steps N-1..2N-3); each rank sends
  2(N-1)/N of the buffer, the bandwidth lower bound (Patarasuk and Yuan, 2009).

The steps work in place on a whole 1-D buffer cut into N chunks of ``np.array_split`` sizes
(``tracer.chunk(buffer, c)``, :func:`commlab.schedules.chunk_bounds`), so any length works, zero included, and
record every send on the tracer (:class:`commlab.p2p.Tracer`): the tracer is the lab's interface, and it
knows the rank, the number of ranks and the chunks. The collectives take a tracer when one is given (to
compare the trace with the schedule), else make their own. Reductions are sums.
"""
from __future__ import annotations

from commlab.p2p.tracer import Tracer


def _tracer_for(length: int, tracer: Tracer | None) -> Tracer:
    """``tracer`` (told the buffer's ``length`` if it was made without one), or a new one for this rank of the
    default group."""
    from commlab.errors import CommlabError

    if tracer is None:
        return Tracer(length=length)
    if tracer.length is None:
        tracer.length = length
    elif tracer.length != length:
        raise CommlabError(f"the tracer is for a buffer of {tracer.length} elements, the ring's has {length}")
    return tracer


def ring_step(buffer, tracer: Tracer, step: int, send_c: int, recv_c: int, reduce: bool, scratch=None) -> None:
    """One step: send chunk ``send_c`` to the right while receiving chunk ``recv_c`` from the left, posted
    together; with ``reduce`` the received chunk is added to ours (into ``scratch`` first when given, a buffer
    at least a chunk long, else into a new one)."""
    import torch
    import torch.distributed as dist

    rank, n = tracer.rank, tracer.n_ranks
    right, left = (rank + 1) % n, (rank - 1) % n
    target = tracer.chunk(buffer, recv_c)
    incoming = target
    if reduce:
        incoming = torch.empty_like(target) if scratch is None else scratch[:target.numel()]
    ops = [tracer.send_op(tracer.chunk(buffer, send_c), right, step=step, chunk=send_c, reduce=reduce),
           dist.P2POp(dist.irecv, incoming, left)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    if reduce:
        target.add_(incoming)


def reduce_scatter_steps(buffer, tracer: Tracer, first_step: int = 0) -> None:
    """The N-1 reduce-scatter steps, in place: afterwards chunk r of ``buffer`` is the sum on rank r."""
    rank, n = tracer.rank, tracer.n_ranks
    scratch = buffer.new_empty(max(tracer.chunk(buffer, c).numel() for c in range(n)))
    for s in range(n - 1):
        ring_step(buffer, tracer, first_step + s, (rank - s - 1) % n, (rank - s - 2) % n, reduce=True,
                  scratch=scratch)


def all_gather_steps(buffer, tracer: Tracer, first_step: int = 0) -> None:
    """The N-1 all-gather steps, in place: rank r's chunk r goes round until every rank holds every chunk."""
    rank, n = tracer.rank, tracer.n_ranks
    for s in range(n - 1):
        ring_step(buffer, tracer, first_step + s, (rank - s) % n, (rank - s - 1) % n, reduce=False)


def _working_copy(x, in_place: bool):
    """The 1-D buffer the ring works on: ``x`` itself (in place; it must be contiguous) or a copy."""
    from commlab.errors import CommlabError

    if not in_place:
        return x.detach().flatten().clone()
    if x.dim() != 1 or not x.is_contiguous():
        raise CommlabError(f"in_place=True needs a contiguous 1-D tensor, got shape {tuple(x.shape)}")
    return x.detach()


def ring_reduce_scatter(x, tracer: Tracer | None = None):
    """This rank's chunk of the sum of every rank's ``x`` (what ``dist.reduce_scatter`` gives rank r; ``x``
    itself is left unchanged)."""
    buffer = x.detach().flatten().clone()
    tracer = _tracer_for(buffer.numel(), tracer)
    reduce_scatter_steps(buffer, tracer)
    return tracer.chunk(buffer, tracer.rank).clone()


def ring_all_gather(chunk, tracer: Tracer | None = None, length: int | None = None):
    """The whole buffer, rank r contributing ``chunk`` as chunk r.

    Its length is the tracer's (``tracer.length``), else ``length``, else ``N * chunk.numel()`` (chunks of equal
    size); give one when the chunks have ``np.array_split`` sizes that differ by one.
    """
    from commlab.errors import CommlabError

    if tracer is not None and tracer.length is not None:
        length = tracer.length if length is None else length
    elif length is None:
        import torch.distributed as dist

        length = dist.get_world_size() * chunk.numel()
    tracer = _tracer_for(length, tracer)
    rank, n = tracer.rank, tracer.n_ranks
    buffer = chunk.new_zeros(length)
    mine = tracer.chunk(buffer, rank)
    if mine.numel() != chunk.numel():
        raise CommlabError(f"rank {rank}: chunk {rank} of a length-{length} buffer on {n} ranks has "
                           f"{mine.numel()} elements, got {chunk.numel()}")
    mine.copy_(chunk.detach().flatten())
    all_gather_steps(buffer, tracer)
    return buffer


def ring_all_reduce(x, tracer: Tracer | None = None, in_place: bool = False):
    """The sum of every rank's ``x``: reduce-scatter (steps 0..N-2), then all-gather (steps N-1..2N-3).

    ``x`` is left unchanged and a new 1-D tensor returned, unless ``in_place`` (then ``x``, contiguous and
    1-D, is overwritten with the sum and returned, as ``dist.all_reduce`` does; this avoids allocating and
    first touching a buffer the size of ``x``, which costs as much as a network step on a CPU).
    """
    buffer = _working_copy(x, in_place)
    tracer = _tracer_for(buffer.numel(), tracer)
    reduce_scatter_steps(buffer, tracer, first_step=0)
    all_gather_steps(buffer, tracer, first_step=tracer.n_ranks - 1)
    return buffer
