"""NCCL settings a run forces (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, NCCL_TREE_THRESHOLD), read as NCCL reads
them, and found in a log's text.

NCCL_ALGO and NCCL_PROTO are lists in NCCL's ``parseList`` syntax (NVIDIA/nccl src/graph/tuning.cc:36-130):
``Ring``, ``Ring,Tree``, ``^NVLS`` (all but), and per function ``LL,Simple;allreduce:^LL``; names and functions
match case-insensitively. Only the enabled (algorithm, protocol) pairs are candidates (tuning.cc:452-460, 540).
One rule that matters: any NCCL_PROTO a function is given sets LL128 on (1) or off (0) outright, so
``NCCL_PROTO=^LL`` turns LL128 on even where NCCL's default (2) would leave it off (no NVLink; tuning.cc:446,
518-537). A call for which nothing is left fails (enqueue.cc:2063, ncclInvalidUsage).

Inside a ``--machine`` description commas separate fields, so a list there is written with ``+``
(``proto=LL128+Simple``); both ``+`` and ``,`` are accepted here.

>>> on = enabled_names("LL,Simple;allreduce:^LL", PROTO_NAMES, "protocol")
>>> sorted(on["all_reduce"]), sorted(on["broadcast"])
(['LL128', 'Simple'], ['LL', 'Simple'])
>>> forced_settings("mpirun -np 16 -x NCCL_ALGO=Ring -x NCCL_PROTO=Simple ./build/all_reduce_perf -b 8 -e 8G")
{'NCCL_ALGO': 'Ring', 'NCCL_PROTO': 'Simple'}
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from commlab.errors import CommlabError

if TYPE_CHECKING:                                              # machine.py imports this module
    from commlab.tuner.machine import Machine

#: ncclAlgoStr and ncclProtoStr, NVIDIA/nccl src/init.cc:53-55 (NCCL's names, in its order)
ALGO_NAMES = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTO_NAMES = ("LL", "LL128", "Simple")
#: ncclFuncStr (init.cc:52), the prefixes of parseList, and commlab's names of those collectives
FUNCTIONS = MappingProxyType({"Broadcast": "broadcast", "Reduce": "reduce", "AllGather": "all_gather",
                              "ReduceScatter": "reduce_scatter", "AllReduce": "all_reduce"})
#: the variables :func:`forced_settings` reads
VARIABLES = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_TREE_THRESHOLD")


#: NCCL up to 2.12 had one "CollNet" algorithm (v2.12.7-1 src/init.cc:42), since split into these two
OLD_ALGO_NAMES = MappingProxyType({"collnet": ("CollNetDirect", "CollNetChain")})


def _match(token: str, names, what: str, spec: str) -> tuple[str, ...]:
    for name in names:
        if token.lower() == name.lower():                     # strcasecmp, tuning.cc:93 and 101
            return (name,)
    if names == ALGO_NAMES and token.lower() in OLD_ALGO_NAMES:
        return OLD_ALGO_NAMES[token.lower()]
    raise CommlabError(f"unknown {what} {token!r} in {spec!r}; NCCL accepts: {', '.join(names)}")


def enabled_names(spec: str, names: tuple[str, ...], what: str) -> dict[str, frozenset[str]]:
    """parseList (tuning.cc:55-130): per collective (commlab's name) that the list sets, the names it enables.
    A collective the list leaves alone is absent: NCCL's defaults hold for it."""
    text = str(spec).replace("+", ",")
    out: dict[str, frozenset[str]] = {}
    entries = [e for e in text.split(";") if e]               # strtok_r skips empty tokens
    for i, entry in enumerate(entries):
        prefix, sep, items = entry.partition(":")
        if not sep:
            if i:
                raise CommlabError(f"in {spec!r} every entry but the first needs a 'function:' prefix, as NCCL "
                                   f"requires (tuning.cc:68-75); the functions: {', '.join(FUNCTIONS)}")
            prefix, items = "", entry
        exclude = items.startswith("^")
        chosen = {n for t in items.lstrip("^").split(",") if t.strip() for n in _match(t.strip(), names, what, spec)}
        kept = frozenset(n for n in names if (n in chosen) != exclude)
        funcs = list(_match(prefix.strip(), tuple(FUNCTIONS), "function", spec) if prefix.strip() else FUNCTIONS)
        out.update({FUNCTIONS[f]: kept for f in funcs})
    return out


def canonical(spec: str | None, names: tuple[str, ...], what: str) -> str | None:
    """``spec`` checked (unknown names raise, naming the accepted ones) and written with ``+`` for ``,``."""
    if spec is None:
        return None
    text = re.sub(r"\s+", "", str(spec)).replace(",", "+")
    if not text.strip(";"):
        raise CommlabError(f"an empty {what} list means NCCL's defaults; leave the field out instead of "
                           f"{spec!r}")
    enabled_names(text, names, what)
    return text


# -- a log's text --------------------------------------------------------------------------------------------------
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


def _int_setting(settings: Mapping[str, str], name: str) -> int | None:
    try:
        return int(str(settings[name]).strip(), 0) if name in settings else None
    except ValueError:                                         # NCCL warns and keeps its default (param.cc)
        return None


def apply_forced(machine: Machine, settings: Mapping[str, str]) -> Machine:
    """``machine`` with what ``settings`` (:func:`forced_settings`) forces; a field the description gives wins.

    NCCL_ALGO / NCCL_PROTO become ``algo`` / ``proto``; NCCL_NVLS_ENABLE=0 turns NVLS off (nvls.cc:159, 262);
    NCCL_TREE_THRESHOLD=0 (NCCL 2.4: Tree only up to the threshold, enqueue.cu:236; ignored since 2.5) becomes
    ``algo=^Tree`` unless NCCL_ALGO is set. Other thresholds cannot be expressed and are left alone."""
    unknown = sorted(set(settings) - set(VARIABLES))
    if unknown:
        raise CommlabError(f"apply_forced knows {', '.join(VARIABLES)}; got {', '.join(unknown)}")
    changes: dict = {}
    algo = settings.get("NCCL_ALGO")
    if algo is None and _int_setting(settings, "NCCL_TREE_THRESHOLD") == 0:
        algo = "^Tree"
    if machine.algo is None and algo:
        changes["algo"] = algo
    if machine.proto is None and settings.get("NCCL_PROTO"):
        changes["proto"] = settings["NCCL_PROTO"]
    if machine.nvls is None and _int_setting(settings, "NCCL_NVLS_ENABLE") == 0:
        changes["nvls"] = False
    try:
        return replace(machine, **changes) if changes else machine
    except CommlabError as err:
        shown = ", ".join(f"{k}={v}" for k, v in settings.items())
        raise CommlabError(f"the log sets {shown}: {err}") from None


def machine_for_log(machine: Machine | None, text: str) -> tuple[Machine | None, str]:
    """``machine`` with what the log's text forces (:func:`forced_settings`, :func:`apply_forced`), and a note
    saying what was applied and whether the log's NCCL is older than the model follows (:func:`version_note`);
    "" when there is nothing to say, or no machine."""
    if machine is None:
        return None, ""
    settings = forced_settings(text)
    forced = apply_forced(machine, settings) if settings else machine
    notes = [version_note(text)]
    if forced != machine:
        shown = ", ".join(f"{k}={v}" for k, v in settings.items())
        notes.insert(0, f"the log sets {shown}: NCCL considers only what it leaves on ({forced.describe()})")
    return forced, "; ".join(n for n in notes if n)


#: The NCCL version whose tuner the predictive model replays (commlab.tuner.nccl_constants), and the oldest it is
#: held to: older releases tune and run differently (before 2.8 a misaligned block is copied element by element,
#: fixture 23; held-out AWS EFA runs on NCCL 2.8 and 2.4 are 1.4-2.5x slower than the same instances on current
#: software, shipped log 08).
REPLAYED_VERSION = (2, 30)
OLDEST_CLOSE_VERSION = (2, 12)
_VERSION_TEXT = re.compile(r"NCCL version:?\s+(\d+)\.(\d+)\.(\d+)|nccl-library=(\d{4,6})|NCCL version:\s+(\d{4,6})")


def nccl_version(text: str) -> tuple[int, int, int] | None:
    """The NCCL version a log names: ``NCCL version 2.18.3+cuda12.2`` (NCCL's own line), ``nccl-library=22903``
    (nccl-tests 2.17's header) or ``NCCL version: 22602`` (NCCL_VERSION_CODE, major*10000 + minor*100 + patch,
    nccl.h); None when it names none. The last one in the text wins.

    >>> nccl_version("h:1:1 [0] NCCL INFO NCCL version 2.8.3+cuda11.2"), nccl_version("nccl-library=22903")
    ((2, 8, 3), (2, 29, 3))
    """
    found = None
    for m in _VERSION_TEXT.finditer(text):
        if m.group(1):
            found = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        else:
            code = int(m.group(4) or m.group(5))
            found = (code // 10000, code // 100 % 100, code % 100)
    return found


def version_note(text: str) -> str:
    """A note when the log's NCCL is older than :data:`OLDEST_CLOSE_VERSION` ("" otherwise)."""
    v = nccl_version(text)
    if v is None or v[:2] >= OLDEST_CLOSE_VERSION:
        return ""
    return (f"the log's NCCL {'.'.join(map(str, v))} predates {'.'.join(map(str, OLDEST_CLOSE_VERSION))}: the model "
            f"replays NCCL {'.'.join(map(str, REPLAYED_VERSION))}'s tuner, whose choices and speeds an NCCL this old "
            "may not share (NVLS, PAT and today's per-architecture caps came later)")
