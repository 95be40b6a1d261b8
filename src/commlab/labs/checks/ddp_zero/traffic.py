"""The learner's training step run through the harness (:mod:`commlab.labs.harness.ddp_zero`), and the record of
the collectives it made, read step by step.

Two ways, one record. In the notebook and the script the harness runs here, in this rank, and :class:`Recorder`
wraps ``torch.distributed``'s collectives while it runs. When a class is graded the learner's function is a
:class:`commlab.labs.remote.RemoteFunction`: the harness runs in the learner's sandbox and the record is the
grader's relay's (``Relay.log``), made of what arrived on the grader's side, so the learner's code cannot write
it. Either way the record is a list of entries, in the order they happened:

- ``{"kind": "call", "name", "async", "handle", "inputs"}``: a collective, its tensors as they were sent;
- ``{"kind": "wait", "handle"}``: a handle's ``wait()``;
- ``{"kind": "gate", "step"}``: the backward of that step reached the first layer (it asked the gate's factor);
- ``{"kind": "mark", "what", "step"}``: the harness began a step ("step") or was about to step the optimizer.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from commlab.labs import wire

COLLECTIVES = ("all_reduce", "reduce_scatter_single", "reduce_scatter_tensor", "reduce_scatter", "all_gather_single",
               "all_gather_into_tensor", "all_gather", "broadcast", "reduce", "barrier", "all_to_all_single")
_OUT_IN = ("reduce_scatter_single", "reduce_scatter_tensor", "all_gather_single", "all_gather_into_tensor",
           "all_to_all_single")


class LocalGate:
    """The gate's factors and marks, answered here and written into ``log`` (the notebook's path)."""

    def __init__(self, factors, log: list | None = None):
        self.factors, self.log = tuple(factors), log if log is not None else []

    def factor(self, step: int) -> float:
        self.log.append({"kind": "gate", "step": step})
        return self.factors[step]

    def mark(self, what: str, step: int) -> None:
        self.log.append({"kind": "mark", "what": what, "step": step})


class _Handle:
    """A torch Work whose ``wait()`` is written into the record."""

    def __init__(self, work, handle: int, log: list):
        self._work, self._handle, self._log = work, handle, log

    def wait(self, *args, **kwargs):
        self._log.append({"kind": "wait", "handle": self._handle})
        return self._work.wait(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._work, name)


@dataclass
class Recorder:
    """Wraps torch.distributed's collectives while active, writing every call into ``log``."""

    log: list
    _saved: dict = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=itertools.count)

    def __enter__(self):
        import torch.distributed as dist

        for name in COLLECTIVES:
            original = getattr(dist, name, None)
            if original is not None:
                self._saved[name] = original
                setattr(dist, name, self._wrap(name, original))
        return self

    def __exit__(self, *exc):
        import torch.distributed as dist

        for name, original in self._saved.items():
            setattr(dist, name, original)

    def _wrap(self, name, original):
        def recorded(*args, **kwargs):
            found = wire.tensors_in((args, kwargs))
            handle = next(self._ids) if kwargs.get("async_op") else None
            self.log.append({"kind": "call", "name": name, "async": handle is not None, "handle": handle,
                             "inputs": [t.detach().clone() for t in found]})
            work = original(*args, **kwargs)
            return _Handle(work, handle, self.log) if handle is not None and work is not None else work

        recorded.__name__ = name
        return recorded


def run_learner(fn, harness: str, factors, *args, **kwargs) -> tuple[dict, list]:
    """(what the harness returned, the record) of the harness ``harness`` run on the learner's ``fn`` with
    ``args``, ``kwargs`` and a gate answering ``factors``: here, or in the learner's sandbox when ``fn`` is a
    RemoteFunction."""
    from commlab.labs.harness import bind
    from commlab.labs.harness.ddp_zero import SandboxGate
    from commlab.labs.remote import RemoteFunction

    if isinstance(fn, RemoteFunction):
        call = fn.harnessed(harness, factors)
        result = call(*args, gate=SandboxGate(), **kwargs)
        log = list(call.traffic)
    else:
        log = []
        with Recorder(log):
            result = bind(harness, fn)(*args, gate=LocalGate(factors, log), **kwargs)
    waiting_for_the_other_ranks()
    return result, log


def waiting_for_the_other_ranks(poll_s: float = 0.01) -> None:
    """Wait until every rank's learner code returned, on the group's store rather than on gloo: a rank whose
    code made fewer collectives than its peers then waits here (a deadlock the check names with each rank's
    call) instead of meeting their collective with another one, which gloo ends with an abort."""
    import math
    import time

    import torch.distributed as dist

    store, world = dist.distributed_c10d._get_default_store(), dist.get_world_size()
    target = math.ceil(store.add("commlab-ddp-zero-done", 1) / world) * world
    while store.add("commlab-ddp-zero-done", 0) < target:
        time.sleep(poll_s)
    # Rank 0 hosts the store (commlab.launch.worker): it leaves only once every rank has seen the count
    # reach its target, or a rank still polling would find the server gone (connection reset by peer).
    left = math.ceil(store.add("commlab-ddp-zero-left", 1) / world) * world
    if dist.get_rank() == 0:
        while store.add("commlab-ddp-zero-left", 0) < left:
            time.sleep(poll_s)


# --- reading the record ---------------------------------------------------------------------------------------


def input_of(entry: dict):
    """The tensor a collective call sent (an all-reduce's tensor, a reduce-scatter's whole input), or None."""
    import torch

    inputs = entry.get("inputs") or []
    name = entry["name"]
    if not inputs:
        return None
    if name in _OUT_IN:
        return inputs[1] if len(inputs) > 1 else None
    if name == "reduce_scatter":
        return torch.cat([t.reshape(-1) for t in inputs[1:]]) if len(inputs) > 1 else None
    if name == "all_gather":
        return inputs[-1]
    return inputs[0]


def nbytes_of(entry: dict) -> int:
    t = input_of(entry)
    return 0 if t is None else t.numel() * t.element_size()


@dataclass
class Step:
    """One step of the record: its collectives, where the gate was first asked, which handles were waited."""

    calls: list                # (position, entry) of every collective in the step
    gate_at: int | None        # the position of the gate's first question for this step (None: never asked)
    gates: list                # positions of every question of this step's gate
    waited: set                # handles waited before the optimizer's mark of this step
    stepped_at: int | None     # the position of the optimizer's mark


def steps(log: list, n_steps: int) -> list[Step]:
    """The record cut at the harness's marks into ``n_steps`` steps."""
    starts = {e["step"]: i for i, e in enumerate(log) if e["kind"] == "mark" and e["what"] == "step"}
    found = []
    for s in range(n_steps):
        begin = starts.get(s, len(log))
        end = min([starts[t] for t in starts if t > s] + [len(log)])
        stepped = next((i for i in range(begin, end) if log[i]["kind"] == "mark" and log[i]["what"] == "optimizer"),
                       None)
        gates = [i for i, e in enumerate(log) if e["kind"] == "gate" and e["step"] == s]
        limit = stepped if stepped is not None else end
        found.append(Step(calls=[(i, log[i]) for i in range(begin, end) if log[i]["kind"] == "call"],
                          gate_at=gates[0] if gates else None, gates=gates,
                          waited={log[i]["handle"] for i in range(begin, limit) if log[i]["kind"] == "wait"},
                          stepped_at=stepped))
    return found
