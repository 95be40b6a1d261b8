"""What a sweep returns: the rows of an nccl-tests table, with the table and the JSON of ``commlab bench``.

A sweep that stopped early (Ctrl-C, a failed rank, the timeout) still returns the rows it measured, marked
partial: ``partial`` says why, the table says so in a ``# partial:`` line, the JSON in a ``"partial"`` key.
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.bench.config import BenchConfig
from commlab.nccl.records import Row

#: nccl-tests fails a run whose average busbw is under 90 % of ``$NCCL_TESTS_MIN_BW`` (``src/common.cu``,
#: ``bw[0] < check_avg_bw*(0.9)``).
MIN_BW_FRACTION = 0.9


def version_line(backend: str) -> str:
    """The first line of the output. nccl-tests names its version and NCCL's (``# nccl-tests version 2.19.6
    nccl-headers=22807 nccl-library=22807``, ``writeDeviceReport`` in ``src/util.cu``); commlab names its own
    and torch's, and NCCL's (``NCCL_VERSION_CODE``: major*10000 + minor*100 + patch) when NCCL ran."""
    import torch

    from commlab import __version__

    line = f"# commlab version {__version__} torch={torch.__version__}"
    if backend == "nccl":
        major, minor, patch = torch.cuda.nccl.version()[:3]
        line += f" nccl-library={major * 10000 + minor * 100 + patch}"
    return line


@dataclass(frozen=True)
class BenchResult:
    """One sweep: ``rows`` (commlab.nccl.records.Row), and how it was run."""

    op: str
    n_ranks: int
    backend: str
    dtype: str
    rows: tuple[Row, ...]
    config: BenchConfig
    devices: tuple = ()
    """One description per rank (pid, host, device, name) for the table's ``# Using devices`` lines."""
    version_line: str = ""
    """The output's first line (:func:`version_line`)."""
    partial: str | None = None
    """Why the sweep stopped before its last size; None for a complete sweep."""

    @property
    def n_sizes(self) -> int:
        return len(self.config.sizes_nbytes())

    @property
    def wrong(self) -> int:
        """Measurements with wrong elements (nccl-tests' ``Out of bounds values``)."""
        from commlab.nccl.format import out_of_bounds

        return out_of_bounds(self.rows)

    @property
    def avg_busbw_GBps(self) -> float:
        from commlab.nccl.format import avg_busbw_GBps

        return avg_busbw_GBps(self.rows)

    def below_min_bw(self, min_busbw_GBps: float | None) -> bool:
        """True when the average busbw is under 90 % of ``min_busbw_GBps`` (nccl-tests' NCCL_TESTS_MIN_BW)."""
        return min_busbw_GBps is not None and self.avg_busbw_GBps < min_busbw_GBps * MIN_BW_FRACTION

    def partial_line(self) -> str | None:
        if self.partial is None:
            return None
        return f"# partial: {self.partial}; {len(self.rows)} of {self.n_sizes} sizes measured"

    def table(self, min_busbw_GBps: float | None = None) -> str:
        """The nccl-tests text (commlab.nccl.format_table), which commlab.nccl.parse_log reads back.
        ``min_busbw_GBps`` (NCCL_TESTS_MIN_BW) adds nccl-tests' OK / FAILED to the average busbw."""
        from commlab.nccl.format import format_table

        return format_table(self.op, self.n_ranks, list(self.rows), preamble=self.config.preamble(),
                            devices=list(self.devices) or None, first_line=self.version_line or None,
                            note=self.partial_line(), min_busbw_GBps=min_busbw_GBps)

    def to_json(self) -> dict:
        """``{"op", "n_ranks", "backend", "dtype", "rows": [Row.to_json(), ...]}`` (``commlab bench --json``),
        and ``"partial"`` (why it stopped) for a sweep that did not finish."""
        out = {"op": self.op, "n_ranks": self.n_ranks, "backend": self.backend, "dtype": self.dtype,
               "rows": [row.to_json() for row in self.rows]}
        partial = self.partial_line()
        if partial is not None:
            out["partial"] = partial.removeprefix("# partial: ")
        return out

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        tail = f", partial: {self.partial}" if self.partial else ""
        return (f"BenchResult(op={self.op!r}, n_ranks={self.n_ranks}, backend={self.backend!r}, "
                f"dtype={self.dtype!r}, {len(self.rows)} rows{tail}; .table() prints them)")
