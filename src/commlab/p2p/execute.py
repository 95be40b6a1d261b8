"""Run any schedule of :mod:`commlab.schedules` on real ranks with ``isend``/``irecv`` (chapter 06), and the
binary-tree all-reduce built on it.

Each rank walks the schedule's steps. In a step it posts, all at once, an ``isend`` for every transfer it
makes and an ``irecv`` into a scratch buffer for every transfer it receives; when all have completed it adds
(``reduce``) or copies what it received into its buffer. Sends read the buffer as it was before the step and
receives land only after it, exactly the schedule's rule that the transfers of one step are simultaneous.
A rank with nothing to do in a step skips it: point-to-point messages need no global barrier.
"""
from __future__ import annotations

from commlab.p2p.tracer import Tracer


def _post(step, rank: int, buffer, bounds: list[int], tracer: Tracer | None):
    """Post this rank's sends and receives of one step; return (requests, [(transfer, scratch)])."""
    import torch
    import torch.distributed as dist

    ops, landing = [], []
    for t in step:
        piece = buffer[bounds[t.chunk]:bounds[t.chunk + 1]]
        if t.src == rank:
            ops.append(dist.P2POp(dist.isend, piece, t.dst))
            if tracer is not None:
                tracer.record(t.dst, step=t.step, chunk=t.chunk, reduce=t.reduce)
        elif t.dst == rank:
            scratch = torch.empty_like(piece)
            ops.append(dist.P2POp(dist.irecv, scratch, t.src))
            landing.append((t, scratch))
    return (dist.batch_isend_irecv(ops) if ops else []), landing


def execute(schedule, x, tracer: Tracer | None = None):
    """This rank's buffer after running ``schedule`` on every rank's ``x`` (1-D, left unchanged).

    For an all-reduce schedule the result is the sum on every rank; for reduce-scatter only this rank's
    own chunk is complete, for all-gather every chunk is (the caller slices what it needs).
    """
    import torch.distributed as dist

    from commlab.errors import CommlabError
    from commlab.schedules import chunk_bounds

    rank, n = dist.get_rank(), dist.get_world_size()
    if schedule.n_ranks != n:
        raise CommlabError(f"schedule {schedule.algorithm} is for {schedule.n_ranks} ranks; this group has {n}")
    buffer = x.detach().flatten().clone()
    bounds = [int(b) for b in chunk_bounds(buffer.numel(), schedule.n_chunks)]
    for step in schedule.steps:
        requests, landing = _post(step, rank, buffer, bounds, tracer)
        for request in requests:
            request.wait()
        for t, scratch in landing:
            piece = buffer[bounds[t.chunk]:bounds[t.chunk + 1]]
            piece.add_(scratch) if t.reduce else piece.copy_(scratch)
    return buffer


def tree_all_reduce(x, tracer: Tracer | None = None):
    """The sum of every rank's ``x`` over NCCL's binary tree (``tree-all-reduce`` schedule): partial sums
    flow up to rank 0 in ceil(log2 N) steps, the total flows back down in as many."""
    import torch.distributed as dist

    from commlab.schedules import build

    return execute(build("tree-all-reduce", dist.get_world_size()), x, tracer)
