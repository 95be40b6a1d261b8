"""What a sweep measures, checked before any rank starts (nccl-tests' flags, chapter 08 and the bandwidth
sweep lab).

Defaults follow nccl-tests (``-f 2 -n 20 -w 5 -c 1 -d float -o sum -r 0``) except the sizes: nccl-tests
defaults to 32 MiB only; commlab sweeps 8 B to 8 MiB by default (``-b 8 -e 8M``), which a CPU with gloo
covers in seconds and which spans the latency-bound and the bandwidth-bound regimes.
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.errors import CommlabError, check_choice

#: The collectives ``commlab bench`` runs (commlab's canonical names; ``alltoall`` is accepted too).
BENCH_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "sendrecv")
#: nccl-tests' type names -> (torch dtype attribute, bytes per element).
DTYPES = {"float": ("float32", 4), "half": ("float16", 2), "bfloat16": ("bfloat16", 2), "double": ("float64", 8)}
REDOPS = ("sum", "prod", "min", "max")
DEFAULT_MIN_NBYTES = 8
DEFAULT_MAX_NBYTES = 8 * 1024**2


def _whole(name: str, value: object, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise CommlabError(f"{name} must be a whole number >= {low}, got {value!r}")
    return value


@dataclass(frozen=True)
class BenchConfig:
    """One nccl-tests-style sweep: sizes min, min*factor, ... up to max (inclusive), each timed out of
    place and, where the collective has one, in place."""

    op: str
    """Collective; nccl-tests spellings accepted (``alltoall``), stored canonical (``all_to_all``)."""
    min_nbytes: int = DEFAULT_MIN_NBYTES
    """``-b``: the first size in bytes (what nccl-tests calls the size; see commlab.collectives). A string
    such as ``"64M"`` is parsed with commlab.units.parse_nbytes (bare K/M/G binary, as nccl-tests)."""
    max_nbytes: int = DEFAULT_MAX_NBYTES
    """``-e``: the last size in bytes, included when the sizes reach it."""
    factor: int = 2
    """``-f``: each size is the previous one times this whole number (> 1)."""
    iters: int = 20
    """``-n``: timed iterations per size and variant; the time is their mean."""
    warmup: int = 5
    """``-w``: untimed iterations at the largest and at the smallest size before the sweep."""
    check: bool = True
    """``-c``: check each result against the numpy reference and count wrong elements (``#wrong``)."""
    dtype: str = "float"
    """``-d``: float, half, bfloat16 or double."""
    redop: str = "sum"
    """``-o``: sum, prod, min or max (reductions only; others print ``none``)."""
    root: int = 0
    """``-r``: root rank of broadcast and reduce."""

    def __post_init__(self) -> None:
        from commlab.collectives import canonical
        from commlab.units import parse_nbytes

        try:
            name = canonical(self.op)
        except CommlabError:
            name = self.op
        check_choice("collective for commlab bench", name, BENCH_OPS)
        object.__setattr__(self, "op", name)
        for field_name in ("min_nbytes", "max_nbytes"):
            if isinstance(getattr(self, field_name), str):  # "64M" as nccl-tests' -b/-e take it
                object.__setattr__(self, field_name, parse_nbytes(getattr(self, field_name)))
        _whole("min_nbytes (-b)", self.min_nbytes, 1)
        _whole("max_nbytes (-e)", self.max_nbytes, 1)
        if self.min_nbytes > self.max_nbytes:
            raise CommlabError(f"min_nbytes (-b) must be <= max_nbytes (-e), got -b {self.min_nbytes} "
                               f"-e {self.max_nbytes}")
        _whole("factor (-f)", self.factor, 2)
        _whole("iters (-n)", self.iters, 1)
        _whole("warmup (-w)", self.warmup, 0)
        _whole("root (-r)", self.root, 0)
        if not isinstance(self.check, bool):
            raise CommlabError(f"check (-c) must be True or False, got {self.check!r}")
        check_choice("data type (-d)", self.dtype, tuple(DTYPES))
        check_choice("reduction (-o)", self.redop, REDOPS)

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype][1]

    def sizes_nbytes(self) -> list[int]:
        """min, min*f, min*f^2, ... while <= max (nccl-tests' size loop)."""
        sizes, size = [], self.min_nbytes
        while size <= self.max_nbytes:
            sizes.append(size)
            size *= self.factor
        return sizes

    def check_ranks(self, n_ranks: int) -> None:
        """Refuse what cannot run on ``n_ranks`` ranks (a root outside the group, sendrecv alone)."""
        if self.root >= n_ranks:
            raise CommlabError(f"root (-r) must be a rank from 0 to {n_ranks - 1}, got {self.root}")
        if self.op == "sendrecv" and n_ranks < 2:
            raise CommlabError("sendrecv needs at least 2 ranks (each rank sends to the next), got 1")

    def preamble(self) -> dict:
        """The ``# nThread ...`` fields of the nccl-tests table (commlab.nccl.format_table)."""
        return {"min_bytes": self.min_nbytes, "max_bytes": self.max_nbytes, "step": f"{self.factor}(factor)",
                "warmup_iters": self.warmup, "iters": self.iters, "validation": int(self.check)}
