"""What :func:`commlab.launch.run` was asked to do, checked before any process starts.

Every field is validated in ``__post_init__`` so that a bad value fails at once, with a message that names
it, instead of deep inside a rank.
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.errors import CommlabError, check_choice, check_n_ranks

BACKENDS = ("auto", "gloo", "nccl")
START_METHODS = ("auto", "fork", "spawn")
#: The most ranks one machine is asked to start (each is a process with its own copy of torch).
MAX_RANKS = 256


def _check_seconds(name: str, value: object, low: float = 0.0) -> float:
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or value != value or value <= low
            or value == float("inf")):
        raise CommlabError(f"{name} must be a finite number of seconds > {low:g}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class LaunchConfig:
    """How to start the ranks of one :func:`~commlab.launch.run` call."""

    n_ranks: int
    """How many processes (ranks) to start, 1 to ``MAX_RANKS``."""
    backend: str = "auto"
    """``"gloo"``, ``"nccl"`` or ``"auto"`` (NCCL when there is a CUDA GPU per rank, else gloo)."""
    timeout_s: float = 60.0
    """Wall-clock limit for the whole launch, start-up included; also the process group's own timeout."""
    start_method: str = "auto"
    """``"fork"``, ``"spawn"`` or ``"auto"`` (fork for gloo on Linux before CUDA is initialised)."""
    verbose: bool = True
    """Print one line saying how many ranks run on which backend and why."""
    grace_s: float = 1.0
    """After one rank fails, how long the others get to finish or fail on their own before being stopped."""

    def __post_init__(self) -> None:
        check_n_ranks(self.n_ranks, 1, MAX_RANKS)
        check_choice("backend", self.backend, BACKENDS)
        check_choice("start_method", self.start_method, START_METHODS)
        _check_seconds("timeout_s", self.timeout_s)
        _check_seconds("grace_s", self.grace_s)
        if not isinstance(self.verbose, bool):
            raise CommlabError(f"verbose must be True or False, got {self.verbose!r}")
