"""The bucket rule of chapter 7 (torch's reducer: parameters in reverse order, a bucket closed once it holds at
least the cap) and the learner's likely slips, named: buckets filled from the first parameter, or closed before
the cap would be passed."""
from __future__ import annotations


def expected_buckets(nbytes: list[int], cap_bytes: int) -> list[list[int]]:
    """The rule as torch's reducer applies it: torch's own ``dist._compute_bucket_assignment_by_size`` on the
    parameters in reverse order, every bucket's limit ``cap``."""
    import torch
    import torch.distributed as dist

    tensors = [torch.empty(n // 4) for n in nbytes]
    order = list(reversed(range(len(nbytes))))
    buckets, _ = dist._compute_bucket_assignment_by_size([tensors[i] for i in order], [cap_bytes, cap_bytes],
                                                        [False] * len(nbytes), order)
    return [list(b) for b in buckets]


def expected_forward_buckets(nbytes: list[int], cap: int) -> list[list[int]]:
    """The same rule in registration order (a learner's likely slip)."""
    buckets, current, size = [], [], 0
    for i in range(len(nbytes)):
        current.append(i)
        size += nbytes[i]
        if size >= cap:
            buckets.append(current)
            current, size = [], 0
    return buckets + ([current] if current else [])


def strict_buckets(nbytes: list[int], cap: int) -> list[list[int]]:
    """Buckets closed before a parameter would take them past the cap (the other likely slip)."""
    buckets: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i in reversed(range(len(nbytes))):
        if current and size + nbytes[i] > cap:
            buckets.append(current)
            current, size = [], 0
        current.append(i)
        size += nbytes[i]
    return buckets + ([current] if current else [])


def bucket_words(got: list[int], want: list[list[int]], nbytes: list[int], cap: int) -> str:
    """What is wrong with the sizes of one step's all-reduces, in order ('' when they are the rule's)."""
    want_sizes = [sum(nbytes[i] for i in b) for b in want]
    if got == want_sizes:
        return ""
    forward = [sum(nbytes[i] for i in b) for b in expected_forward_buckets(nbytes, cap)]
    if got and (got == forward or (sorted(got) == sorted(want_sizes) and got != want_sizes)):
        return (f"your buckets go in the wrong order: the first all-reduce carries {got[0]} bytes, the rule's first "
                f"bucket {want_sizes[0]} (the last layers' gradients, ready first): fill buckets in reverse order of "
                "model.parameters()")
    strict = [sum(nbytes[i] for i in b) for b in strict_buckets(nbytes, cap)]
    if got == strict:
        return ("you close a bucket before a parameter would take it past the cap; torch adds the parameter and "
                "closes the bucket once it holds at least the cap (>=), so a bucket may overshoot it")
    if len(got) != len(want_sizes):
        return (f"{len(got)} all-reduces per step at a cap of {cap} bytes; the rule gives {len(want_sizes)} buckets "
                f"of {want_sizes} bytes")
    k = next(i for i, (g, w) in enumerate(zip(got, want_sizes)) if g != w)
    return f"bucket {k} holds {got[k]} bytes; the rule gives {want_sizes[k]} (parameters {want[k]})"
