"""How a run launches its collectives: nccl-tests' ``-t`` threads of ``-g`` GPUs each, and the floor that sets.

nccl-tests times ``iters`` back-to-back calls of the collective and divides the wall time by ``iters``
(NVIDIA/nccl-tests v2.19.6 ``src/common.cu:729``, the timed ``for iter`` loop, then ``completeColl``). With
``-g N`` one thread drives N GPUs: each iteration it calls the collective once per GPU inside
``ncclGroupStart``/``ncclGroupEnd`` (``startColl``, common.cu:540-619), and
``ncclGroupEnd`` launches one kernel per GPU. The host work of an iteration therefore grows with N while the GPUs
run the previous one, so in steady state an iteration takes whichever is longer::

    t = max(t_collective, gpus_per_thread x launch_us)

NCCL's tuning model counts only the GPU side, which is right for one GPU per process (nccl-tests' usual
``mpirun ... -g 1``, where each process launches its own kernel in parallel) and misses the floor of ``-g 12``.

The per-GPU cost of one call and its kernel launch, :data:`LAUNCH_US_PER_GPU`, is measured, not derived: no
source gives it, so it is a calibrated constant (:mod:`commlab.calibration`: the runs it was chosen and checked
on, and what published launch costs say).

>>> LaunchShape(gpus_per_thread=12).floor_us
57.2
>>> LaunchShape.from_preamble({"n_threads": 1, "n_gpus": 2}).gpus_per_thread
2
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from commlab.calibration import value
from commlab.errors import CommlabError

#: Host cost of one NCCL call and its kernel launch for one GPU, in us (calibrated: commlab/data/calibration.csv)
LAUNCH_US_PER_GPU = value("LAUNCH_US_PER_GPU")

_G_FLAG = re.compile(r"(?:^|\s)-g\s*(\d+)\b")
_T_FLAG = re.compile(r"(?:^|\s)-t\s*(\d+)\b")


@dataclass(frozen=True)
class LaunchShape:
    """How many GPUs one host thread drives (nccl-tests ``-g``), and how many threads (``-t``)."""

    gpus_per_thread: int = 1
    threads: int = 1
    launch_us: float = LAUNCH_US_PER_GPU

    def __post_init__(self) -> None:
        for name in ("gpus_per_thread", "threads"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise CommlabError(f"LaunchShape.{name} must be a whole number >= 1, got {value!r}")
        if not self.launch_us >= 0:
            raise CommlabError(f"LaunchShape.launch_us must be >= 0, got {self.launch_us!r}")

    @property
    def floor_us(self) -> float:
        """The least time an iteration can take: one thread launches its GPUs one after another (threads run
        side by side, so ``threads`` does not add)."""
        return round(self.gpus_per_thread * self.launch_us, 6)

    @classmethod
    def from_preamble(cls, preamble: dict) -> LaunchShape | None:
        """From nccl-tests' ``# nThread 1 nGpus 12 ...`` line as :func:`commlab.nccl.lines.parse_preamble`
        reads it; None when it does not say."""
        if not preamble or "n_gpus" not in preamble:
            return None
        return cls(gpus_per_thread=int(preamble["n_gpus"]), threads=int(preamble.get("n_threads", 1)))

    @classmethod
    def from_command(cls, command: str) -> LaunchShape | None:
        """From a command line's ``-g N`` (and ``-t N``); None when it has no ``-g``."""
        g = _G_FLAG.search(command or "")
        if not g:
            return None
        t = _T_FLAG.search(command)
        return cls(gpus_per_thread=int(g.group(1)), threads=int(t.group(1)) if t else 1)

    @classmethod
    def from_log(cls, log) -> LaunchShape | None:
        """A parsed log's launch shape: its preamble, else the ``-g`` of a ``# command:`` line; None if neither."""
        shape = cls.from_preamble(getattr(log, "preamble", None) or {})
        if shape is None:
            shape = cls.from_command((getattr(log, "metadata", None) or {}).get("command", ""))
        return shape
