"""The constants of the cost models that no primary source gives: each value, what it is, the runs it was chosen
on, the runs it was checked on, and what sources say about it, in one data table (``commlab/data/calibration.csv``).

The modules that use a constant read its value here (:func:`value`), so the table is its one home; the scorecard
reads the runs a constant was chosen on, and ``benchmarks/README.md`` shows the table as :func:`markdown` writes
it. A constant a primary source gives (a line of NCCL's source, a data sheet) stays in its module with that line.

>>> entry("SHM_TWO_WAY_GBPS").unit, value("SHM_TWO_WAY_GBPS"), entry("TCPXO_HOP_US").runs
('GB/s', 3.87, ('calibration/a3mega_tcpxo_all_gather_16r.txt',))
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources

from commlab.errors import CommlabError

#: the table's path inside the package
TABLE = "data/calibration.csv"


@dataclass(frozen=True)
class Calibrated:
    """One row of the table."""

    name: str
    value: str
    """As written in the table: a number, a version (``2.12``) or names joined by ``+``."""
    unit: str
    module: str
    """Where the constant is used (and named)."""
    what: str
    runs: tuple[str, ...]
    """The runs it was chosen on, as the code finds them: shipped log numbers (``06``) or paths under
    ``commlab/data/nccl/``; names of public runs that are not shipped otherwise."""
    chosen_on: str
    checked_on: str
    source: str


@lru_cache(maxsize=1)
def table() -> tuple[Calibrated, ...]:
    """Every row, in the table's order."""
    text = resources.files("commlab").joinpath(TABLE).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    names = [f.name for f in fields(Calibrated)]
    if not rows or list(rows[0]) != names:
        raise CommlabError(f"{TABLE} must have the columns {', '.join(names)}")
    return tuple(Calibrated(name=row["name"], value=row["value"], unit=row["unit"], module=row["module"],
                            what=row["what"], runs=tuple(row["runs"].split("+")), chosen_on=row["chosen_on"],
                            checked_on=row["checked_on"], source=row["source"]) for row in rows)


def entry(name: str) -> Calibrated:
    """The row of ``name``; CommlabError naming the constants the table holds."""
    for row in table():
        if row.name == name:
            return row
    raise CommlabError(f"{TABLE} has no constant {name!r}; it has {', '.join(r.name for r in table())}")


def value(name: str) -> float:
    """The value of a numeric constant."""
    return float(entry(name).value)


def markdown() -> str:
    """The table as ``benchmarks/README.md`` shows it (one row per constant)."""
    lines = ["| constant | value | chosen on | checked on | source |", "| --- | --- | --- | --- | --- |"]
    for row in table():
        lines.append(f"| `{row.module}.{row.name}`: {row.what} | {row.value} {row.unit} | {row.chosen_on} | "
                     f"{row.checked_on} | {row.source} |")
    return "\n".join(lines) + "\n"
