"""The NCCL settings a run's log shows: NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE and NCCL_TREE_THRESHOLD as its
command lines and NCCL's INFO lines set them, and the NCCL version it names.

What the settings mean to NCCL's tuner (the list syntax, applying them to a machine) is
:mod:`commlab.tuner.settings`.

>>> forced_settings("mpirun -np 16 -x NCCL_ALGO=Ring -x NCCL_PROTO=Simple ./build/all_reduce_perf -b 8 -e 8G")
{'NCCL_ALGO': 'Ring', 'NCCL_PROTO': 'Simple'}
"""
from __future__ import annotations

import re

from commlab.errors import CommlabError
from commlab.tuner.settings import VARIABLES


#: the NCCL version a log names: ``NCCL version 2.18.3+cuda12.2`` (NCCL's own line, group ``text``; also read
#: with a colon or more spaces, group ``dotted``), ``NCCL version: 22602`` (NCCL_VERSION_CODE, group ``code``)
#: and ``nccl-library=22903`` (nccl-tests 2.17's header, group ``library``)
VERSION_PATTERN = re.compile(r"NCCL version(?: (?P<text>\S+)|:?\s+(?P<dotted>\d+\.\d+\.\d+)|:\s+(?P<code>\d{4,6}))"
                      r"|nccl-library=(?P<library>\d{4,6})")
_DOTTED = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_NAMES = "|".join(VARIABLES)
_VALUE = r"""(?:"(?P<q1>[^"]*)"|'(?P<q2>[^']*)'|(?P<bare>[^\s"';|&]*))"""
_INFO = re.compile(rf"(?P<name>{_NAMES}) set by environment to (?P<bare>\S*)")    # NCCL's INFO line
_PATTERNS = (
    re.compile(rf"(?<![\w$])(?P<name>{_NAMES})={_VALUE}"),                          # X=v, -x X=v, export X=v
    re.compile(rf"(?:-genv|-env|setenv)\s+(?P<name>{_NAMES})\s+{_VALUE}"),       # mpich/Intel MPI, csh
    re.compile(rf"environ\[[\"'](?P<name>{_NAMES})[\"']\]\s*=\s*{_VALUE}"),       # Python os.environ[..] =
    re.compile(rf"name:\s*[\"']?(?P<name>{_NAMES})[\"']?\s*\n\s*value:\s*{_VALUE}"),  # Kubernetes env: entry
    _INFO,
)
_UNSET = re.compile(rf"\bunset\s+(?P<name>{_NAMES})\b")


def _value(m: re.Match) -> str:
    raw = next((m.group(g) for g in ("q1", "q2", "bare") if g in m.re.groupindex and m.group(g)), "")
    raw = re.split(r",[A-Za-z_]\w*=", raw)[0]                 # srun --export=ALL,NCCL_ALGO=Ring,OTHER=1
    return raw.rstrip(".") if m.re is _INFO else raw          # param.cc:100 ends its INFO line with '.'


def forced_settings(text: str) -> dict[str, str]:
    """NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE and NCCL_TREE_THRESHOLD as a log sets them: command lines
    (``X=v cmd``, ``-x X=v``, ``export X=v``, ``-genv X v``, ``os.environ["X"] = v``, a Kubernetes ``- name: X``
    / ``value: v`` entry, ``# command:`` comments) and NCCL's ``X set by
    environment to v`` INFO lines. The last assignment in the text wins; an empty value or ``unset X`` drops it.
    ``-x X`` alone (forward the caller's value) says nothing and is skipped."""
    if not isinstance(text, str):
        raise CommlabError(f"forced_settings reads a log's text (str), got {type(text).__name__}")
    found: list[tuple[int, str, str | None]] = []
    for pattern in _PATTERNS:
        found += [(m.start(), m.group("name"), _value(m)) for m in pattern.finditer(text)]
    found += [(m.start(), m.group("name"), None) for m in _UNSET.finditer(text)]
    out: dict[str, str] = {}
    for _, name, value in sorted(found, key=lambda f: f[0]):
        if value:
            out[name] = value
        else:
            out.pop(name, None)
    return out


def nccl_version(text: str) -> tuple[int, int, int] | None:
    """The NCCL version a log names: ``NCCL version 2.18.3+cuda12.2`` (NCCL's own line), ``nccl-library=22903``
    (nccl-tests 2.17's header) or ``NCCL version: 22602`` (NCCL_VERSION_CODE, major*10000 + minor*100 + patch,
    nccl.h); None when it names none. The last one in the text wins.

    >>> nccl_version("h:1:1 [0] NCCL INFO NCCL version 2.8.3+cuda11.2"), nccl_version("nccl-library=22903")
    ((2, 8, 3), (2, 29, 3))
    """
    found = None
    for m in VERSION_PATTERN.finditer(text):
        dotted = _DOTTED.match(m.group("text") or m.group("dotted") or "")
        if dotted:
            found = (int(dotted.group(1)), int(dotted.group(2)), int(dotted.group(3)))
        elif m.group("code") or m.group("library"):
            code = int(m.group("code") or m.group("library"))
            found = (code // 10000, code // 100 % 100, code % 100)
    return found
