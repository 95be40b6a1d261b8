"""Reference solutions of the DDP-and-ZeRO lab (labs/ddp_zero.ipynb): data parallelism written by hand.

Each function is what a learner writes in the lab, and what ``torch.nn.parallel.DistributedDataParallel`` and
ZeRO stage 1 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC20,
sec. 5.1) do inside:

- :func:`allreduce_gradients`: after backward, every gradient is summed over the ranks and divided by their
  number, so each rank steps with the gradient of the whole global batch (DDP averages the same way,
  ``torch/csrc/distributed/c10d/reducer.cpp``: the bucket is divided by the process group's size);
- :func:`overlapped_ddp`: one asynchronous all-reduce per parameter, launched from
  ``Tensor.register_post_accumulate_grad_hook`` as soon as that gradient is complete, every handle waited in
  ``finish()`` before the optimizer step;
- :func:`bucketed_ddp`: the gradients packed into flat buckets in reverse order of the parameters, a bucket closed
  once it holds at least ``bucket_cap_bytes`` (torch's ``compute_bucket_assignment_by_size``), one all-reduce per
  bucket launched when its last gradient is ready, unpacked after the wait;
- :func:`accumulate_gradients`: several micro-batches, communication after the last only (DDP's ``no_sync``);
- :func:`zero1`: each rank keeps Adam's state for its shard of the flattened parameters only, reduce-scatters the
  gradients, steps its shard and all-gathers the parameters.
"""
from __future__ import annotations

import math


def allreduce_gradients(model) -> None:
    """Average every parameter's gradient over the ranks, in place (after ``loss.backward()``)."""
    import torch.distributed as dist

    world = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(world)


def overlapped_ddp(model):
    """Register one hook per parameter that all-reduces its gradient asynchronously once it is ready; return
    ``finish()``, which waits for every handle and averages (call it after backward, before the step)."""
    import torch.distributed as dist

    world = dist.get_world_size()
    in_flight = []

    def launch(p) -> None:
        in_flight.append((p, dist.all_reduce(p.grad, async_op=True)))

    for p in model.parameters():
        if p.requires_grad:
            p.register_post_accumulate_grad_hook(launch)

    def finish() -> None:
        for p, work in in_flight:
            work.wait()
            p.grad.div_(world)
        in_flight.clear()

    return finish


def bucket_indices(param_nbytes, bucket_cap_bytes) -> list[list[int]]:
    """Parameter indices per bucket: reverse order, a bucket closes once it holds at least the cap."""
    buckets, current, size = [], [], 0
    for i in reversed(range(len(param_nbytes))):
        current.append(i)
        size += param_nbytes[i]
        if size >= bucket_cap_bytes:
            buckets.append(current)
            current, size = [], 0
    return buckets + ([current] if current else [])


def bucketed_ddp(model, bucket_cap_bytes):
    """Like :func:`overlapped_ddp`, with one all-reduce per flat bucket of gradients; return ``finish()``."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    params = [p for p in model.parameters() if p.requires_grad]
    buckets = bucket_indices([p.numel() * p.element_size() for p in params], bucket_cap_bytes)
    bucket_of = {id(params[i]): k for k, bucket in enumerate(buckets) for i in bucket}
    missing = [len(bucket) for bucket in buckets]
    in_flight = []

    def ready(p) -> None:
        k = bucket_of[id(p)]
        missing[k] -= 1
        if missing[k] == 0:
            flat = torch.cat([params[i].grad.reshape(-1) for i in buckets[k]])
            in_flight.append((k, flat, dist.all_reduce(flat, async_op=True)))

    for p in params:
        p.register_post_accumulate_grad_hook(ready)

    def finish() -> None:
        for k, flat, work in in_flight:
            work.wait()
            flat.div_(world)
            offset = 0
            for i in buckets[k]:
                grad = params[i].grad
                grad.copy_(flat[offset:offset + grad.numel()].view_as(grad))
                offset += grad.numel()
        in_flight.clear()
        missing[:] = [len(bucket) for bucket in buckets]

    return finish


def accumulate_gradients(model, micro_batches, loss_fn) -> None:
    """Forward and backward every micro-batch (each loss divided by their number), then average the summed
    gradients over the ranks once: the gradient of one large batch, with one round of communication."""
    n = len(micro_batches)
    for x, y in micro_batches:
        (loss_fn(model(x), y) / n).backward()
    allreduce_gradients(model)


def zero1(model, lr):
    """ZeRO stage 1 with Adam: return ``(step, optimizer)``. ``optimizer`` holds the state of this rank's shard
    only; ``step()`` (after backward) reduce-scatters the gradients, steps the shard and all-gathers the
    parameters back into ``model``."""
    import torch
    import torch.distributed as dist

    world, rank = dist.get_world_size(), dist.get_rank()
    params = [p for p in model.parameters() if p.requires_grad]
    total = sum(p.numel() for p in params)
    shard = math.ceil(total / world)                # padded so that every rank's shard has the same length
    flat = torch.zeros(shard * world)
    flat[:total] = torch.cat([p.detach().reshape(-1) for p in params])
    mine = torch.nn.Parameter(flat[rank * shard:(rank + 1) * shard].clone())
    optimizer = torch.optim.Adam([mine], lr=lr)

    def step() -> None:
        grads = torch.zeros(shard * world)
        grads[:total] = torch.cat([p.grad.reshape(-1) for p in params])
        grad_shard = torch.empty(shard)
        dist.reduce_scatter_single(grad_shard, grads)
        mine.grad = grad_shard / world
        optimizer.step()
        gathered = torch.empty(shard * world)
        dist.all_gather_single(gathered, mine.detach())
        offset = 0
        with torch.no_grad():
            for p in params:
                p.copy_(gathered[offset:offset + p.numel()].view_as(p))
                offset += p.numel()

    return step, optimizer
