"""The find-the-hang lab's faults (labs/find_the_hang.ipynb, labs/scripts/find_the_hang.py): deterministic
mistakes a learner meets on a cluster, run on real gloo ranks, and what each rank leaves behind.

A healthy training step here is four collectives on a process group of its own (:data:`STEP`). A
:class:`Fault` changes what one rank does: it skips a call, swaps two calls, passes a tensor of another size,
dies before a call, or names a network interface that does not exist (``GLOO_SOCKET_IFNAME``). The fault's
group gets a short ``timeout`` (``dist.new_group(..., timeout=...)``), so a rank that waits for a partner
gets torch's own timeout error instead of waiting forever; without it, :func:`run_fault` relies on the
launcher's timeout, which stops the ranks and says where each one was waiting.

Each rank that survives writes a *record*: the error it got, and the collectives it entered on the fault's
group as PyTorch's Flight Recorder has them (``torch._C._distributed_c10d._dump_fr_trace()``, a private
function of torch 2.13, which records gloo's collectives; dicts with ``collective_seq_id``,
``profiling_name``, ``input_sizes``, ...). A rank that died leaves no record. Where the installed torch's
recorder records nothing for gloo, the record comes from the rank's own log of the calls it entered,
in the same form, and :attr:`FaultRun.source` says so.
"""
from __future__ import annotations

import json
import os
import socket
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

GROUP_TIMEOUT_S = 2.0
N_RANKS = 4
DIED_EXIT_CODE = 3
KINDS = ("skip", "order", "size", "dies", "ifname")
#: What a Flight Recorder entry keeps for this lab (torch has more: stack frames, ids, times).
ENTRY_KEYS = ("collective_seq_id", "profiling_name", "input_sizes", "input_dtypes", "state", "retired",
              "time_discovered_started_ns", "time_discovered_completed_ns", "timeout_ms")


@dataclass(frozen=True)
class Op:
    """One collective of a step: its name and the elements of its float32 tensor."""

    name: str
    numel: int = 0


#: A healthy step: gradients, the loss, the weights from rank 0, a barrier.
STEP = (Op("all_reduce", 4), Op("all_reduce", 1), Op("broadcast", 4), Op("barrier"))


def bad_interface() -> str:
    """A network interface name this machine does not have (what a node sees when a job script names another
    node's interface in GLOO_SOCKET_IFNAME)."""
    present = {name for _, name in socket.if_nameindex()}
    return next(name for name in ("ib0", "ib9", "eth9", "nosuchif0") if name not in present)


@dataclass(frozen=True)
class Fault:
    """One rank (``rank``) does ``kind`` at call ``call`` (1-based, as the Flight Recorder counts)."""

    kind: str
    rank: int
    call: int = 0
    n_ranks: int = N_RANKS
    step: tuple[Op, ...] = STEP

    def __post_init__(self) -> None:
        from commlab.errors import CommlabError, check_choice, check_n_ranks

        check_choice("fault", self.kind, KINDS)
        check_n_ranks(self.n_ranks, 2)
        if not 0 <= self.rank < self.n_ranks:
            raise CommlabError(f"the faulty rank must be from 0 to {self.n_ranks - 1}, got {self.rank}")
        last = len(self.step) - (1 if self.kind == "order" else 0)
        if self.kind != "ifname" and not 1 <= self.call <= last:
            raise CommlabError(f"a {self.kind} fault needs a call from 1 to {last}, got {self.call}")

    def calls_of(self, rank: int) -> list[Op]:
        """The collectives ``rank`` makes (for 'dies': those before it exits)."""
        calls = list(self.step)
        if rank != self.rank:
            return calls
        k = self.call - 1
        if self.kind == "skip":
            del calls[k]
        elif self.kind == "order":
            calls[k], calls[k + 1] = calls[k + 1], calls[k]
        elif self.kind == "size":
            calls[k] = replace(calls[k], numel=2 * calls[k].numel or 1)
        elif self.kind == "dies":
            del calls[k:]
        return calls

    @property
    def truth(self) -> dict | None:
        """What the records should point to: {"rank", "call"}, or None when no collective went wrong."""
        return None if self.kind == "ifname" else {"rank": self.rank, "call": self.call}

    def describe(self) -> str:
        op = self.step[self.call - 1] if self.call else None
        what = {"skip": f"skips call {self.call} ({op and op.name})",
                "order": f"swaps calls {self.call} and {self.call + 1}",
                "size": f"passes {2 * (op.numel or 1) if op else 0} elements instead of {op and op.numel} "
                        f"at call {self.call}",
                "dies": f"dies before call {self.call}",
                "ifname": "sets GLOO_SOCKET_IFNAME to an interface this machine does not have"}[self.kind]
        return f"{self.n_ranks} ranks: rank {self.rank} {what}"


#: The faults the notebook runs.
FAULTS = {"skip": Fault("skip", 2, 2), "order": Fault("order", 1, 2), "size": Fault("size", 3, 2),
          "dies": Fault("dies", 2, 3), "ifname": Fault("ifname", 2)}


def _do(op: Op, group, n_ranks: int) -> None:
    import torch
    import torch.distributed as dist

    if op.name == "barrier":
        dist.barrier(group=group)
    elif op.name == "broadcast":
        dist.broadcast(torch.ones(op.numel), 0, group=group)
    elif op.name == "all_gather":
        dist.all_gather_into_tensor(torch.empty(n_ranks * op.numel), torch.ones(op.numel), group=group)
    else:
        dist.all_reduce(torch.ones(op.numel), group=group)


def flight_recorder_entries(group_name: str | None) -> list[dict] | None:
    """This process's Flight Recorder entries on the group ``group_name`` (None: this torch has no dump)."""
    import pickle

    try:
        # private, and absent from torch's type stubs; a torch without it raises ImportError, handled below
        from torch._C._distributed_c10d import _dump_fr_trace  # type: ignore[attr-defined]
    except ImportError:
        return None
    try:
        dump = _dump_fr_trace(includeStackTraces=False)   # symbolising C++ stacks takes seconds
    except TypeError:                                      # a torch without the keyword
        dump = _dump_fr_trace()
    entries = pickle.loads(dump).get("entries", [])
    mine = [e for e in entries if group_name is not None and str(e.get("process_group", ("",))[0]) == group_name]
    return [json.loads(json.dumps({k: e.get(k) for k in ENTRY_KEYS})) for e in mine]


def _logged(ops: list[Op]) -> list[dict]:
    """The calls a rank entered, as Flight Recorder-like entries (for a torch that records nothing for gloo)."""
    return [{"collective_seq_id": k, "profiling_name": f"gloo:{op.name}",
             "input_sizes": [[op.numel]] if op.numel else [], "input_dtypes": ["Float"] if op.numel else [],
             "state": None, "retired": None} for k, op in enumerate(ops, 1)]


def step_here(rank: int, n_ranks: int, fault: Fault, group_timeout_s, debug: str | None = None) -> dict:
    """This rank's part of ``fault`` on a new group: {"rank", "error", "entries", "log"} (for 'dies', the
    faulty rank exits instead of returning). The group's ``timeout`` is ``group_timeout_s`` (None: torch's)."""
    from datetime import timedelta

    import torch.distributed as dist

    if debug:
        os.environ["TORCH_DISTRIBUTED_DEBUG"] = debug
        dist.set_debug_level_from_env()      # torch read it at import, in the notebook; read it again here
    dist.barrier()                            # start together, on the group the ranks already share
    entered, error, group_name = [], "", None
    saved_ifname = os.environ.get("GLOO_SOCKET_IFNAME")
    try:
        if fault.kind == "ifname" and rank == fault.rank:
            os.environ["GLOO_SOCKET_IFNAME"] = bad_interface()
        timeout = None if group_timeout_s is None else timedelta(seconds=group_timeout_s)
        group = dist.new_group(list(range(n_ranks)), timeout=timeout)
        group_name = group.group_name
        for op in fault.calls_of(rank):
            entered.append(op)
            _do(op, group, n_ranks)
        if fault.kind == "dies" and rank == fault.rank:
            import time

            time.sleep(0.2)                   # a crash between two calls: the last one has finished everywhere
            os._exit(DIED_EXIT_CODE)          # no record, no goodbye to the peers
    except Exception as exc:  # noqa: BLE001 - the error torch gives is what the learner reads
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if saved_ifname is None:
            os.environ.pop("GLOO_SOCKET_IFNAME", None)
        else:
            os.environ["GLOO_SOCKET_IFNAME"] = saved_ifname
    return {"rank": rank, "error": error, "entries": flight_recorder_entries(group_name), "log": _logged(entered)}


def step_in_rank(rank: int, n_ranks: int, fault: Fault, folder: str, group_timeout_s, debug: str | None):
    """Inside a rank started by :func:`run_fault`: :func:`step_here`, its record written to ``folder``."""
    record = step_here(rank, n_ranks, fault, group_timeout_s, debug)
    Path(folder, f"rank{rank}.json").write_text(json.dumps(record))
    return record["error"]


@dataclass(frozen=True)
class FaultRun:
    """What one run of a fault left: per-rank records (None: no record), errors, the launcher's words."""

    fault: Fault
    records: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    launch: str = ""
    source: str = "the Flight Recorder"


def from_records(fault: Fault, found: dict[int, dict], launch: str = "") -> FaultRun:
    """A FaultRun from the per-rank dicts of :func:`step_here` (a rank missing from ``found`` left none)."""
    recorded = any(rec["entries"] for rec in found.values())
    records = dict.fromkeys(range(fault.n_ranks))
    for r, rec in found.items():
        records[r] = rec["entries"] if recorded else rec["log"]
    source = ("the Flight Recorder" if recorded or not any(rec["log"] for rec in found.values())
              else "each rank's own log of its calls (this torch's Flight Recorder recorded nothing for gloo)")
    return FaultRun(fault, records, {r: rec["error"] for r, rec in found.items()}, launch, source)


def run_fault(fault: Fault | str, *, group_timeout_s: float | None = GROUP_TIMEOUT_S,
              launch_timeout_s: float | None = None, debug: str | None = None) -> FaultRun:
    """Run ``fault`` (or the name of one of :data:`FAULTS`) on real gloo ranks; see the module docstring.

    ``group_timeout_s``: the fault group's own ``timeout`` (None: torch's default, so only the launcher's
    timeout stops a hang); ``launch_timeout_s``: the launcher's (default: the group's plus 12 s);
    ``debug``: TORCH_DISTRIBUTED_DEBUG for the ranks ("DETAIL" checks every collective's arguments).
    """
    from commlab.labs.checking import describe_failure
    from commlab.launch import LaunchConfig, RankError, run_with

    fault = FAULTS[fault] if isinstance(fault, str) else fault
    limit_s = launch_timeout_s or (group_timeout_s or GROUP_TIMEOUT_S) + 12.0
    grace_s = (group_timeout_s or 1.0) + 4.0          # survivors of a dead rank get to time out on their own
    config = LaunchConfig(fault.n_ranks, "gloo", limit_s, verbose=False, grace_s=grace_s)
    with tempfile.TemporaryDirectory(prefix="commlab-hang-") as folder:
        launch = ""
        try:
            run_with(config, step_in_rank, (fault, folder, group_timeout_s, debug))
        except RankError as err:
            launch = describe_failure(err, f"the step ({fault.describe()})", limit_s)
        found = {r: json.loads(p.read_text()) for r in range(fault.n_ranks)
                 if (p := Path(folder, f"rank{r}.json")).exists()}
    return from_records(fault, found, launch)


def shorten(error: str, width: int = 160) -> str:
    """An error without gloo's source path prefix and DETAIL's tensor options, cut to ``width`` characters.

    >>> shorten("RuntimeError: [/w/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed")
    'RuntimeError: [gloo/transport/tcp/pair.cc:553] Connection closed'
    """
    import re

    text = re.sub(r"\[(?:enforce fail at )?/\S+/third_party/gloo/(gloo/\S+)\]", r"[\1]", error)
    text = re.sub(r", TensorDeviceTypes=TensorOptions\(.*?memory_format=\(nullopt\)\)", "", text)
    return text if len(text) <= width else text[:width - 3] + "..."


def record_text(entries) -> str:
    """A record in one line: '#1 gloo:all_reduce [[4]], #2 ...', or what is missing."""
    if entries is None:
        return "no record"
    if not entries:
        return "no collective recorded"
    return ", ".join(f"#{e['collective_seq_id']} {e['profiling_name']} {e['input_sizes']}" for e in entries)


def run_lines(run: FaultRun) -> list[str]:
    """What a run left, one line per rank: its error, then its record."""
    lines = [f"{run.fault.describe()}" + (f"; the launcher: {run.launch}" if run.launch else "")]
    for rank in range(run.fault.n_ranks):
        error = run.errors.get(rank)
        if error is None:
            lines.append(f"  rank {rank}: left no record (it exited, or was stopped, before writing one)")
            continue
        lines.append(f"  rank {rank}: {shorten(error) if error else 'finished its step'}")
        lines.append(f"          recorded: {record_text(run.records.get(rank))}")
    return lines
