"""What a sweep returns: the rows of an nccl-tests table, with the table and the JSON of ``commlab bench``."""
from __future__ import annotations

from dataclasses import dataclass

from commlab.bench.config import BenchConfig
from commlab.nccl.records import Row


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

    def table(self) -> str:
        """The nccl-tests text (commlab.nccl.format_table), which commlab.nccl.parse_log reads back."""
        from commlab.nccl.format import format_table

        return format_table(self.op, self.n_ranks, list(self.rows), preamble=self.config.preamble(),
                            devices=list(self.devices) or None)

    def to_json(self) -> dict:
        """``{"op", "n_ranks", "backend", "dtype", "rows": [Row.to_json(), ...]}`` (``commlab bench --json``)."""
        return {"op": self.op, "n_ranks": self.n_ranks, "backend": self.backend, "dtype": self.dtype,
                "rows": [row.to_json() for row in self.rows]}

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (f"BenchResult(op={self.op!r}, n_ranks={self.n_ranks}, backend={self.backend!r}, "
                f"dtype={self.dtype!r}, {len(self.rows)} rows; .table() prints them)")
