"""Recording the transfers of real send/recv code, so the pure layer can check and animate them.

A rank records each message it *sends* as a :class:`commlab.schedules.Transfer` ``(step, src=rank, dst,
chunk, reduce)``; ``reduce`` says whether the receiver adds the chunk (reduce-scatter) or stores it
(all-gather). :meth:`Tracer.gather` collects every rank's records into one trace, which
:func:`commlab.schedules.compare_trace` holds against the reference schedule (the build-your-own-ring lab).

A reader's ring changes little: ``dist.P2POp(dist.isend, chunk, right)`` becomes
``tracer.send_op(chunk, right, step=s, chunk=c, reduce=True)``; ``dist.isend(t, dst)`` becomes
``tracer.isend(t, dst, step=s, chunk=c)``. Receives need no change.
"""
from __future__ import annotations

from commlab.errors import CommlabError


def _whole(name: str, value: object, low: int, high: int | None = None) -> int:
    if (not isinstance(value, int) or isinstance(value, bool) or value < low
            or (high is not None and value > high)):
        span = f">= {low}" if high is None else f"from {low} to {high}"
        raise CommlabError(f"{name} must be a whole number {span}, got {value!r}")
    return value


class Tracer:
    """This rank's record of the messages it sends (``transfers``), and helpers that send and record.

    ``rank`` and ``n_ranks`` default to the initialised process group's. ``length`` (optional) is the length
    of the whole buffer; with it, :attr:`chunk_bounds` and :meth:`chunk` cut buffers the way the schedules do
    (``np.array_split`` sizes).
    """

    def __init__(self, rank: int | None = None, n_ranks: int | None = None, length: int | None = None):
        if rank is None or n_ranks is None:
            import torch.distributed as dist

            if not dist.is_initialized():
                raise CommlabError("Tracer() needs rank and n_ranks, or an initialised process group")
            rank = dist.get_rank() if rank is None else rank
            n_ranks = dist.get_world_size() if n_ranks is None else n_ranks
        self.n_ranks = _whole("n_ranks", n_ranks, 1)
        self.rank = _whole("rank", rank, 0, self.n_ranks - 1)
        self.length = None if length is None else _whole("length", length, 0)
        self.transfers: list = []

    def __repr__(self) -> str:
        return f"Tracer(rank={self.rank}, n_ranks={self.n_ranks}, length={self.length}, " \
               f"{len(self.transfers)} transfers recorded)"

    @property
    def chunk_bounds(self):
        """``n_ranks + 1`` offsets of the chunks of a ``length`` buffer (commlab.schedules.chunk_bounds)."""
        from commlab.schedules import chunk_bounds

        if self.length is None:
            raise CommlabError("this Tracer was made without length=, so it does not know the chunk bounds")
        return chunk_bounds(self.length, self.n_ranks)

    def chunk(self, buffer, c: int):
        """The view of chunk ``c`` of ``buffer`` (a 1-D tensor of ``length`` elements); no copy. Its bounds are
        :attr:`chunk_bounds`' ``c`` and ``c + 1``, computed here without numpy: the first ``length % n_ranks``
        chunks are one element longer, so chunk ``c`` starts at ``c * base + min(c, extra)``."""
        if self.length is None:
            raise CommlabError("this Tracer was made without length=, so it does not know the chunk bounds")
        c = _whole("chunk", c, 0, self.n_ranks - 1)
        base, extra = divmod(self.length, self.n_ranks)
        start = c * base + min(c, extra)
        return buffer[start:start + base + (1 if c < extra else 0)]

    def record(self, dst: int, *, step: int, chunk: int, reduce: bool = False) -> None:
        """Note that this rank sends ``chunk`` to ``dst`` in ``step`` (the receiver adds it if ``reduce``)."""
        from commlab.schedules import Transfer

        dst = _whole("dst", dst, 0, self.n_ranks - 1)
        if dst == self.rank:
            raise CommlabError(f"rank {self.rank} cannot send to itself (dst={dst})")
        if not isinstance(reduce, bool):
            raise CommlabError(f"reduce must be True or False, got {reduce!r}")
        self.transfers.append(Transfer(_whole("step", step, 0), self.rank, dst, _whole("chunk", chunk, 0), reduce))

    def send_op(self, tensor, dst: int, *, step: int, chunk: int, reduce: bool = False):
        """Record, and return ``dist.P2POp(dist.isend, tensor, dst)`` for ``dist.batch_isend_irecv``."""
        import torch.distributed as dist

        self.record(dst, step=step, chunk=chunk, reduce=reduce)
        return dist.P2POp(dist.isend, tensor, dst)

    def isend(self, tensor, dst: int, *, step: int, chunk: int, reduce: bool = False):
        """Record, then ``dist.isend(tensor, dst)``; returns its request (call ``.wait()``)."""
        import torch.distributed as dist

        self.record(dst, step=step, chunk=chunk, reduce=reduce)
        return dist.isend(tensor, dst)

    def send(self, tensor, dst: int, *, step: int, chunk: int, reduce: bool = False) -> None:
        """Record, then the blocking ``dist.send(tensor, dst)``."""
        import torch.distributed as dist

        self.record(dst, step=step, chunk=chunk, reduce=reduce)
        dist.send(tensor, dst)

    def gather(self) -> list:
        """Every rank's records in one trace, sorted by step then sender; a collective (all ranks call it)."""
        import torch.distributed as dist

        everyone: list = [None] * self.n_ranks
        dist.all_gather_object(everyone, list(self.transfers))
        return sorted(t for part in everyone for t in part)
