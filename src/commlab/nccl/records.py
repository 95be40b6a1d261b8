"""One row of an nccl-tests table, shared by the log reader (:mod:`commlab.nccl.parse`), the table writer
(:mod:`commlab.nccl.format`) and commlab's own benchmark (:mod:`commlab.bench`).

The keys are the JSON contract of ``commlab bench --json`` and ``commlab nccl-tests --json``: a row has
``size_bytes``, ``count``, ``type``, ``redop``, ``root`` and, under ``oop`` and ``ip``, ``time_us``,
``algbw_GBps``, ``busbw_GBps`` and ``wrong`` (``ip`` absent where the collective has no in-place form).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Measure:
    """One timed variant (out-of-place or in-place) of one size."""

    time_us: float
    """Mean time of one iteration in microseconds."""
    algbw_GBps: float
    """size_bytes / time, in 1e9 bytes per second (nccl-tests' algbw)."""
    busbw_GBps: float
    """algbw times the collective's bus factor F(n) (nccl-tests' busbw)."""
    wrong: int | None
    """Elements that differ from the reference (`#wrong`); None where checking was off (`N/A`)."""


@dataclass(frozen=True)
class Row:
    """One size of a sweep, as nccl-tests prints it."""

    size_bytes: int
    """The `size` column: what algbw divides (nccl-tests' doc/PERFORMANCE.md, per collective)."""
    count: int
    """Elements per rank, as nccl-tests' `count` column."""
    type: str
    """Data type as nccl-tests names it: float, half, bfloat16, double, ..."""
    redop: str
    """Reduction op (sum, ...) or "none" for data movement."""
    root: int
    """Root rank for rooted collectives, -1 otherwise."""
    oop: Measure
    """Out-of-place measurement."""
    ip: Measure | None = None
    """In-place measurement; None where the collective has no in-place form."""

    @property
    def fastest(self) -> Measure:
        """The faster of the two timings of this size (out-of-place, or in-place where the collective has one).

        nccl-tests times every size twice, each the mean of ``iters`` runs of the same collective on the same
        bytes; a disturbance (another process, a network retransmit, a page fault, a clock change) inflates one
        of them, and a single inflated row is common in published multi-node logs (8 B at 68.5 us beside
        24.7 us). The minimum of repeated timings is the estimate least affected by such noise: "the min() of
        the result is probably the only number you should be interested in" (Python's ``timeit`` documentation,
        docs.python.org/3/library/timeit.html, ``Timer.repeat``). commlab's models are fitted to and scored
        against this time."""
        ip = self.ip
        if ip is None or not ip.time_us > 0 or (self.oop.time_us > 0 and ip.time_us >= self.oop.time_us):
            return self.oop
        return ip

    @property
    def fastest_column(self) -> str:
        """``"out_of_place"`` or ``"in_place"``: which timing :attr:`fastest` is."""
        return "out_of_place" if self.fastest is self.oop else "in_place"

    def to_json(self) -> dict:
        """The row as the JSON object of the CLI contract (``ip`` left out when absent)."""
        out = asdict(self)
        if self.ip is None:
            del out["ip"]
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Row:
        ip = obj.get("ip")
        return cls(
            size_bytes=int(obj["size_bytes"]), count=int(obj["count"]), type=str(obj["type"]),
            redop=str(obj["redop"]), root=int(obj["root"]), oop=Measure(**obj["oop"]),
            ip=Measure(**ip) if ip is not None else None,
        )
