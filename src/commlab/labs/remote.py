"""The grader's side of a sandboxed student: each of the student's functions as a callable the checks use.

A lab's checks (:mod:`commlab.labs.checks`, the notebook's own) run in the grader's process, on
:class:`RemoteFunction` objects instead of the student's functions. Calling one sends the arguments to the
student's sandbox (:mod:`commlab.labs.sandboxed`), which runs the function there and sends back only values
(:mod:`commlab.labs.wire`); the check compares them with the reference here. So a verdict is never computed,
written or reported by the student's process, and the inputs are the ones the check draws now.

Inside a rank of a check (a process of the grader's gloo group, started by :func:`commlab.launch.run`) a call
goes to the sandbox of that rank, and every ``torch.distributed`` call the student's code makes comes back
here and runs on the grader's group: the grader sees every message. A ``tracer.record`` of a message that the
student's code never sent fails the call, and in a lab whose tasks must be built from send and receive
(``collectives=False``) a collective is refused.
"""
from __future__ import annotations

import inspect
import itertools
import socket
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from commlab.errors import CommlabError
from commlab.labs import wire

#: What the sandbox's answer of a call may take beyond the call itself, seconds.
CONNECT_TIMEOUT_S = 30.0
#: The most entries the relay's record of one harnessed call holds (further requests are refused), and the most
#: bytes of tensors it keeps (beyond them a call's tensors are not kept, and the check reading them fails it).
MAX_LOG_ENTRIES = 100_000
MAX_LOG_BYTES = 256 * 2**20


class GradingTimeout(BaseException):
    """The lab's time is up (a BaseException, so that a check's ``except Exception`` does not swallow it)."""


class StudentRaised(Exception):
    """Stands for the exception the student's function raised in its sandbox (its type name is kept)."""


def _exception(name: str, message: str, not_implemented: bool) -> BaseException:
    if not_implemented:
        return NotImplementedError(message)
    kind = type(str(name)[:60] if str(name).isidentifier() else "Exception", (StudentRaised,), {})
    return kind(message)


@dataclass(frozen=True)
class Channel:
    """Where a lab's sandbox listens, one socket per rank (``<folder>/<rank>/sock``), and when the lab's time
    is up."""

    folder: str
    deadline: float                       # time.time() at which the lab's time is up
    collectives: bool = True              # False: the task is built from send/recv, a collective is refused

    def path(self, rank: int) -> str:
        return str(Path(self.folder) / str(rank) / "sock")

    def left_s(self) -> float:
        left = self.deadline - time.time()
        if left <= 0:
            raise GradingTimeout("the lab's time is up")
        return left

    def connect(self, rank: int) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = self.path(rank)
        while True:
            try:
                sock.settimeout(min(self.left_s(), CONNECT_TIMEOUT_S))
                sock.connect(path)
                sock.settimeout(self.left_s())
                return sock
            except FileNotFoundError:           # the student's module is still being imported
                time.sleep(0.05)
            except ConnectionRefusedError:
                sock.close()
                raise RuntimeError("the student's process is gone (it exited, or was killed for exceeding a "
                                   "limit)") from None


def hello(channel: Channel, rank: int = 0) -> dict:
    """What the sandbox of ``rank`` says once the student's module was imported: {"loaded", "functions"|"error"}."""
    import pickle

    with channel.connect(rank) as sock:
        wire.send_frame(sock, "P", pickle.dumps({"op": "hello"}))
        answer = wire.recv_value(sock)
    if not isinstance(answer, dict) or "loaded" not in answer:
        raise wire.WireError("the student's sandbox answered the greeting with something else")
    return answer


def _signature(params) -> inspect.Signature | None:
    try:
        return inspect.Signature([inspect.Parameter(str(name), inspect._ParameterKind(int(kind)),
                                                    default=None if has_default else inspect.Parameter.empty)
                                  for name, kind, has_default in params])
    except (TypeError, ValueError):
        return None


class RemoteFunction:
    """The student's function ``name``, run in its sandbox; picklable (spawned ranks use it too)."""

    def __init__(self, name: str, channel: Channel, params=None):
        self.__name__ = self.__qualname__ = name
        self.channel = channel
        self.params = params
        self.harness: str | None = None        # a harness of commlab.labs.harness runs the function
        self.gate_factors: tuple = ()          # the harness's gate's answers (see Relay.gate)
        self.traffic: list = []                # the relay's record of the last call (Relay.log)
        signature = _signature(params) if params is not None else None
        if signature is not None:
            self.__signature__ = signature

    def __repr__(self) -> str:
        return f"<the student's {self.__name__}>"

    def harnessed(self, harness: str, gate_factors=()) -> RemoteFunction:
        """This function run in its sandbox by the grader's harness ``harness`` (:mod:`commlab.labs.harness`):
        calling the copy calls ``harness(student_fn, *args)`` there; its ``traffic`` is then the relay's record."""
        copy = RemoteFunction(self.__name__, self.channel, self.params)
        copy.harness, copy.gate_factors = harness, tuple(float(f) for f in gate_factors)
        return copy

    def __call__(self, *args, **kwargs):
        rank, world, relay = 0, 0, None
        if "torch" in __import__("sys").modules:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                rank, world = dist.get_rank(), dist.get_world_size()
                relay = Relay(self.channel.collectives, self.gate_factors, keep_log=bool(self.harness))
        tracers: dict = {}
        sent_args = _stand_ins(args, tracers)
        with self.channel.connect(rank) as sock:
            request = {"op": "call", "fn": self.__name__, "rank": rank, "world": world,
                       "args": wire.pack_trusted((sent_args, kwargs))}
            if self.harness:
                request["harness"] = self.harness
            wire.send_frame(sock, "P", wire.pack_trusted(request))
            try:
                while True:
                    sock.settimeout(self.channel.left_s())
                    answer = wire.recv_value(sock)
                    if not isinstance(answer, dict):
                        raise wire.WireError("the sandbox answered with something that is not a message")
                    if "dist" not in answer:
                        break
                    if relay is None:
                        raise wire.WireError("the sandbox asked for torch.distributed outside a group")
                    reply = relay.run(answer, tracers)
                    if reply is not None:              # a posted request is answered when it is waited on
                        wire.send_frame(sock, "P", wire.pack_trusted(reply))
            except TimeoutError:
                raise GradingTimeout(f"{self.__name__} did not answer before the lab's time was up") from None
            except EOFError:
                raise RuntimeError(f"{self.__name__}: the student's process ended during the call (it exited or "
                                   "was killed for exceeding a limit)") from None
        return self._result(answer, args, relay, tracers)

    def _result(self, answer: dict, args: tuple, relay, tracers: dict):
        if "missing" in answer:
            raise NotImplementedError(f"{self.__name__} is missing from the module handed in")
        if "unsendable" in answer:
            raise TypeError(f"{self.__name__} returned a value the grader cannot take: {answer['unsendable']}")
        if "raised" in answer:
            name, message, not_implemented, _ = (list(answer["raised"]) + [""] * 4)[:4]
            raise _exception(name, str(message), bool(not_implemented))
        if "return" not in answer:
            raise wire.WireError("the sandbox's answer has no return value")
        mine = wire.tensors_in(args)
        if mine:                                  # the student's function may fill its arguments in place
            import torch

            with torch.no_grad():
                for orig, final in zip(mine, answer.get("tensors") or []):
                    if isinstance(final, torch.Tensor) and orig.shape == final.shape:
                        orig.copy_(final.to(orig.dtype))
        if relay is not None:
            self.traffic = relay.log
            relay.finish(tracers)
        return answer["return"]


def _stand_ins(args, tracers: dict):
    """``args`` with every commlab Tracer replaced by ("$tracer", rank, n_ranks, length) (kept in ``tracers``)."""
    from commlab.p2p.tracer import Tracer

    out = []
    for a in args:
        if isinstance(a, Tracer):
            tracers[id(a)] = a
            tracers["current"] = a
            out.append(("$tracer", a.rank, a.n_ranks, a.length))
        else:
            out.append(a)
    return tuple(out)


_P2P = ("send", "recv", "isend", "irecv", "batch_isend_irecv")
_COLLECTIVES = ("broadcast", "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single", "barrier",
                "monitored_barrier", "all_gather_single", "reduce_scatter_single")


class Relay:
    """The grader's rank running a student's torch.distributed calls on its own group, and their record."""

    def __init__(self, collectives: bool, gate_factors=(), keep_log: bool = False):
        self.collectives = collectives
        self.gate_factors = tuple(gate_factors)
        self.keep_log = keep_log                 # a harnessed call: its checks read the record
        self.log: list[dict] = []                # every call, wait, gate and mark, in the order they came
        self.log_bytes = 0
        self.works: dict[int, tuple] = {}
        self.failed: dict[int, str] = {}         # posted requests that failed, told when waited on
        self.ids = itertools.count(-1, -1)       # this side's numbers (the sandbox's are >= 0)
        self.sent: Counter = Counter()           # (dst, numel) of every message the student's code sent
        self.claimed: list[tuple] = []           # (dst, numel, step, chunk) of every tracer.record
        self.refused: list[str] = []             # why posted records or sends' waits failed, told at the call's end

    def run(self, request: dict, tracers: dict) -> dict | None:
        """The answer to one request of the student's code; None for a posted one (isend, irecv, a batch, an
        asynchronous collective): its outcome is kept under the numbers the sandbox gave it until waited on."""
        posted = request.get("post")
        if posted is not None:
            if not (isinstance(posted, list) and all(isinstance(h, int) and not isinstance(h, bool) for h in posted)):
                raise wire.WireError("a posted request without its numbers")
            answer = self._run(request, tracers)
            if request.get("dist") in ("record", "wait"):   # a tracer.record or a send's wait, posted: a refusal
                if "refused" in answer:                       # fails the call at its end
                    self.refused.append(answer["refused"])
                return None
            if "handles" in answer:
                for mine, theirs in zip(answer["handles"], posted):
                    self.works[theirs] = self.works.pop(mine)
                    for entry in self.log:
                        if entry.get("handle") == mine:
                            entry["handle"] = theirs
            else:
                for theirs in posted:
                    self.failed[theirs] = answer.get("refused", "the request was not posted")
            return None
        return self._run(request, tracers)

    def _run(self, request: dict, tracers: dict) -> dict:
        name = request.get("dist")
        if self.keep_log and len(self.log) >= MAX_LOG_ENTRIES:
            return {"refused": f"more than {MAX_LOG_ENTRIES} torch.distributed calls in one graded call"}
        try:
            if name == "wait":
                return self.wait(int(request["handle"]))
            if name == "record":
                return self._record(request, tracers)
            if name in ("gate", "mark"):
                return self.gate(name, list(request.get("args") or []))
            if name in _COLLECTIVES and not self.collectives:
                return {"refused": f"dist.{name} is a collective: this task is built from send and receive alone, "
                                   "so the grader refuses collectives in it"}
            if name not in _P2P + _COLLECTIVES:
                return {"refused": f"torch.distributed.{name} is not available while a lab is graded"}
            return self._call(name, list(request.get("args") or []), dict(request.get("kwargs") or {}))
        except GradingTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - torch's error for the student's call, raised in the sandbox
            return {"refused": f"{type(exc).__name__}: {exc}"}

    def _record(self, request: dict, tracers: dict) -> dict:
        tracer = tracers.get("current")
        if tracer is None:
            return {"refused": "no tracer was given to this call"}
        (dst,), kw = request["args"], request["kwargs"]
        tracer.record(dst, step=kw["step"], chunk=kw["chunk"], reduce=kw["reduce"])
        bounds = tracer.chunk_bounds if tracer.length is not None else None
        numel = int(bounds[kw["chunk"] + 1] - bounds[kw["chunk"]]) if bounds is not None else None
        self.claimed.append((dst, numel, kw["step"], kw["chunk"]))
        return {"ok": True}

    def _call(self, name: str, args: list, kwargs: dict) -> dict:
        import torch
        import torch.distributed as dist

        if kwargs.pop("group", None) is not None:
            return {"refused": "only the default group is available while a lab is graded"}
        kwargs.pop("group_dst", None)
        kwargs.pop("group_src", None)
        tensors = wire.tensors_in((args, kwargs))
        if name == "batch_isend_irecv":
            ops = [p for p in (args[0] if args else kwargs.get("p2p_op_list", [])) if isinstance(p, dict)]
            real = []
            for op in ops:
                fn = dist.isend if op["p2p"] == "isend" else dist.irecv
                if op["p2p"] == "isend":
                    self.sent[(int(op["peer"]), op["tensor"].numel())] += 1
                real.append(dist.P2POp(fn, op["tensor"], int(op["peer"]), tag=int(op.get("tag") or 0)))
            works = dist.batch_isend_irecv(real) if real else []
            handles, indices = [], []
            for i, work in enumerate(works):
                handle = next(self.ids)
                self.works[handle] = (work, [ops[i]["tensor"]] if ops[i]["p2p"] == "irecv" else [])
                handles.append(handle)
                indices.append([i])
            return {"handles": handles, "indices": indices}
        if name in ("send", "isend"):
            dst = kwargs.get("dst", args[1] if len(args) > 1 else None)
            if isinstance(args[0], torch.Tensor) and dst is not None:
                self.sent[(int(dst), args[0].numel())] += 1
        posted = next(self.ids) if name in ("isend", "irecv") or kwargs.get("async_op") else None
        if self.keep_log:
            kept = [t for t in tensors if isinstance(t, torch.Tensor)]
            self.log_bytes += sum(t.numel() * t.element_size() for t in kept)
            self.log.append({"kind": "call", "name": name, "async": posted is not None, "handle": posted,
                             "inputs": [t.detach().clone() for t in kept] if self.log_bytes <= MAX_LOG_BYTES else []})
        value = getattr(dist, name)(*args, **kwargs)
        written = [] if name in ("send", "isend", "barrier", "monitored_barrier") else tensors   # what comes back
        if posted is not None:
            self.works[posted] = (value, written)
            return {"handles": [posted], "indices": [list(range(len(written)))]}
        return {"tensors": written, "value": value if isinstance(value, (int, type(None))) else None}

    def wait(self, handle: int) -> dict:
        """The student's request.wait(), on the grader's request (a deadlock report names this frame: wait)."""
        if handle in self.failed:
            return {"refused": self.failed.pop(handle)}
        if handle not in self.works:
            return {"refused": f"no request {handle} to wait on"}
        if self.keep_log:
            self.log.append({"kind": "wait", "handle": handle})
        work, tensors = self.works[handle]
        if work is not None:
            work.wait()
        return {"tensors": tensors}

    def gate(self, name: str, args: list) -> dict:
        """A harness's question (:mod:`commlab.labs.harness`): "gate" (step) is answered with the factor the
        grader drew for that step, "mark" (what, step) only noted; both go into the log where they came."""
        step = args[-1] if args and isinstance(args[-1], int) and not isinstance(args[-1], bool) else -1
        if not self.keep_log:
            return {"refused": f"no harness asked for a {name} in this call"}
        if name == "mark":
            self.log.append({"kind": "mark", "what": str(args[0]) if args else "", "step": step})
            return {"ok": True}
        if not 0 <= step < len(self.gate_factors):
            return {"refused": "no gate of that step in this call"}
        self.log.append({"kind": "gate", "step": step})
        return {"factor": self.gate_factors[step]}

    def finish(self, tracers: dict) -> None:
        """After a call: every message the tracer recorded must have been sent (to that rank, of that size)."""
        if self.refused:
            raise RuntimeError(self.refused[0])
        left = Counter(self.sent)
        for dst, numel, step, chunk in self.claimed:
            key = (dst, numel) if numel is not None else next((k for k in left if k[0] == dst and left[k]), None)
            if key is not None and left[key] > 0:
                left[key] -= 1
                continue
            size = f"{numel} elements" if numel is not None else "a message"
            raise RuntimeError(f"the tracer recorded step {step}: chunk {chunk} to rank {dst}, but no message of "
                               f"{size} went to rank {dst}; the grader records the messages your code sends")
        self.claimed.clear()
        self.sent.clear()


def remote_functions(channel: Channel, names, functions: dict) -> list[RemoteFunction]:
    """A RemoteFunction for each of ``names`` (``functions``: the signatures the sandbox reported)."""
    if not isinstance(functions, dict):
        raise CommlabError("the student's sandbox reported no functions")
    return [RemoteFunction(name, channel, functions.get(name)) for name in names]
