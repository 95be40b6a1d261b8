"""Naive, overlapped and bucketed DDP: the learner's training beside torch's DistributedDataParallel (the
gradients of the first step parameter by parameter, then the parameters after every SGD step), and the
learner's collectives read from the record (:mod:`.traffic`): how many, of what sizes in which order, whether
asynchronous, launched before the backward reached the first layer, waited before the optimizer step, and
carrying this rank's own gradients (the grader computes them itself)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from commlab.labs.checks.ddp_zero.buckets import bucket_words, expected_buckets
from commlab.labs.checks.ddp_zero.case import LR, Case, gate_factors, param_nbytes
from commlab.labs.checks.ddp_zero.reference import ddp_reference
from commlab.labs.checks.ddp_zero.traffic import input_of, nbytes_of, run_learner, steps
from commlab.labs.checks.ddp_zero.words import close, first_grad_problem, first_param_problem, same_values


@dataclass
class Reduce:
    """One all-reduce of a step, as the record shows it."""

    nbytes: int
    async_op: bool
    early: bool            # it arrived before the backward reached the first layer
    waited: bool           # not asynchronous, or its handle waited before the optimizer step
    sent: Any              # the tensor it carried (torch.Tensor), or None


def _reduces(step) -> list[Reduce]:
    out = []
    for pos, entry in step.calls:
        if entry["name"] == "all_reduce":
            out.append(Reduce(nbytes_of(entry), bool(entry["async"]),
                              step.gate_at is not None and pos < step.gate_at,
                              not entry["async"] or entry["handle"] in step.waited, input_of(entry)))
    return out


def _match_params(reduces: list[Reduce], local: dict) -> list[str | None]:
    """The parameter whose local gradient each all-reduce carried (None: none of them)."""
    free, found = dict(local), []
    for r in reduces:
        name = next((n for n, g in free.items()
                     if r.sent is not None and r.sent.numel() == g.numel() and close(r.sent.reshape(g.shape), g)),
                    None)
        if name is not None:
            free.pop(name)
        found.append(name)
    return found


def _unwaited(rank: int, records, names_of) -> str:
    for s, step in enumerate(records):
        reduces = _reduces(step)
        left = [i for i, r in enumerate(reduces) if not r.waited]
        if left:
            param = names_of(s, reduces)[left[0]]
            which = f" (the one for {param})" if param else ""
            return (f"rank {rank}, step {s + 1}: {len(left)} of {len(reduces)} all-reduce handles were never waited "
                    f"before the optimizer step{which}: call .wait() on every handle in finish()")
    return ""


def _overlap_problem(rank: int, records, expected: int, unit: str, late_words) -> str:
    """The all-reduces of step 1: asynchronous, launched during backward where they can be, the right number."""
    step = records[0]
    reduces = _reduces(step)
    if not reduces:
        return (f"rank {rank}: no dist.all_reduce call in a step (other calls: "
                f"{[e['name'] for _, e in step.calls]})")
    if step.gate_at is None:
        return (f"rank {rank}: the backward of step 1 never reached the model's first layer (the grader's hook on "
                "it was not run): train the model you are given, with loss.backward()")
    blocking = [r for r in reduces if not r.async_op]
    if len(reduces) > 1 and not any(r.early for r in reduces):
        return (f"rank {rank}: all {len(reduces)} all-reduces started after loss.backward() returned (none before "
                "the backward reached the first layer): launch each from a hook (p.register_post_accumulate_grad_hook) "
                "so it overlaps the rest of backward")
    if blocking:
        return (f"rank {rank}: {len(blocking)} all-reduce(s) without async_op=True: each blocks the backward until "
                "it is done, so nothing overlaps; pass async_op=True and keep the handle")
    if len(reduces) != expected:
        return (f"rank {rank}: {len(reduces)} all-reduces per step; expected {expected} ({unit}); a hook registered "
                "twice, or a gradient sent twice?")
    return late_words(reduces)


def _common(rank: int, result: dict, ref: dict, n_ranks: int) -> str:
    problem = first_grad_problem(result.get("grads") or {}, ref["grads"][0], ref["local"][0], n_ranks)
    if not problem:
        problem = first_param_problem(result.get("params") or [], ref["params"])
    return f"rank {rank}: {problem}" if problem else ""


def _run(rank: int, kind: str, fn, case: Case, cap: int = 0) -> tuple[dict, dict, list]:
    factors = gate_factors(case.steps)
    ref = ddp_reference(case, rank, factors, LR)
    batches = [(x.clone(), y.clone()) for x, y in case.batches(rank)]
    result, log = run_learner(fn, "ddp_zero.ddp", factors, kind, case.spec, batches, lr=LR, cap_bytes=cap)
    if not isinstance(result, dict):
        result = {"problem": f"the training step returned {type(result).__name__}, not its values"}
    return result, ref, steps(log, case.steps)


def naive_in_group(rank: int, n_ranks: int, fn, case: Case) -> dict:
    """Inside a rank: the learner's ``allreduce_gradients`` after every backward, beside DDP; judged here."""
    result, ref, records = _run(rank, "naive", fn, case)
    problem = f"rank {rank}: {result['problem']}" if "problem" in result else _common(rank, result, ref, n_ranks)
    return {"rank": rank, "backend": "gloo", "problem": problem,
            "details": {"calls_per_step": len(records[0].calls)}}


def overlap_in_group(rank: int, n_ranks: int, fn, case: Case) -> dict:
    """Inside a rank: the learner's ``overlapped_ddp`` (one asynchronous all-reduce per parameter from its hook)."""
    result, ref, records = _run(rank, "overlap", fn, case)
    found = {"rank": rank, "backend": "gloo", "problem": "", "details": {}}
    if "problem" in result:
        found["problem"] = f"rank {rank}: {result['problem']}"
        return found
    names = [n for n, _ in case.model().named_parameters()]
    first_layer = set(names[:2])                       # model[0]'s weight and bias: ready after the gate

    def names_of(s, reduces):
        return [repr(n) if n else None for n in _match_params(reduces, ref["local"][s])]

    def late(reduces):
        for r, name in zip(reduces, _match_params(reduces, ref["local"][0])):
            if name is not None and name not in first_layer and not r.early:
                return (f"rank {rank}: the all-reduce of {name!r} started only after the backward had gone past it to "
                        "the first layer: launch it from that parameter's hook, as soon as its gradient is ready")
        return ""

    found["problem"] = (_overlap_problem(rank, records, len(names), "one per parameter", late)
                        or _unwaited(rank, records, names_of) or _common(rank, result, ref, n_ranks))
    if not found["problem"]:
        for s, step in enumerate(records):
            missing = [n for n in _match_params(_reduces(step), ref["local"][s]) if n is None]
            if missing:
                found["problem"] = (f"rank {rank}, step {s + 1}: {len(missing)} all-reduce(s) carry no gradient of "
                                    "this rank (the grader compares what your code sends with the gradients it "
                                    "computes itself): all-reduce each p.grad as it is")
                break
    reduces = _reduces(records[0])
    found["details"] = {"during_backward": sum(r.early for r in reduces), "calls": len(reduces)}
    return found


def buckets_in_group(rank: int, n_ranks: int, fn, case: Case) -> dict:
    """Inside a rank: the learner's ``bucketed_ddp`` at each of the case's caps, on fresh models."""
    found: dict = {"rank": rank, "backend": "gloo", "problem": "", "details": {"buckets": []}}
    nbytes = param_nbytes(case.model())
    names = [n for n, _ in case.model().named_parameters()]
    for cap in case.caps:
        result, ref, records = _run(rank, "buckets", fn, case, cap)
        want = expected_buckets(nbytes, cap)
        problem = f"rank {rank}: {result['problem']}" if "problem" in result else ""
        sizes = [r.nbytes for r in _reduces(records[0])]
        if not problem:
            words = bucket_words(sizes, want, nbytes, cap) if sizes else ""
            problem = f"rank {rank}: {words}" if words else ""

        def names_of(s, reduces, want=want):
            return [f"bucket {k}" for k in range(len(reduces))]

        def late(reduces, want=want):
            for k, (r, bucket) in enumerate(zip(reduces, want)):
                if not ({0, 1} & set(bucket)) and not r.early:
                    return (f"rank {rank}: bucket {k} (parameters {[names[i] for i in bucket]}) was launched only "
                            "after the backward had reached the first layer: launch a bucket's all-reduce from the "
                            "hook of its last gradient")
            return ""

        problem = (problem or _overlap_problem(rank, records, len(want), "one per bucket", late)
                   or _unwaited(rank, records, names_of) or _common(rank, result, ref, n_ranks))
        if not problem:
            problem = _content_problem(rank, records, want, names, ref["local"])
        if problem:
            found["problem"] = f"bucket cap {cap} bytes, {problem}"
            return found
        found["details"]["buckets"].append((cap, want, sizes))
    return found


def _content_problem(rank: int, records, want: list[list[int]], names: list[str], local: list[dict]) -> str:
    import torch

    for s, step in enumerate(records):
        for k, (r, bucket) in enumerate(zip(_reduces(step), want)):
            expect = torch.cat([local[s][names[i]].reshape(-1) for i in bucket])
            if not same_values(r.sent, expect):
                return (f"rank {rank}, step {s + 1}: the all-reduce of bucket {k} does not carry this rank's gradients "
                        f"of {[names[i] for i in bucket]} (the grader compares what your code sends with the "
                        "gradients it computes itself)")
    return ""
