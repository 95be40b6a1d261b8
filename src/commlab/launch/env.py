"""Scripts under a launcher (torchrun, SLURM through torchrun, several nodes): join the group that the
launcher describes in the environment, and one ``main`` that runs the same worker both ways.

torchrun sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and
``MASTER_PORT`` in every process it starts; ``init_process_group(init_method="env://")`` reads them
(labs/scripts, chapter 08 "Several nodes").
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

from commlab.compat import provide_new_names
from commlab.errors import CommlabError
from commlab.launch.choose import choose_backend, loopback_interface
from commlab.launch.config import LaunchConfig

LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR")


def is_launched() -> bool:
    """True when a launcher (torchrun, or a rank started by :func:`commlab.launch.run`) set
    ``RANK``, ``WORLD_SIZE`` and ``MASTER_ADDR`` for this process."""
    return all(os.environ.get(name) for name in LAUNCHER_VARIABLES)


@dataclass(frozen=True)
class Context:
    """Where this process stands in the group."""

    rank: int
    n_ranks: int
    local_rank: int
    """Rank among the processes on this node (the GPU index under NCCL)."""
    backend: str
    device: str
    """``"cuda:<local_rank>"`` under NCCL, else ``"cpu"``: where this rank's tensors go."""

    @property
    def is_main(self) -> bool:
        """Rank 0, the one that prints."""
        return self.rank == 0


def _env_int(name: str, default: int | None = None) -> int:
    text = os.environ.get(name)
    if text is None and default is not None:
        return default
    try:
        if text is None:
            raise ValueError(name)
        return int(text)
    except ValueError:
        raise CommlabError(f"environment variable {name} must be a whole number, got {text!r}") from None


def _current_context() -> Context:
    import torch.distributed as dist

    backend = str(dist.get_backend())
    local_rank = _env_int("LOCAL_RANK", dist.get_rank())
    device = f"cuda:{local_rank}" if backend == "nccl" else "cpu"
    return Context(dist.get_rank(), dist.get_world_size(), local_rank, backend, device)


def init_from_env(backend: str = "auto", timeout_s: float = 300.0) -> Context:
    """Join the process group the launcher describes (``env://``) and return this rank's :class:`Context`.

    If a group is already initialised (inside :func:`commlab.launch.run`, or a second call) it is reused.
    ``backend="auto"`` picks NCCL when this node has a GPU for each of its ranks, else gloo. Initialise once
    per process: after ``destroy_process_group`` a second ``env://`` group would meet the first one's keys
    in the launcher's store and hang.
    """
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return _current_context()
    if not is_launched():
        missing = [n for n in LAUNCHER_VARIABLES if not os.environ.get(n)]
        raise CommlabError(
            f"not started by a launcher: {', '.join(missing)} not set. Run the script with "
            "`torchrun --nproc-per-node N script.py`, or start ranks from Python with commlab.launch.run(fn, n) "
            "or commlab.launch.main(fn)")
    LaunchConfig(1, backend, timeout_s)  # validates backend and timeout_s
    provide_new_names()  # dist.all_gather_single / reduce_scatter_single on a torch older than 2.13
    rank, n_ranks = _env_int("RANK"), _env_int("WORLD_SIZE")
    local_rank = _env_int("LOCAL_RANK", 0)
    chosen, _ = choose_backend(backend, _env_int("LOCAL_WORLD_SIZE", n_ranks))
    loopback = loopback_interface()
    if os.environ["MASTER_ADDR"] in ("127.0.0.1", "localhost", "::1") and loopback is not None:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", loopback)  # one machine: keep gloo on loopback
    if chosen == "nccl":
        torch.cuda.set_device(local_rank)
    dist.init_process_group(chosen, init_method="env://", rank=rank, world_size=n_ranks,
                            timeout=timedelta(seconds=timeout_s))
    device = f"cuda:{local_rank}" if chosen == "nccl" else "cpu"
    return Context(rank, n_ranks, local_rank, chosen, device)


def main(fn, default_n_ranks: int = 4, *args, n_ranks: int | None = None, backend: str = "auto",
         timeout_s: float = 60.0, verbose: bool = True, **kwargs):
    """Run the worker ``fn(rank, n_ranks, *args, **kwargs)`` the way this process was started.

    Under torchrun (:func:`is_launched`): join the group, call ``fn`` here, leave the group, and return this
    rank's value. Otherwise: start ``n_ranks`` ranks (else ``$COMMLAB_N_RANKS``, else ``default_n_ranks``)
    with :func:`commlab.launch.run` and return the list of their values. A lab script ends with
    ``if __name__ == "__main__": commlab.launch.main(worker)`` and runs both as ``python script.py`` and as
    ``torchrun --nproc-per-node 4 script.py``. Under torchrun a group this call initialised is destroyed at
    the end; one the script initialised before is left to the script.
    """
    import torch.distributed as dist

    if not is_launched():
        from commlab.launch.runner import run

        count = n_ranks if n_ranks is not None else _env_int("COMMLAB_N_RANKS", default_n_ranks)
        return run(fn, count, *args, backend=backend, timeout_s=timeout_s, verbose=verbose, **kwargs)
    owned = not dist.is_initialized()
    ctx = init_from_env(backend, timeout_s)
    try:
        return fn(ctx.rank, ctx.n_ranks, *args, **kwargs)
    finally:
        if owned and dist.is_initialized():
            dist.destroy_process_group()
