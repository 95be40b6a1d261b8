"""The real logs shipped with commlab (``commlab/data/nccl``), for the book, the labs and the tests.

* ``nccl-tests/``: 23 published nccl-tests runs (copied unchanged from public repositories; each
  file's ``# source:`` line names the repository, commit and path it comes from);
* ``nccl_debug_*.log``: NCCL_DEBUG=INFO excerpts from public GitHub issue threads (``# source:`` line);
* ``roofs.json``: for each nccl-tests fixture, the link that is its busbw roof and why
  (:func:`fixture_link`, :func:`fixture_roof`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
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


@dataclass(frozen=True)
class FixtureRoof:
    """The link a fixture's busbw is judged against (``None``: no single catalogue link), and why."""

    number: int
    link: str | None
    why: str


def fixture_roof(key: str | int) -> FixtureRoof:
    """The roof of one nccl-tests fixture (key as in :func:`nccl_tests_log`), from ``roofs.json``.

    Each entry's ``why`` names what in the fixture's ``# hardware:`` line chose the link; multi-node runs and
    links missing from :mod:`commlab.hardware` have ``link`` None.
    """
    number = int(nccl_tests_log(key).name[:2])
    roofs = json.loads((DATA_DIR / "roofs.json").read_text(encoding="utf-8"))["roofs"]
    entry = roofs.get(f"{number:02d}")
    if entry is None:
        raise CommlabError(f"nccl-tests log {number:02d} has no entry in {DATA_DIR / 'roofs.json'}; "
                           f"the entries are: {', '.join(sorted(roofs))}")
    return FixtureRoof(number, entry["link"], entry["why"])


def fixture_link(key: str | int) -> str | None:
    """The commlab.hardware link name that is a fixture's roof (``fixture_link(7) == "nvswitch3"``), or None."""
    return fixture_roof(key).link
