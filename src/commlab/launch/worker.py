"""The code that runs inside each rank started by :func:`commlab.launch.run`.

Rendezvous: rank 0 hosts the TCPStore on 127.0.0.1, port 0 (the system picks a free port, so two launches
never race for one; the server listens on loopback only, :func:`loopback_store_server`) and sends the port to
the launcher, which passes it on to the other ranks. The
launcher itself runs no store: a store's server thread in the launcher could hold a libc lock (the resolver's,
while it names a connecting peer) at the moment the launcher forks the next rank, which would then hang.

A rank then joins the process group, calls ``fn(rank, n_ranks, *args, **kwargs)``, sends back one framed
result (:mod:`commlab.launch.wire`) and leaves the group. Its stdout and stderr are pipes the launcher reads.
Forked ranks enter at :func:`forked_main` with the function itself; spawned ranks are fresh interpreters
that enter at :func:`spawned_main` and read ``(sys.path, RankSpec, cloudpickle payload)`` from stdin.
"""
from __future__ import annotations

import faulthandler
import io
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta

from commlab.compat import provide_new_names
from commlab.launch.wire import Inbox, write_message

#: Exit status of a rank that noticed that its parent (the launcher) is gone.
ORPHAN_EXIT_CODE = 70
#: The process group's own timeout is the launch's plus this margin, so that a deadlock is caught by the
#: launcher first (which shows where each rank was) rather than by gloo's "Timed out waiting" error.
GROUP_TIMEOUT_MARGIN_S = 10.0


@dataclass(frozen=True)
class RankSpec:
    """Everything a rank needs to join the group (plain data: it travels to spawned ranks by pickle)."""

    rank: int
    n_ranks: int
    backend: str
    timeout_s: float
    parent_pid: int
    loopback: str | None
    run_id: str = "none"
    """The launch's id (torchrun's ``TORCHELASTIC_RUN_ID``, from ``--rdzv-id``, default ``"none"``)."""


def forked_main(fn, args, kwargs, spec: RankSpec, fds: tuple[int, int, int, int],
                close_fds: tuple[int, ...]) -> None:
    """Entry point of a forked rank: point fds 1 and 2 at the parent's pipes, then run.

    ``fds`` are this rank's ends of its pipes: (control in, stdout, stderr, result out).
    """
    ctl_fd, out_fd, err_fd, res_fd = fds
    _own_process_group()
    for fd in close_fds:
        os.close(fd)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
    _leave_notebook()
    run_and_report(fn, args, kwargs, spec, Inbox(ctl_fd), res_fd)


def _own_process_group() -> None:
    """Lead a new session, hence a process group of its own, so that the launcher can end whatever this rank
    starts (``subprocess.Popen``) with ``os.killpg``. Spawned ranks get the same from ``start_new_session``."""
    if hasattr(os, "setsid"):
        try:
            os.setsid()
        except OSError:
            pass  # already a group leader


def _leave_notebook() -> None:
    """A forked rank inherits the notebook kernel's IPython shell, but cannot talk to the notebook: forget
    it, so that libraries write plain text to stdout, which the launcher relays (tqdm.auto looks for the
    ``ipykernel.zmqshell`` module, IPython.display for the shell instance)."""
    if "IPython" in sys.modules:
        from IPython.core.interactiveshell import InteractiveShell

        InteractiveShell.clear_instance()
    sys.modules.pop("ipykernel.zmqshell", None)


def spawned_main() -> None:
    """Entry point of a spawned rank: ``python -c 'from commlab.launch.worker import spawned_main; ...' FD``."""
    res_fd = int(sys.argv[1])
    inbox = Inbox(0)
    sys_path, spec, payload = inbox.next(timeout_s=600.0)
    sys.path[:0] = [p for p in sys_path if p not in sys.path]
    try:
        import cloudpickle

        fn, args, kwargs = cloudpickle.loads(payload)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        summary = f"could not unpickle the function in a spawned rank: {type(exc).__name__}: {exc}"
        write_message(res_fd, ("error", summary, traceback.format_exc()))
        os.close(res_fd)
        return
    run_and_report(fn, args, kwargs, spec, inbox, res_fd)


def run_and_report(fn, args, kwargs, spec: RankSpec, inbox: Inbox, res_fd: int) -> None:
    """Run ``fn`` in the group and write one result message; never raises."""
    _prepare(spec)
    message: tuple
    try:
        message = ("ok", _call_in_group(fn, args, kwargs, spec, inbox, res_fd))
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        message = ("error", f"{type(exc).__name__}: {exc}", user_traceback(exc))
    try:
        write_message(res_fd, message)
    except Exception as exc:  # noqa: BLE001 - an unpicklable return value
        summary = (f"rank {spec.rank} returned a value that cannot be pickled ({type(exc).__name__}: {exc}); "
                   "return plain data, numpy arrays or CPU tensors")
        write_message(res_fd, ("error", summary, ""))
    finally:
        os.close(res_fd)
        try:
            _leave_group()
        except Exception as exc:  # noqa: BLE001 - the result is already sent; say why leaving failed
            print(f"commlab.launch: rank {spec.rank} could not leave the process group: {exc}", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()


def user_traceback(exc: BaseException) -> str:
    """The formatted traceback of ``exc`` without the launcher's own frames (they come first)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def worker_environment(spec: RankSpec) -> dict[str, str]:
    """The variables torchrun gives a worker, for this rank of a one-node launch.

    From torch/distributed/elastic/agent/server/local_elastic_agent.py (``_start_workers``, torch 2.13):
    RANK, GROUP_RANK, ROLE_RANK, ROLE_NAME, LOCAL_WORLD_SIZE, WORLD_SIZE, GROUP_WORLD_SIZE, ROLE_WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT (set once the store listens), TORCHELASTIC_RESTART_COUNT,
    TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID, TORCHELASTIC_USE_AGENT_STORE,
    TORCH_NCCL_ASYNC_ERROR_HANDLING (kept when set), LOCAL_RANK. One node is one group of one role
    (torchrun's default role is ``"default"``). The store is already up when the function runs, as torchrun's
    agent store is, so ``TORCHELASTIC_USE_AGENT_STORE`` is ``"True"``: an ``env://`` initialisation connects
    to it instead of trying to host a second one on the same port. OMP_NUM_THREADS: see :func:`_threads`.

    >>> env = worker_environment(RankSpec(1, 4, "gloo", 60.0, 1, None, "r1"))
    >>> env["RANK"], env["LOCAL_RANK"], env["GROUP_RANK"], env["ROLE_WORLD_SIZE"], env["TORCHELASTIC_RUN_ID"]
    ('1', '1', '0', '4', 'r1')
    """
    env = {"RANK": spec.rank, "GROUP_RANK": 0, "ROLE_RANK": spec.rank, "ROLE_NAME": "default",
           "LOCAL_WORLD_SIZE": spec.n_ranks, "WORLD_SIZE": spec.n_ranks, "GROUP_WORLD_SIZE": 1,
           "ROLE_WORLD_SIZE": spec.n_ranks, "MASTER_ADDR": "127.0.0.1", "TORCHELASTIC_RESTART_COUNT": 0,
           "TORCHELASTIC_MAX_RESTARTS": 0, "TORCHELASTIC_RUN_ID": spec.run_id,
           "TORCHELASTIC_USE_AGENT_STORE": "True",
           "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
           "LOCAL_RANK": spec.rank, "COMMLAB_LAUNCHED": 1}
    return {k: str(v) for k, v in env.items()}


def _threads(spec: RankSpec) -> None:
    """One OpenMP thread per rank when several ranks share the machine and the user set none, as torchrun
    does (torch/distributed/run.py: ``OMP_NUM_THREADS=1`` when it is unset and ``--nproc-per-node`` > 1).
    A forked rank's OpenMP runtime has already read the variable in the parent, so torch is told directly."""
    if "OMP_NUM_THREADS" in os.environ or spec.n_ranks <= 1:
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _prepare(spec: RankSpec) -> None:
    """Environment of a launched rank (what torchrun would set), stack dumps, orphan watchdog."""
    os.environ.update(worker_environment(spec))
    _threads(spec)
    if spec.loopback is not None:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", spec.loopback)
        os.environ.setdefault("NCCL_SOCKET_IFNAME", spec.loopback)
    faulthandler.enable(file=sys.stderr)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    threading.Thread(target=_exit_when_orphaned, args=(spec.parent_pid,), daemon=True).start()


def _exit_when_orphaned(parent_pid: int) -> None:
    """A rank whose launcher died (a restarted notebook kernel) exits instead of lingering, and ends the
    processes it started (its process group: every rank leads its own, :mod:`commlab.launch.procs`)."""
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    if hasattr(os, "killpg") and os.getpgid(0) == os.getpid():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            os.killpg(os.getpid(), signal.SIGTERM)
        except OSError:
            pass  # nothing left to end: exit anyway
    os._exit(ORPHAN_EXIT_CODE)


def loopback_store_server(timeout: timedelta):
    """A TCPStore server listening on 127.0.0.1 only, on a port the system picks.

    ``TCPStore("127.0.0.1", 0, is_master=True)`` binds the server to every interface (``*:PORT``, IPv4 and
    IPv6): the host name is only where clients connect. A socket bound to 127.0.0.1:0 and handed over with
    ``master_listen_fd`` keeps it on loopback (torch.distributed.TCPStore's ``master_listen_fd``: "a socket
    already bound to ``port``"; the libuv server, torch's default since 2.4, listens on it). The store takes
    the descriptor over (``detach``). A torch without ``master_listen_fd`` gets a plain store and a warning.
    """
    import socket

    import torch.distributed as dist

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        store = dist.TCPStore("127.0.0.1", port, None, True, timeout=timeout, wait_for_workers=False,
                              master_listen_fd=sock.fileno(), use_libuv=True)
    except TypeError:  # a torch older than master_listen_fd
        sock.close()
        print("commlab.launch: this torch cannot bind its TCPStore to 127.0.0.1 only (no master_listen_fd); "
              "the rendezvous store listens on every interface", file=sys.stderr)
        return dist.TCPStore("127.0.0.1", 0, None, True, timeout=timeout, wait_for_workers=False)
    except BaseException:
        sock.close()
        raise
    sock.detach()  # the store's server owns the descriptor now
    return store


def _store(spec: RankSpec, inbox: Inbox, res_fd: int):
    """Rank 0 hosts the store on 127.0.0.1 and tells the launcher its port; the others wait for that port."""
    import torch.distributed as dist

    timeout = timedelta(seconds=spec.timeout_s)
    if spec.rank == 0:
        store = loopback_store_server(timeout)
        write_message(res_fd, ("port", store.port))
    else:
        _, port = inbox.next(spec.timeout_s)
        store = dist.TCPStore("127.0.0.1", port, None, False, timeout=timeout)
    os.environ["MASTER_PORT"] = str(store.port)
    return store


def _call_in_group(fn, args, kwargs, spec: RankSpec, inbox: Inbox, res_fd: int):
    import torch
    import torch.distributed as dist

    timeout = timedelta(seconds=spec.timeout_s + GROUP_TIMEOUT_MARGIN_S)
    provide_new_names()  # dist.all_gather_single / reduce_scatter_single on a torch older than 2.13
    store = _store(spec, inbox, res_fd)
    if spec.backend == "nccl":
        torch.cuda.set_device(spec.rank)
    dist.init_process_group(spec.backend, store=store, rank=spec.rank, world_size=spec.n_ranks,
                            timeout=timeout)
    _all_joined(store, spec)
    value = fn(spec.rank, spec.n_ranks, *args, **kwargs)
    _leave_group()
    return value


def _all_joined(store, spec: RankSpec) -> None:
    """Wait on the store (not on a collective: no record, no sequence number) until every rank has its group.
    gloo connects every pair of ranks inside ``init_process_group``; without this, a rank whose function makes
    no collective could return and exit while a peer was still connecting to it, and that peer would fail
    ("Gloo connectFullMesh failed ... Connection closed by peer")."""
    store.set(f"commlab-joined-{spec.rank}", "1")
    store.wait([f"commlab-joined-{r}" for r in range(spec.n_ranks)], timedelta(seconds=spec.timeout_s))


def _leave_group() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
