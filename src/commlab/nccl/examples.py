"""The real logs shipped with commlab (``commlab/data/nccl``), for the book, the labs and the tests.

* ``nccl-tests/``: the 23 published nccl-tests runs of ``shared/fixtures/nccl-tests`` (copied unchanged; each
  file's ``# source:`` line names the repository, commit and path it comes from);
* ``nccl_debug_*.log``: NCCL_DEBUG=INFO excerpts from public GitHub issue threads (``# source:`` line).
"""
from __future__ import annotations

from pathlib import Path

from commlab.errors import CommlabError

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "nccl"


def nccl_tests_logs() -> list[Path]:
    """The nccl-tests fixtures, in their numbered order."""
    return sorted((DATA_DIR / "nccl-tests").glob("*.txt"))


def debug_logs() -> list[Path]:
    """The NCCL_DEBUG=INFO logs."""
    return sorted(DATA_DIR.glob("nccl_debug_*.log"))


def nccl_tests_log(key: str | int) -> Path:
    """One fixture by number (``7`` or ``"07"``) or by a unique part of its name (``"H100-p5-NVSwitch"``)."""
    logs = nccl_tests_logs()
    if isinstance(key, int) or str(key).isdigit():
        found = [p for p in logs if p.name.startswith(f"{int(key):02d}_")]
    else:
        found = [p for p in logs if str(key) in p.name]
    if len(found) != 1:
        names = ", ".join(p.name for p in logs)
        raise CommlabError(f"no single nccl-tests log matches {key!r} ({len(found)} do); the logs are: {names}")
    return found[0]
