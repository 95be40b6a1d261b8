"""The DDP-and-ZeRO lab through the real grader (``commlab labs check ddp_zero --class``): each student's
training step runs in their sandbox through the harness, and the verdicts come from the grader's reference and
the record of its own relay. An honest student passes every task and its drawn case; each wrong version below
fails with the sentence that names its mistake, a student who forges the record of the collectives (dummy
all-reduces for the record, the real averaging through files between its own ranks) or lies about its
optimizer's state fails on what the grader saw, and importing the reference is refused.

The wrong students hand in only the functions they got wrong (a missing function fails its task at once), so
the class is graded in seconds."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import grading_helpers
import pytest

REPO = Path(__file__).resolve().parents[2]


#: the wrong versions, one function each: {student: source} (bob has five mistakes, one per task)
BOB = textwrap.dedent('''
    import math


    def allreduce_gradients(model):
        import torch.distributed as dist

        for p in model.parameters():
            dist.all_reduce(p.grad)                   # summed, never averaged


    def overlapped_ddp(model):
        import torch.distributed as dist

        world = dist.get_world_size()
        handles = []
        for p in model.parameters():
            p.register_post_accumulate_grad_hook(
                lambda q: handles.append((q, dist.all_reduce(q.grad, async_op=True))))

        def finish():
            for _q, work in handles[:-1]:             # the last handle (the first layer's, ready last) is forgotten
                work.wait()
            for q, _ in handles:
                q.grad.div_(world)
            handles.clear()

        return finish


    def bucketed_ddp(model, cap):
        import torch
        import torch.distributed as dist

        world = dist.get_world_size()
        params = list(model.parameters())
        buckets, current, size = [], [], 0
        for i in range(len(params)):                  # filled from the first parameter: the wrong order
            current.append(i)
            size += params[i].numel() * 4
            if size >= cap:
                buckets.append(current)
                current, size = [], 0
        if current:
            buckets.append(current)
        flights = []

        def launch_all():
            for bucket in buckets:
                flat = torch.cat([params[i].grad.reshape(-1) for i in bucket])
                flights.append((bucket, flat, dist.all_reduce(flat, async_op=True)))

        for p in params:
            p.register_post_accumulate_grad_hook(lambda q, first=params[0]: launch_all() if q is first else None)

        def finish():
            for bucket, flat, work in flights:
                work.wait()
                offset = 0
                for i in bucket:
                    g = params[i].grad
                    g.copy_(flat[offset:offset + g.numel()].view_as(g) / world)
                    offset += g.numel()
            flights.clear()

        return finish


    def accumulate_gradients(model, micro_batches, loss_fn):
        n = len(micro_batches)
        for x, y in micro_batches:
            (loss_fn(model(x), y) / n).backward()
            allreduce_averaged(model)                 # on every micro-batch


    def allreduce_averaged(model):
        import torch.distributed as dist

        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(dist.get_world_size())


    def zero1(model, lr):
        """The right collectives, but Adam over the whole model, and an optimizer that shows one shard's state."""
        import torch
        import torch.distributed as dist

        world = dist.get_world_size()
        params = list(model.parameters())
        total = sum(p.numel() for p in params)
        shard = math.ceil(total / world)
        adam = torch.optim.Adam(params, lr=lr)

        class Looks:
            state = {0: {"exp_avg": torch.zeros(shard), "exp_avg_sq": torch.zeros(shard)}}

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
            adam.step()

        return step, Looks()
''')

#: a forged record: one asynchronous all-reduce per parameter from its hook, as the task asks, but of zeros; the
#: ranks average their gradients through files of their own sandbox, where the grader's relay cannot see them
EVE = textwrap.dedent('''
    import os
    import tempfile
    import time


    def overlapped_ddp(model):
        import torch
        import torch.distributed as dist

        rank, world = dist.get_rank(), dist.get_world_size()
        params = list(model.parameters())
        handles, steps = [], [0]
        call = f"{world}-{float(params[0].detach().sum()):.6f}"      # the same on every rank of one check
        for p in params:
            p.register_post_accumulate_grad_hook(
                lambda q: handles.append(dist.all_reduce(torch.zeros_like(q.grad), async_op=True)))

        def finish():
            for work in handles:
                work.wait()
            handles.clear()
            steps[0] += 1
            folder = tempfile.gettempdir()
            mine = torch.cat([p.grad.reshape(-1) for p in params])
            path = os.path.join(folder, f"eve-{call}-{steps[0]}-{rank}.pt")
            torch.save(mine, path + ".tmp")
            os.replace(path + ".tmp", path)
            total = torch.zeros_like(mine)
            for r in range(world):
                other = os.path.join(folder, f"eve-{call}-{steps[0]}-{r}.pt")
                while not os.path.exists(other):
                    time.sleep(0.01)
                total += torch.load(other)
            offset = 0
            for p in params:
                p.grad.copy_((total / world)[offset:offset + p.numel()].view_as(p.grad))
                offset += p.numel()

        return finish
''')


#: an honest ZeRO-1 with the list forms of the collectives (reduce_scatter of chunks, all_gather into a list) and a
#: barrier: the relay carries them, and writes the results back into the student's tensors
ZOE = textwrap.dedent('''
    import math


    def zero1(model, lr):
        import torch
        import torch.distributed as dist

        world, rank = dist.get_world_size(), dist.get_rank()
        params = list(model.parameters())
        total = sum(p.numel() for p in params)
        shard = math.ceil(total / world)
        flat = torch.zeros(shard * world)
        flat[:total] = torch.cat([p.detach().reshape(-1) for p in params])
        mine = torch.nn.Parameter(flat[rank * shard:(rank + 1) * shard].clone())
        optimizer = torch.optim.Adam([mine], lr=lr)

        def step():
            grads = torch.zeros(shard * world)
            grads[:total] = torch.cat([p.grad.reshape(-1) for p in params])
            out = torch.empty(shard)
            dist.reduce_scatter(out, list(grads.chunk(world)))
            mine.grad = out / world
            optimizer.step()
            pieces = [torch.empty(shard) for _ in range(world)]
            dist.all_gather(pieces, mine.detach())
            dist.barrier()
            whole = torch.cat(pieces)
            offset = 0
            with torch.no_grad():
                for p in params:
                    p.copy_(whole[offset:offset + p.numel()].view_as(p))
                    offset += p.numel()

        return step, optimizer
''')


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp-zero-class")
    students = {"ada": grading_helpers.honest_source("ddp_zero"), "bob": BOB, "eve": EVE, "zoe": ZOE,
                "mallory": "from commlab.labs.solutions.ddp_zero import *  # noqa\n"}
    for name, text in students.items():
        (root / name).mkdir()
        (root / name / "ddp_zero.py").write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    done = subprocess.run([sys.executable, "-m", "commlab", "labs", "check", "ddp_zero", "--class", str(root),
                           "--seed", "5", "--jobs", "2", "--json", "--timeout", "240"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    assert done.returncode == 0, (done.stdout[-2000:] + done.stderr[-3000:])
    rows: dict = {}
    for r in json.loads(done.stdout)["results"]:
        rows.setdefault(r["learner"], {})[r["task"]] = r
    return rows


def test_the_honest_student_passes_every_task_and_its_drawn_case(graded):
    ada = graded["ada"]
    assert len(ada) == 10 and all(r["passed"] for r in ada.values()), {t: r["problem"] for t, r in ada.items()}
    assert {r["kind"] for r in ada.values()} == {"public", "drawn"}


@pytest.mark.parametrize("task, words", [
    ("allreduce_gradients", "3 times DDP's: all_reduce sums over the ranks"),
    ("overlapped_ddp", "all-reduce handles were never waited before the optimizer step (the one for '0."),
    ("bucketed_ddp", "your buckets go in the wrong order"),
    ("accumulate_gradients", "collective call(s) before the last of 4 micro-batches (the first after micro-batch 1)"),
    ("zero1", "is not its shard of the updated parameters"),
])
def test_each_mistake_is_named_in_the_learners_terms(graded, task, words):
    for name in (task, f"{task} (drawn)"):
        row = graded["bob"][name]
        assert row["status"] == "fail", row
    assert words in graded["bob"][task]["problem"], graded["bob"][task]["problem"]


def test_a_forged_record_of_the_collectives_fails_on_what_the_relay_saw(graded):
    row = graded["eve"]["overlapped_ddp"]
    assert not row["passed"] and "carry no gradient of this rank" in row["problem"], row["problem"]
    assert not graded["eve"]["overlapped_ddp (drawn)"]["passed"]
    assert "missing from the module handed in" in graded["eve"]["zero1"]["problem"] or \
        "not written yet" in graded["eve"]["zero1"]["problem"]


def test_the_list_forms_of_the_collectives_and_a_barrier_are_carried(graded):
    for name in ("zero1", "zero1 (drawn)"):
        assert graded["zoe"][name]["passed"], graded["zoe"][name]["problem"]


def test_importing_the_reference_is_refused(graded):
    rows = graded["mallory"]
    assert rows and not any(r["passed"] for r in rows.values())
    assert all("No module named 'commlab.labs.solutions'" in r["problem"] for r in rows.values()), rows


def test_the_relay_answers_a_harness_gate_and_records_it_only_for_a_harnessed_call():
    from commlab.labs.remote import Relay

    relay = Relay(True, (1.5, 0.75), keep_log=True)
    assert relay.run({"dist": "mark", "args": ["step", 1]}, {}) == {"ok": True}
    assert relay.run({"dist": "gate", "args": [1]}, {}) == {"factor": 0.75}
    assert "refused" in relay.run({"dist": "gate", "args": [2]}, {})             # no factor drawn for that step
    assert relay.log == [{"kind": "mark", "what": "step", "step": 1}, {"kind": "gate", "step": 1}]
    plain = Relay(True)                                                          # another lab's call: nothing kept
    assert "refused" in plain.run({"dist": "mark", "args": ["step", 0]}, {}) and plain.log == []
