"""``all_gather_single`` and ``reduce_scatter_single`` on every torch commlab supports.

torch 2.13 names the single-tensor all-gather and reduce-scatter ``dist.all_gather_single`` and
``dist.reduce_scatter_single`` and marks the older names ``all_gather_into_tensor`` (torch 1.13) and
``reduce_scatter_tensor`` (torch 1.13) as deprecated. On a torch that lacks the new names (a cluster image that
brings its own torch), the old ones do the same work with the same arguments: the output is one tensor of N
times the input (all-gather) or 1/N of it (reduce-scatter), in rank order.
"""
from __future__ import annotations


def all_gather_single(output, input, group=None, async_op=False):
    """``dist.all_gather_single(output, input)``: every rank's ``input`` concatenated in rank order."""
    import torch.distributed as dist

    fn = getattr(dist, "all_gather_single", None)
    if fn is None or fn is all_gather_single:  # torch < 2.13, perhaps with this shim installed by name
        fn = dist.all_gather_into_tensor
    return fn(output, input, group=group, async_op=async_op)


def reduce_scatter_single(output, input, op=None, group=None, async_op=False):
    """``dist.reduce_scatter_single(output, input, op)``: rank r gets piece r of the reduction of ``input``."""
    import torch.distributed as dist

    fn = getattr(dist, "reduce_scatter_single", None)
    if fn is None or fn is reduce_scatter_single:
        fn = dist.reduce_scatter_tensor
    return fn(output, input, op=dist.ReduceOp.SUM if op is None else op, group=group, async_op=async_op)


def provide_new_names() -> list[str]:
    """In a rank's process on a torch older than 2.13: make ``dist.all_gather_single`` and
    ``dist.reduce_scatter_single`` the shims above, so code written for the current names (the book's, the
    learner's) runs there too. Returns the names it added (empty on torch 2.13 and newer). Called by
    :mod:`commlab.launch` in each rank it starts and in :func:`commlab.launch.init_from_env`."""
    import torch.distributed as dist

    added = []
    for name, shim in (("all_gather_single", all_gather_single), ("reduce_scatter_single", reduce_scatter_single)):
        if not hasattr(dist, name):
            setattr(dist, name, shim)
            added.append(name)
    return added
