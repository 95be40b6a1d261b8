"""The measured timeline: one profiled step (torch.profiler) of the learner's naive and overlapped DDP on a
wider model, the backward's autograd functions and gloo's collectives as a :class:`commlab.overlap.Timeline`
(the notebook's plot; gloo on a CPU shares the cores with the backward, so it shows when each collective
started, not a saving in time)."""
from __future__ import annotations

from commlab.labs.harness.ddp_zero import loss_fn


def timeline_in_group(rank: int, n_ranks: int, naive_fn, overlap_fn, widths=(256, 1024, 1024, 1024, 1024, 10)):
    """Inside a rank: one profiled step of naive and of overlapped DDP on a wider model (torch.profiler):
    (kind, name, start_us, end_us) of the backward's autograd functions and gloo's collectives, and the moment
    backward returned."""
    import os

    import torch
    import torch.nn as nn
    from torch.profiler import ProfilerActivity, profile

    def model():
        torch.manual_seed(0)
        layers: list = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
            layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(widths) - 2 else [])
        return nn.Sequential(*layers)

    x = torch.randn(64, widths[0], generator=torch.Generator().manual_seed(rank))
    y = torch.randint(0, widths[-1], (64,), generator=torch.Generator().manual_seed(rank))
    found: dict = {"backend": "gloo"}
    for label in ("naive", "overlapped"):
        m = model()
        finish = overlap_fn(m) if label == "overlapped" else (lambda m=m: naive_fn(m))
        for _ in range(2):                                  # warm-up
            loss_fn(m(x), y).backward()
            finish()
            m.zero_grad(set_to_none=False)
        loss = loss_fn(m(x), y)
        saved, quiet = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 2)                                   # the profiler's C++ side prints status lines on stderr
        try:
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                with torch.profiler.record_function("backward"):
                    loss.backward()
                finish()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(quiet)
        events = []
        for e in prof.events():
            if e.name.startswith("autograd::engine::evaluate_function: "):
                events.append(("compute", e.name.split(": ", 1)[1], e.time_range.start, e.time_range.end))
            elif e.name.startswith("gloo:"):
                events.append(("comm", e.name, e.time_range.start, e.time_range.end))
            elif e.name == "backward":
                events.append(("backward", e.name, e.time_range.start, e.time_range.end))
        found[label] = events
    return found


def as_timeline(events, title: str):
    """A commlab.overlap.Timeline of profiled events, in seconds from the first compute event."""
    from commlab.overlap import CommInterval, ComputeInterval, Timeline

    compute = sorted((s, e, n) for kind, n, s, e in events if kind == "compute")
    comm = sorted((s, e, n) for kind, n, s, e in events if kind == "comm")
    t0 = compute[0][0]
    return Timeline(tuple(ComputeInterval(i, (s - t0) / 1e6, (e - t0) / 1e6, n.replace("Backward0", ""))
                          for i, (s, e, n) in enumerate(compute)),
                    tuple(CommInterval(i, max(s - t0, 0) / 1e6, (e - t0) / 1e6, 0, ())
                          for i, (s, e, _) in enumerate(comm)), title)


def backward_end_s(events) -> float:
    """When the profiled ``loss.backward()`` returned, in the seconds of :func:`as_timeline`."""
    t0 = min(s for kind, _, s, _ in events if kind == "compute")
    return max(e for kind, _, _, e in events if kind == "backward") / 1e6 - t0 / 1e6
