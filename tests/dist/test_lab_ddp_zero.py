"""The DDP-and-ZeRO lab: the reference passes every check on real gloo ranks (against torch's DDP and the
unsharded Adam run), and each wrong learner version below gets the sentence that names its mistake; a version
that hangs is stopped by the timeout with the rank and the call."""
from __future__ import annotations

import math

import pytest

from commlab.labs.checks import ddp_zero as checks
from commlab.labs.solutions import ddp_zero as ref


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


# --- wrong learner versions (module level: the ranks are forked and call them) ---------------------------------


def sum_without_average(model):
    import torch.distributed as dist

    for p in model.parameters():
        dist.all_reduce(p.grad)


def divide_by_two(model):
    import torch.distributed as dist

    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad.div_(2)


def never_communicates(model):
    return None


def blocking_hooks(model):
    import torch.distributed as dist

    world = dist.get_world_size()

    def hook(q):
        dist.all_reduce(q.grad)
        q.grad.div_(world)

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(hook)
    return lambda: None


def never_waits(model):
    import torch.distributed as dist

    world = dist.get_world_size()
    handles = []
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda q: handles.append((q, dist.all_reduce(q.grad, async_op=True))))

    def finish():
        for _q, work in handles[:-1]:             # the last handle (the first layer's weight, ready last) is forgotten
            work.wait()
        for q, _ in handles:
            q.grad.div_(world)
        handles.clear()

    return finish


def after_backward(model):
    def finish():
        ref.allreduce_gradients(model)

    return finish


def hangs_on_rank_0(model):
    """Rank 0 never joins its peers' all-reduces (as behind an ``if`` that only rank 0 takes)."""
    import torch.distributed as dist

    if dist.get_rank() == 0:
        return
    for p in model.parameters():
        dist.all_reduce(p.grad)


def forward_order_buckets(model, cap):
    """The right mechanics with the buckets filled from the first parameter."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    params = list(model.parameters())
    buckets = checks.expected_forward_buckets([p.numel() * 4 for p in params], cap)
    flights = []

    def finish():
        for bucket in buckets:
            flat = torch.cat([params[i].grad.reshape(-1) for i in bucket])
            flights.append((bucket, flat, dist.all_reduce(flat, async_op=True)))
        for bucket, flat, work in flights:
            work.wait()
            offset = 0
            for i in bucket:
                g = params[i].grad
                g.copy_(flat[offset:offset + g.numel()].view_as(g) / world)
                offset += g.numel()
        flights.clear()

    for p in params:                      # launches only from the last hook, so the calls fall in backward
        p.register_post_accumulate_grad_hook(lambda q, first=params[0]: finish() if q is first else None)
    return lambda: None


def strict_buckets(model, cap):
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    params = list(model.parameters())
    buckets = checks.strict_buckets([p.numel() * 4 for p in params], cap)
    bucket_of = {id(params[i]): k for k, b in enumerate(buckets) for i in b}
    missing = [len(b) for b in buckets]
    flights = []

    def ready(q):
        k = bucket_of[id(q)]
        missing[k] -= 1
        if missing[k] == 0:
            flat = torch.cat([params[i].grad.reshape(-1) for i in buckets[k]])
            flights.append((k, flat, dist.all_reduce(flat, async_op=True)))

    for p in params:
        p.register_post_accumulate_grad_hook(ready)

    def finish():
        for k, flat, work in flights:
            work.wait()
            offset = 0
            for i in buckets[k]:
                g = params[i].grad
                g.copy_(flat[offset:offset + g.numel()].view_as(g) / world)
                offset += g.numel()
        flights.clear()
        missing[:] = [len(b) for b in buckets]

    return finish


def sync_every_micro_batch(model, micro_batches, loss_fn):
    n = len(micro_batches)
    for x, y in micro_batches:
        (loss_fn(model(x), y) / n).backward()
        ref.allreduce_gradients(model)            # the average of a partial sum, again and again


def loss_not_divided(model, micro_batches, loss_fn):
    for x, y in micro_batches:
        loss_fn(model(x), y).backward()
    ref.allreduce_gradients(model)


def zero1_without_all_gather(model, lr):
    import torch
    import torch.distributed as dist

    world, rank = dist.get_world_size(), dist.get_rank()
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    shard = math.ceil(total / world)
    flat = torch.zeros(shard * world)
    flat[:total] = torch.cat([p.detach().reshape(-1) for p in params])
    mine = torch.nn.Parameter(flat[rank * shard:(rank + 1) * shard].clone())
    opt = torch.optim.Adam([mine], lr=lr)

    def step():
        grads = torch.zeros(shard * world)
        grads[:total] = torch.cat([p.grad.reshape(-1) for p in params])
        out = torch.empty(shard)
        dist.reduce_scatter_single(out, grads)
        mine.grad = out / world
        opt.step()
        whole = flat.clone()
        whole[rank * shard:(rank + 1) * shard] = mine.detach()
        offset = 0
        with torch.no_grad():
            for p in params:
                p.copy_(whole[offset:offset + p.numel()].view_as(p))
                offset += p.numel()

    return step, opt


def zero1_full_state(model, lr):
    """Right training with all_reduce and Adam over every parameter: no sharding at all."""
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def step():
        ref.allreduce_gradients(model)
        opt.step()

    return step, opt


def zero1_halves_with_full_state(model, lr):
    """The right collectives (the gradients' two halves), but Adam over the whole model on every rank."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    shard = math.ceil(total / world)
    opt = torch.optim.Adam(params, lr=lr)

    def step():
        grads = torch.zeros(shard * world)
        grads[:total] = torch.cat([p.grad.reshape(-1) for p in params])
        mine = torch.empty(shard)
        dist.reduce_scatter_single(mine, grads)
        whole = torch.empty(shard * world)
        dist.all_gather_single(whole, mine / world)
        offset = 0
        for p in params:
            p.grad.copy_(whole[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
        opt.step()

    return step, opt


# --- the reference passes ------------------------------------------------------------------------------------


def test_reference_passes_every_check():
    assert checks.check_allreduce_gradients(ref.allreduce_gradients).ok
    over = checks.check_overlapped_ddp(ref.overlapped_ddp)
    assert over.ok, over.problem
    n_params = len(list(checks.lab_model().parameters()))
    # every all-reduce but the first layer's two (ready only once the backward has reached it) starts before
    # the backward reaches the first layer
    assert over.details["calls"] == n_params and over.details["during_backward"] == n_params - 2, over.details
    buckets = checks.check_bucketed_ddp(ref.bucketed_ddp)
    assert buckets.ok, buckets.problem
    nbytes = checks.param_nbytes(checks.lab_model())
    for _cap, want, sizes in buckets.details["buckets"]:
        assert sizes == [sum(nbytes[i] for i in b) for b in want]
    assert checks.check_accumulate_gradients(ref.accumulate_gradients).ok
    zero = checks.check_zero1(ref.zero1)
    assert zero.ok, zero.problem
    assert zero.details["state_nbytes"] == [zero.details["formula_nbytes"]] * 3


def test_the_bucket_rule_is_torchs_and_commlabs():
    """The check's rule (torch's own function) against commlab.overlap's assignment and the reference's."""
    from commlab import overlap

    nbytes = checks.param_nbytes(checks.lab_model())
    for cap in (*checks.BUCKET_CAPS, 3000, 17000):
        want = checks.expected_buckets(nbytes, cap)
        assert want == ref.bucket_indices(nbytes, cap)
        cfg = overlap.DDPConfig(layers=[overlap.Layer(n, 0.0) for n in nbytes], n_ranks=2, alpha_s=1e-5,
                                bw_GBps=1.0, bucket_cap_mb=cap / 2**20)
        assert [b.nbytes for b in overlap.assign_buckets(cfg)] == [sum(nbytes[i] for i in b) for b in want]


def test_zero1_formula():
    assert checks.zero1_state_formula_bytes(11017, 3) == 8 * 3673          # 3 x 3673 = 11019: two elements of padding
    assert checks.zero1_state_formula_bytes(10, 4) == 8 * 3
    n_params = sum(p.numel() for p in checks.lab_model().parameters())
    assert all(n_params % n for n in (2, 3, 4)), n_params                   # the lab's shards always need padding


# --- wrong versions, named --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, words", [
    (sum_without_average, "3 times DDP's"),
    (divide_by_two, "divided by 2, on 3 ranks"),
    (never_communicates, "this rank's own, never all-reduced"),
])
def test_naive_mistakes_are_named(fn, words):
    outcome = checks.check_allreduce_gradients(fn)
    assert not outcome.ok and words in outcome.problem and "'0.weight'" in outcome.problem, outcome.problem


def test_a_hang_names_the_rank_and_the_call():
    outcome = checks.check_allreduce_gradients(hangs_on_rank_0, timeout_s=5)
    assert not outcome.ok and "deadlock" in outcome.problem and "rank 1 in dist.all_reduce" in outcome.problem, \
        outcome.problem
    assert "rank 0 in waiting_for_the_other_ranks" in outcome.problem, outcome.problem    # its code had returned


@pytest.mark.parametrize("fn, words", [
    (blocking_hooks, "without async_op=True"),
    (never_waits, "never waited"),
    (after_backward, "started after loss.backward() returned"),
])
def test_overlap_mistakes_are_named(fn, words):
    outcome = checks.check_overlapped_ddp(fn)
    assert not outcome.ok and words in outcome.problem, outcome.problem


def test_never_waited_names_the_parameter():
    assert "'0.weight'" in checks.check_overlapped_ddp(never_waits).problem


@pytest.mark.parametrize("fn, words", [
    (forward_order_buckets, "wrong order"),
    (strict_buckets, "at least the cap (>=)"),
])
def test_bucket_mistakes_are_named(fn, words):
    outcome = checks.check_bucketed_ddp(fn)
    assert not outcome.ok and words in outcome.problem, outcome.problem


@pytest.mark.parametrize("fn, words", [
    (sync_every_micro_batch, "before the last of 4 micro-batches"),
    (loss_not_divided, "4 times one large batch's"),
])
def test_accumulation_mistakes_are_named(fn, words):
    outcome = checks.check_accumulate_gradients(fn)
    assert not outcome.ok and words in outcome.problem, outcome.problem


@pytest.mark.parametrize("fn, words", [
    (zero1_without_all_gather, "all-gather the updated shards"),
    (zero1_full_state, "8 x all_reduce; ZeRO-1 reduce-scatters the gradients"),
    (zero1_halves_with_full_state, "the whole model's: the optimizer sees every parameter"),
])
def test_zero1_mistakes_are_named(fn, words):
    outcome = checks.check_zero1(fn)
    assert not outcome.ok and words in outcome.problem, outcome.problem
