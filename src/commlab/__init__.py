"""commlab: the package behind the commlab book on GPU cluster communication.

Pure layer (numpy and matplotlib only): units, hardware, output, collectives, schedules, cost, fabric, cluster,
overlap, parallelism, exercises, nccl, viz, book. Live layer (torch.distributed, pynvml): launch, bench, p2p,
topology, measure, compat, labs. The command line: cli. Importing the package imports nothing heavy; import the
submodule you need (docs/architecture.md has the map).

The version is written once, in pyproject.toml; ``commlab.__version__`` reads it back from the installed
package's metadata (:mod:`importlib.metadata`), or from pyproject.toml itself when ``src/`` is used without
installing (a cluster image that puts ``src`` on ``PYTHONPATH``).

>>> import commlab
>>> commlab.__version__.count(".") >= 2
True
"""
from __future__ import annotations

import sys
from pathlib import Path

DIST_NAME = "commlab"


def _source_tree_version() -> str | None:
    """The version in the pyproject.toml next to ``src/commlab``, when this is a source checkout."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return None
    return project.get("version") if project.get("name") == DIST_NAME else None


def _version() -> str:
    """commlab's version: the source checkout's pyproject.toml when running from one, else the installed
    distribution's metadata, else "0+unknown"."""
    from importlib import metadata

    found = _source_tree_version()
    if found:
        return found
    try:
        return metadata.version(DIST_NAME)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> str:
    # PEP 562: computed on first use, so `import commlab` reads no metadata
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'commlab' has no attribute {name!r}")
