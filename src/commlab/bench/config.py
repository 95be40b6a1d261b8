"""What a sweep measures, checked before any rank starts (nccl-tests' flags, chapter 08 and the bandwidth
sweep lab).

Defaults follow nccl-tests (``-f 2 -n 20 -w 5 -c 1 -d float -o sum -r 0``) except the sizes: nccl-tests
defaults to 32 MiB only; commlab sweeps 8 B to 8 MiB by default (``-b 8 -e 8M``), which a CPU with gloo
covers in seconds and which spans the latency-bound and the bandwidth-bound regimes.

Sizes are read as nccl-tests' ``parsesize`` reads them (``src/common.cu``): a number with an optional K, M
or G in either case, binary (``-e 8m`` is 8 MiB, ``1g`` 1 GiB, ``1.5k`` 1536); other forms go to
:func:`commlab.units.parse_nbytes` (``64MiB``; ``1GB`` is decimal there, as everywhere in commlab).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from commlab.errors import CommlabError, check_choice

#: The collectives ``commlab bench`` runs (commlab's canonical names; ``alltoall`` is accepted too).
BENCH_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "sendrecv")
#: nccl-tests' type names -> (torch dtype attribute, bytes per element).
DTYPES = {"float": ("float32", 4), "half": ("float16", 2), "bfloat16": ("bfloat16", 2), "double": ("float64", 8)}
REDOPS = ("sum", "prod", "min", "max")
DEFAULT_MIN_NBYTES = 8
DEFAULT_MAX_NBYTES = 8 * 1024**2
#: The most sizes one sweep measures (``-i 1`` over a megabyte would be a million).
MAX_SIZES = 1000
_NCCL_SIZE = re.compile(r"^\s*((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([kKmMgG]?)\s*$")
_BINARY = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(text: str | int, flag: str = "size") -> int:
    """A size in bytes as nccl-tests' flags take it (see the module docstring).

    >>> parse_size("8m"), parse_size("1G"), parse_size("1.5k"), parse_size("64MiB"), parse_size("1GB")
    (8388608, 1073741824, 1536, 67108864, 1000000000)
    """
    from commlab.units import parse_nbytes

    if isinstance(text, int) and not isinstance(text, bool):
        return text
    match = _NCCL_SIZE.match(str(text))
    if match is None:
        try:
            return parse_nbytes(text)
        except CommlabError:
            raise CommlabError(f"{flag} must be a size such as 8, 64K, 8m, 1G (binary, as nccl-tests) or 1.5GiB, "
                               f"got {text!r}") from None
    return int(float(match.group(1)) * _BINARY[match.group(2).lower()])


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
    """``-f``: each size is the previous one times this whole number (> 1), unless ``step_nbytes`` is set."""
    iters: int = 20
    """``-n``: timed iterations per size and variant; the time is their mean."""
    warmup: int = 5
    """``-w``: untimed iterations at the largest and at the smallest size before the sweep."""
    check: int = 1
    """``-c``: how many checked iterations per size and variant (nccl-tests' check iteration count): each runs
    on fresh inputs and counts the elements that differ from the numpy reference (``#wrong``); it stops at the
    first with errors. 0 turns checking off (``N/A``). True and False mean 1 and 0."""
    dtype: str = "float"
    """``-d``: float, half, bfloat16 or double."""
    redop: str = "sum"
    """``-o``: sum, prod, min or max (reductions only; others print ``none``)."""
    root: int = 0
    """``-r``: root rank of broadcast and reduce."""
    step_nbytes: int | None = None
    """``-i``: sizes grow by this many bytes instead of by ``factor`` (nccl-tests' stepbytes)."""

    def __post_init__(self) -> None:
        from commlab.collectives import canonical
        try:
            name = canonical(self.op)
        except CommlabError:
            name = self.op
        check_choice("collective for commlab bench", name, BENCH_OPS)
        object.__setattr__(self, "op", name)
        for field_name, flag in (("min_nbytes", "-b"), ("max_nbytes", "-e"), ("step_nbytes", "-i")):
            if isinstance(getattr(self, field_name), str):  # "64M" as nccl-tests' -b/-e/-i take it
                object.__setattr__(self, field_name, parse_size(getattr(self, field_name), flag))
        _whole("min_nbytes (-b)", self.min_nbytes, 1)
        _whole("max_nbytes (-e)", self.max_nbytes, 1)
        if self.min_nbytes > self.max_nbytes:
            raise CommlabError(f"min_nbytes (-b) must be <= max_nbytes (-e), got -b {self.min_nbytes} "
                               f"-e {self.max_nbytes}")
        _whole("factor (-f)", self.factor, 2)
        _whole("iters (-n)", self.iters, 1)
        _whole("warmup (-w)", self.warmup, 0)
        _whole("root (-r)", self.root, 0)
        if isinstance(self.check, bool):
            object.__setattr__(self, "check", int(self.check))
        _whole("check iterations (-c)", self.check, 0)
        if self.step_nbytes is not None:
            _whole("step bytes (-i)", self.step_nbytes, 1)
        count = len(self.sizes_nbytes(limit=MAX_SIZES + 1))
        if count > MAX_SIZES:
            step = f"-i {self.step_nbytes}" if self.step_nbytes else f"-f {self.factor}"
            raise CommlabError(f"-b {self.min_nbytes} -e {self.max_nbytes} {step} gives more than {MAX_SIZES} sizes; "
                               "take a larger step or a narrower range")
        check_choice("data type (-d)", self.dtype, tuple(DTYPES))
        check_choice("reduction (-o)", self.redop, REDOPS)

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype][1]

    def sizes_nbytes(self, limit: int | None = None) -> list[int]:
        """min, min*f, min*f^2, ... (or min, min+i, min+2i, ... with ``step_nbytes``) while <= max
        (nccl-tests' size loop in ``TimeTest``); at most ``limit`` of them."""
        sizes: list[int] = []
        size = self.min_nbytes
        while size <= self.max_nbytes and (limit is None or len(sizes) < limit):
            sizes.append(size)
            size = size + self.step_nbytes if self.step_nbytes else size * self.factor
        return sizes

    def check_ranks(self, n_ranks: int) -> None:
        """Refuse what cannot run on ``n_ranks`` ranks (a root outside the group, sendrecv alone)."""
        if self.root >= n_ranks:
            raise CommlabError(f"root (-r) must be a rank from 0 to {n_ranks - 1}, got {self.root}")
        if self.op == "sendrecv" and n_ranks < 2:
            raise CommlabError("sendrecv needs at least 2 ranks (each rank sends to the next), got 1")

    def preamble(self) -> dict:
        """The ``# nThread ...`` fields of the nccl-tests table (commlab.nccl.format_table)."""
        step = f"{self.step_nbytes}(bytes)" if self.step_nbytes else f"{self.factor}(factor)"
        return {"min_bytes": self.min_nbytes, "max_bytes": self.max_nbytes, "step": step,
                "warmup_iters": self.warmup, "iters": self.iters, "validation": self.check}
