"""``run(fn, n_ranks)``: start n ranks on this machine, call ``fn(rank, n_ranks, ...)`` in each, return
what they return (chapter 03, "Running ranks from a notebook").

Rank 0 binds a TCPStore to 127.0.0.1 only, port 0 (the operating system picks a free port, so two launches
at once never race for one; nothing listens on the machine's other addresses) and the others rendezvous
through it (:mod:`commlab.launch.worker`). Output is streamed back as ``[rank r] ...`` lines; a failure on
any rank raises :class:`~commlab.launch.failures.RankError`, the rank that caused it first; whatever happens,
no rank, and no process a rank started, is left running when ``run`` returns or raises.
"""
from __future__ import annotations

import os
import signal
import sys

from commlab.errors import CommlabError
from commlab.launch.choose import choose_backend, choose_start_method, loopback_interface
from commlab.launch.config import LaunchConfig
from commlab.launch.failures import RankError, order_failures
from commlab.launch.monitor import RankState, pump, watch
from commlab.launch.procs import start_forked, start_spawned
from commlab.launch.worker import RankSpec


def run(fn, n_ranks: int, *args, backend: str = "auto", timeout_s: float = 60.0, start_method: str = "auto",
        verbose: bool = True, **kwargs) -> list:
    """Run ``fn(rank, n_ranks, *args, **kwargs)`` on ``n_ranks`` new processes joined in one process group.

    Returns the per-rank return values in rank order. ``backend``: ``"auto"`` (NCCL with one GPU per rank,
    else gloo), ``"gloo"`` or ``"nccl"``; ``start_method``: ``"auto"``, ``"fork"`` or ``"spawn"`` (see
    :mod:`commlab.launch.choose`). ``timeout_s`` bounds the whole launch and the process group's
    operations. The keyword names of this signature cannot be passed on to ``fn``.

    Raises :class:`RankError` (a RuntimeError) naming the failed ranks with the first one's traceback, and
    CommlabError for bad arguments or a function that cannot be sent to spawned ranks.
    """
    config = LaunchConfig(n_ranks, backend, timeout_s, start_method, verbose)
    return run_with(config, fn, args, kwargs)


def run_with(config: LaunchConfig, fn, args: tuple = (), kwargs: dict | None = None, on_line=None) -> list:
    """:func:`run` with its settings in a :class:`LaunchConfig`, and a hook on the ranks' output.

    ``on_line(rank, line, to_stderr) -> bool`` sees every line a rank prints before it is re-printed; when it
    returns True the line is consumed (commlab.bench drives a progress bar from rank 0's lines this way).
    """
    if not callable(fn):
        raise CommlabError(f"fn must be a function taking (rank, n_ranks, ...), got {type(fn).__name__} {fn!r}")
    kwargs = dict(kwargs or {})
    chosen, why_backend = choose_backend(config.backend, config.n_ranks)
    method, why_method = choose_start_method(config.start_method, chosen)
    payload = pickle_payload(fn, args, kwargs) if method == "spawn" else None
    if config.verbose:
        print(f"commlab.launch: {config.n_ranks} ranks on {chosen} ({why_backend}), {method} ({why_method})",
              flush=True)
    return _launch(config, chosen, method, fn, args, kwargs, payload, on_line)


def pickle_payload(fn, args: tuple, kwargs: dict) -> bytes:
    """``(fn, args, kwargs)`` by value with cloudpickle, or a CommlabError that says what could not travel."""
    import cloudpickle

    try:
        return cloudpickle.dumps((fn, args, kwargs))
    except Exception as exc:  # noqa: BLE001 - pickling raises many types
        raise CommlabError(
            f"cannot send {getattr(fn, '__name__', fn)!r} and its arguments to spawned ranks: "
            f"{type(exc).__name__}: {exc}. A spawned rank is a new process: the function, everything it "
            "refers to and the arguments must be picklable (no open files, locks, sockets, process groups or "
            "CUDA state captured from the notebook). Create such things inside the function, or use "
            "start_method='fork' (Linux, gloo, before CUDA is initialised).") from exc


def _launch(config: LaunchConfig, backend: str, method: str, fn, args, kwargs, payload, on_line) -> list:
    import uuid

    loopback, run_id = loopback_interface(), f"commlab-{uuid.uuid4().hex[:12]}"
    states: list[RankState] = []
    try:
        for rank in range(config.n_ranks):
            spec = RankSpec(rank, config.n_ranks, backend, config.timeout_s, os.getpid(), loopback, run_id)
            proc = (start_forked(fn, args, kwargs, spec) if method == "fork" else start_spawned(payload, spec))
            states.append(RankState.of(proc, on_line))
        watch(states, config.timeout_s, config.grace_s)
    finally:
        _stop_all(states)
    noticed = [(st.failure, st.failed_at) for st in states if st.failure]
    if noticed:
        returned = [st.rank for st in states if st.result is not None and st.result[0] == "ok"]
        raise RankError(order_failures(noticed, returned), config.n_ranks, backend)
    values = []
    for st in states:
        if st.result is None:          # watch() returns once every rank returned, or notices a failure (above)
            raise RuntimeError(f"rank {st.rank} ended without returning")
        values.append(st.result[1])
    return values


def _stop_all(states: list[RankState]) -> None:
    """Stop every rank still running and whatever any rank started (SIGTERM to each rank's process group,
    then SIGKILL), read what is left in the pipes, close them. Every group is frozen (SIGSTOP) before any is
    ended, and each gets its SIGTERM before it runs again (SIGCONT): otherwise a rank blocked on a peer that died
    first would see the connection close and run on (write its results, report an error) before its own
    SIGTERM arrived."""
    freeze = getattr(signal, "SIGSTOP", None)
    if freeze is not None:
        for st in states:
            st.proc.end_group(freeze)
    for st in states:
        st.proc.end_group(signal.SIGTERM)
        if freeze is not None:
            st.proc.end_group(signal.SIGCONT)
    for st in states:
        if st.exit_code is None:
            st.proc.stop(grace_s=1.0)
        st.proc.end_group(signal.SIGKILL)
    open_fds = {fd: sink for st in states for fd, sink in st.readers().items()}
    pump(states, open_fds, 0.0)
    for st in states:
        st.out.flush()
        st.err.flush()
        for fd in (st.proc.ctl_fd, st.proc.out_fd, st.proc.err_fd, st.proc.res_fd):
            os.close(fd)
    sys.stdout.flush()
