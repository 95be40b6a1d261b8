"""Which backend and which start method a launch uses, and why (the reason is printed for the reader).

NCCL needs one CUDA GPU per rank; gloo runs anywhere on CPU. Forking is fast (the child already has torch
imported) but is only safe before CUDA is touched and is unsafe on macOS, so ``"auto"`` forks only for
gloo on Linux on a machine without an NVIDIA driver; otherwise ranks are spawned as fresh interpreters and the
function travels by value with cloudpickle (chapter 03, "Running ranks from a notebook").
"""
from __future__ import annotations

import os
import socket
import sys

from commlab.errors import CommlabError


def cuda_device_count() -> int:
    """How many CUDA GPUs torch sees (0 without a CUDA build); does not initialise CUDA."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def cuda_initialised() -> bool:
    """True once this process has initialised CUDA (after which forking is unsafe)."""
    import torch

    return bool(torch.cuda.is_initialized())


def cuda_driver_present() -> bool:
    """True when this torch is a CUDA build and the machine has an NVIDIA driver's device files.

    Read from the file system, not from CUDA: asking torch for the device count (``cudaGetDeviceCount``) already
    makes a later fork unsafe (torch marks the child "bad fork") although ``torch.cuda.is_initialized()`` stays
    False, which a GPU session showed (torch 2.11, one H200: a forked gloo rank could not copy to the GPU).
    """
    import glob

    import torch

    return torch.version.cuda is not None and bool(glob.glob("/dev/nvidia[0-9]*") or os.path.exists("/dev/nvidiactl"))


def nccl_available() -> bool:
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_nccl_available())


def choose_backend(requested: str, n_gpus_needed: int) -> tuple[str, str]:
    """(backend, reason). ``"auto"`` is NCCL when NCCL is built in and there are ``n_gpus_needed`` GPUs.

    An explicit ``"nccl"`` that cannot work raises CommlabError saying what is missing.
    """
    n_gpus = cuda_device_count()
    nccl = nccl_available()
    if requested == "gloo":
        return "gloo", "asked for"
    if requested == "nccl":
        if not nccl or n_gpus < n_gpus_needed:
            raise CommlabError(
                f"backend 'nccl' needs {n_gpus_needed} CUDA GPU(s) and a torch built with NCCL; this machine has "
                f"{n_gpus} GPU(s) and NCCL {'available' if nccl else 'not available'}: use backend='gloo' or 'auto'")
        return "nccl", "asked for"
    if nccl and n_gpus >= n_gpus_needed:
        return "nccl", f"{n_gpus} CUDA GPU(s)"
    if n_gpus == 0:
        return "gloo", "no CUDA GPU found"
    if not nccl:
        return "gloo", "this torch has no NCCL"
    return "gloo", f"{n_gpus} CUDA GPU(s) for {n_gpus_needed} ranks"


def choose_start_method(requested: str, backend: str) -> tuple[str, str]:
    """(start method, reason). An explicit ``"fork"`` after CUDA was initialised raises CommlabError."""
    if requested == "fork":
        if sys.platform == "win32":
            raise CommlabError("start_method 'fork' is not available on Windows; use start_method='spawn'")
        if cuda_initialised():
            raise CommlabError(
                "start_method 'fork' cannot be used once CUDA is initialised in this process (a forked child "
                "cannot use the parent's CUDA context); use start_method='spawn' or restart the kernel and "
                "launch before touching the GPU")
        return "fork", "asked for"
    if requested == "spawn":
        return "spawn", "asked for"
    if not sys.platform.startswith("linux"):
        return "spawn", f"fork is unsafe on {sys.platform}"
    if backend != "gloo":
        return "spawn", f"{backend} ranks use CUDA"
    if cuda_initialised():
        return "spawn", "CUDA is initialised in this process"
    if cuda_driver_present():
        return "spawn", "a GPU machine: a forked rank could not use CUDA once this process has asked for the GPUs"
    return "fork", "gloo on Linux"


def loopback_interface() -> str | None:
    """The name of the loopback network interface (``lo`` on Linux, ``lo0`` on macOS), or None."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    for name in ("lo", "lo0"):
        if name in names:
            return name
    return next((n for n in names if n.startswith("lo")), None)
