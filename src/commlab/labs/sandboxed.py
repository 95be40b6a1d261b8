"""What runs inside a student's sandbox while a lab is graded: the student's module, served to the grader.

The grader (:mod:`commlab.labs.remote`) starts this once per (student, lab) (``python -I -u -c ...``, inside
bubblewrap when it can, :mod:`commlab.labs.sandbox`). It imports the student's ``<lab>.py`` once, forks one
process per rank the lab needs, and each listens on a Unix socket of its own in the folder the grader gave it
and answers the grader's calls: ``call`` runs one of the
student's functions on the arguments the grader drew and sends back what it returned (or what it raised), and
the final contents of every tensor it was given (a function may fill its arguments in place).

No process group exists in here. When the lab has ranks, ``torch.distributed``'s functions are replaced by
stand-ins that forward every send, receive and collective to the grader's own rank process, which runs it on
the grader's gloo group and keeps the record of what was sent (:class:`RelayTracer` forwards the student's
``tracer.record`` the same way). The student's process writes no verdict and no record: it only answers.
"""
from __future__ import annotations

import inspect
import os
import socket
import sys
import traceback
from pathlib import Path

from commlab.labs import wire

_STATE: dict = {}          # this process's connection to the grader while a call runs (one call at a time)


def _conn() -> socket.socket:
    sock = _STATE.get("sock")
    if sock is None:
        raise RuntimeError("torch.distributed is not available outside a graded call")
    return sock


def _post(value) -> None:
    """A request the grader answers with nothing (an isend, a send's wait, a ``tracer.record``): kept, and
    written with the next request this process waits on, or before the call's answer. The grader reads the
    frames in the order they were made, and every rank writes what it posted before it waits on anything, so
    no rank waits on a request another has not written."""
    _conn()
    _STATE.setdefault("outbox", []).append(wire.frame("J", wire.encode(value)))


def _send(sock: socket.socket, value) -> None:
    """A request this process waits on, after every request posted before it."""
    _flush(sock)
    wire.send_value(sock, value)


def _flush(sock: socket.socket) -> None:
    box = _STATE.pop("outbox", None)
    if box:
        sock.sendall(b"".join(box))


def _plain(value):
    """``value`` with every P2POp as a dict, ready for :func:`commlab.labs.wire.encode`."""
    if isinstance(value, P2POp):
        return {"p2p": value.op_name, "tensor": value.tensor, "peer": value.peer, "tag": value.tag}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value) if isinstance(value, tuple) else [_plain(v) for v in value]
    return value


def _reply(sock: socket.socket) -> dict:
    """The grader's answer to a relayed call (pickled by the grader: trusted here)."""
    import pickle

    kind, body = wire.recv_frame(sock, "PJ")
    return pickle.loads(body) if kind == "P" else wire.decode(*wire.split(body))


def _copy_back(tensors: list, finals: list) -> None:
    for mine, final in zip(tensors, finals):
        if mine.shape == final.shape:
            with __import__("torch").no_grad():
                mine.copy_(final.to(mine.dtype))


def _relay(name: str, args: tuple, kwargs: dict):
    """Ask the grader's rank to run ``torch.distributed.<name>(*args, **kwargs)``; the same value back."""
    tensors = wire.tensors_in((args, kwargs))
    sock = _conn()
    if name in ("isend", "irecv", "batch_isend_irecv") or kwargs.get("async_op"):
        # posted without waiting for an answer (the grader numbers the requests as this process does); a
        # failure is told when the request is waited on
        n = len(args[0] if args else kwargs.get("p2p_op_list", [])) if name == "batch_isend_irecv" else 1
        first = _STATE.setdefault("posted", 0)
        _STATE["posted"] = first + n
        handles = list(range(first, first + n))
        _post({"dist": name, "args": _plain(args), "kwargs": _plain(kwargs), "post": handles})
        if name == "batch_isend_irecv":
            ops = args[0] if args else kwargs.get("p2p_op_list", [])
            return [Work(h, [t], getattr(op, "op_name", "") == "isend") for h, t, op in zip(handles, tensors, ops)]
        return Work(handles[0], tensors, name == "isend")
    _send(sock, {"dist": name, "args": _plain(args), "kwargs": _plain(kwargs)})
    reply = _reply(sock)
    if "refused" in reply:
        raise RuntimeError(reply["refused"])
    if "handles" in reply:                     # asynchronous: the tensors are filled when the request is waited on
        works = [Work(h, [tensors[i] for i in idx]) for h, idx in zip(reply["handles"], reply["indices"])]
        return works if name == "batch_isend_irecv" else works[0]
    _copy_back(tensors, reply.get("tensors", []))
    return reply.get("value")


def ask(kind: str, *args) -> dict:
    """A question of the grader's harness (:mod:`commlab.labs.harness`) to the grader, e.g. ("gate", step): the
    grader's answer (it records the question where it falls among the relayed calls)."""
    sock = _conn()
    _send(sock, {"dist": kind, "args": list(args), "kwargs": {}})
    reply = _reply(sock)
    if "refused" in reply:
        raise RuntimeError(reply["refused"])
    return reply


class Work:
    """The stand-in of a torch.distributed request: ``wait()`` asks the grader to finish it. A send's wait is
    posted without waiting for the answer (nothing comes back; the grader waits for the send, in order, before
    it reads what this process asks next, and a send that failed fails the call at its end)."""

    def __init__(self, handle: int, tensors: list, send: bool = False):
        self.handle, self.tensors, self.done, self.send = handle, tensors, False, send

    def wait(self, timeout=None) -> bool:
        if not self.done and self.send:
            _post({"dist": "wait", "handle": self.handle, "post": []})
            self.done = True
        if not self.done:
            sock = _conn()
            _send(sock, {"dist": "wait", "handle": self.handle})
            reply = _reply(sock)
            if "refused" in reply:
                raise RuntimeError(reply["refused"])
            _copy_back(self.tensors, reply.get("tensors", []))
            self.done = True
        return True

    def is_completed(self) -> bool:
        return self.done


class P2POp:
    """The stand-in of ``torch.distributed.P2POp(op, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        self.op_name = getattr(op, "__name__", str(op))
        if self.op_name not in ("isend", "irecv"):
            raise ValueError(f"P2POp takes dist.isend or dist.irecv, got {op!r}")
        self.tensor, self.peer, self.tag = tensor, peer if peer is not None else group_peer, tag


_RELAYED = ("send", "recv", "isend", "irecv", "batch_isend_irecv", "broadcast", "all_reduce", "reduce", "all_gather",
            "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
            "all_to_all_single", "barrier", "monitored_barrier", "all_gather_single", "reduce_scatter_single")
_REFUSED = ("all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list", "send_object_list",
            "recv_object_list", "init_process_group", "new_group", "destroy_process_group")


def _stand_in(name: str):
    def call(*args, **kwargs):
        return _relay(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _refused(name: str):
    def call(*args, **kwargs):
        raise RuntimeError(f"torch.distributed.{name} is not available while a lab is graded (the grader owns the "
                           "process group)")

    call.__name__ = name
    return call


def install_relay(rank: int, world: int) -> None:
    """Replace torch.distributed's functions with the stand-ins that forward to the grader's rank."""
    import torch.distributed as dist

    for name in _RELAYED:
        setattr(dist, name, _stand_in(name))
    for name in _REFUSED:
        setattr(dist, name, _refused(name))
    stand_ins = {"P2POp": P2POp, "is_initialized": lambda: _STATE.get("world") is not None,
                 "get_rank": lambda group=None: _STATE["rank"], "get_world_size": lambda group=None: _STATE["world"],
                 "get_backend": lambda group=None: "gloo"}
    for name, value in stand_ins.items():
        setattr(dist, name, value)
    _STATE.update(rank=rank, world=world)


def _relay_tracer_class():
    from commlab.p2p.tracer import Tracer

    class RelayTracer(Tracer):
        """The student's tracer: ``record`` tells the grader, which keeps the trace (and checks it was sent)."""

        def record(self, dst: int, *, step: int, chunk: int, reduce: bool = False) -> None:
            super().record(dst, step=step, chunk=chunk, reduce=reduce)
            # posted without waiting: a record the grader refuses fails the call at its end
            _post({"dist": "record", "args": [dst], "kwargs": {"step": step, "chunk": chunk, "reduce": reduce},
                   "post": []})

        def gather(self) -> list:
            raise RuntimeError("tracer.gather() is the grader's: record your sends, the grader gathers them")

    return RelayTracer


def _with_tracers(value):
    """The grader sends a tracer as ("$tracer", rank, n_ranks, length): here it becomes a RelayTracer."""
    if isinstance(value, tuple) and len(value) == 4 and isinstance(value[0], str) and value[0] == "$tracer":
        return _relay_tracer_class()(value[1], value[2], value[3])
    if isinstance(value, list):
        return [_with_tracers(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_with_tracers(v) for v in value)
    return value


def _signature(fn) -> list:
    try:
        return [[p.name, int(p.kind), p.default is not inspect.Parameter.empty]
                for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        return [["args", int(inspect.Parameter.VAR_POSITIONAL), False]]


def _answer_call(module, request: dict) -> dict:
    import pickle

    name = request["fn"]
    fn = getattr(module, name, None)
    if not callable(fn):
        return {"missing": name}
    args, kwargs = pickle.loads(request["args"])
    args = _with_tracers(args)
    if request.get("harness"):                 # the grader's harness runs the function (a training step)
        from commlab.labs import harness

        fn = harness.bind(str(request["harness"]), fn)
    if request.get("world"):
        _STATE.update(rank=request["rank"], world=request["world"])
    tensors = wire.tensors_in(args)           # nothing, and no torch import, before the student loaded torch
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - what the student's function raised goes to the grader in words
        if isinstance(exc, (SystemExit, KeyboardInterrupt)):
            traceback.print_exc()
        return {"raised": [type(exc).__name__, str(exc)[:4000], isinstance(exc, NotImplementedError),
                           traceback.format_exc()[-4000:]]}
    return {"return": value, "tensors": tensors}


def _serve(sock: socket.socket, module, loaded: dict) -> None:
    kind, body = wire.recv_frame(sock, "PJ")
    import pickle

    request = pickle.loads(body) if kind == "P" else wire.decode(*wire.split(body))
    if request.get("op") == "hello":
        wire.send_value(sock, loaded)
        return
    _STATE["sock"] = sock
    _STATE["posted"] = 0
    try:
        try:
            answer = _answer_call(module, request)
        except Exception as exc:  # noqa: BLE001 - the arguments did not arrive: the grader's to hear
            answer = {"unsendable": f"the call did not reach the function: {type(exc).__name__}: {exc}"}
        try:
            payload = wire.encode(answer)
        except (wire.WireError, RecursionError) as exc:
            payload = wire.encode({"unsendable": str(exc)})
        _flush(sock)
        wire.send_frame(sock, "J", payload)
    finally:
        _STATE.pop("sock", None)
        _STATE.pop("outbox", None)


def _listen(path: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".tmp")
    server.listen(4)
    os.rename(path + ".tmp", path)             # the grader connects once the path exists
    return server


def _serve_forever(server: socket.socket, module, loaded: dict) -> None:
    while True:
        conn, _ = server.accept()
        with conn:
            try:
                _serve(conn, module, loaded)
            except (EOFError, OSError, wire.WireError):
                pass
            sys.stdout.flush()
            sys.stderr.flush()


def main(channels: str, lab: str, module_path: str, world: int) -> int:
    """Import the student's module once, then answer the grader on ``<channels>/<rank>/sock`` for every rank
    (one process per rank, forked after the import) until the sandbox is ended."""
    from commlab.labs import mine

    if world:
        install_relay(0, world)
    loaded: dict = {}
    module = None
    try:
        module = mine.load_module(Path(module_path), lab)
        loaded = {"loaded": True, "functions": {n: _signature(f) for n, f in vars(module).items()
                                                 if callable(f) and not n.startswith("_")}}
    except mine.LearnerCodeError as exc:
        loaded = {"loaded": False, "error": str(exc)[:4000]}
    except BaseException as exc:  # noqa: BLE001 - a module that does not import is the student's to fix
        loaded = {"loaded": False, "error": f"{module_path} does not import: {type(exc).__name__}: {exc}"[:4000]}
    sys.stdout.flush()
    sys.stderr.flush()
    for rank in range(1, max(1, world)):
        if os.fork() == 0:
            _STATE.update(rank=rank)
            _serve_forever(_listen(str(Path(channels) / str(rank) / "sock")), module, loaded)
    _serve_forever(_listen(str(Path(channels) / "0" / "sock")), module, loaded)
    return 0


if __name__ == "__main__":
    sys.modules["commlab.labs.sandboxed"] = sys.modules[__name__]   # the harness's ask() reaches this copy
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
