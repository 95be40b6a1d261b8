"""NCCL's settings as NCCL reads them: NCCL_ALGO and NCCL_PROTO lists, the names of its algorithms, protocols
and collectives, and the few counts every part of the tuner shares (ring steps, NCCL's integer log2).

NCCL_ALGO and NCCL_PROTO are lists in NCCL's ``parseList`` syntax (NVIDIA/nccl src/graph/tuning.cc:36-130):
``Ring``, ``Ring,Tree``, ``^NVLS`` (all but), and per function ``LL,Simple;allreduce:^LL``; names and functions
match case-insensitively. Only the enabled (algorithm, protocol) pairs are candidates (tuning.cc:452-460, 540).
One rule that matters: any NCCL_PROTO a function is given sets LL128 on (1) or off (0) outright, so
``NCCL_PROTO=^LL`` turns LL128 on even where NCCL's default (2) would leave it off (no NVLink; tuning.cc:446,
518-537). A call for which nothing is left fails (enqueue.cc:2063, ncclInvalidUsage).

Inside a ``--machine`` description commas separate fields, so a list there is written with ``+``
(``proto=LL128+Simple``); both ``+`` and ``,`` are accepted here. Reading the settings out of a log's text is
:mod:`commlab.nccl.debuglog`'s job; :func:`apply_forced` applies what it found to a machine.

>>> on = enabled_names("LL,Simple;allreduce:^LL", PROTO_NAMES, "protocol")
>>> sorted(on["all_reduce"]), sorted(on["broadcast"])
(['LL128', 'Simple'], ['LL', 'Simple'])
>>> canonical_name("nvlstree", ALGO_NAMES, "algorithm"), ring_steps("all_reduce", 8), tuned_op("AllGather")
('NVLSTree', 14, 'all_gather')
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from commlab import calibration
from commlab.collectives import canonical as canonical_op
from commlab.errors import CommlabError
from commlab.tuner.nccl_constants import ALGO_NAMES, FUNCTIONS, NCCL_VERSION, OLD_ALGO_NAMES, PROTO_NAMES
from commlab.tuner.nccl_names import TUNED_OPS

if TYPE_CHECKING:                                              # machine.py imports this module
    from commlab.tuner.machine import Machine

__all__ = ["ALGO_NAMES", "PROTO_NAMES", "FUNCTIONS", "TUNED_OPS", "VARIABLES", "REPLAYED_VERSION",
           "OLDEST_CLOSE_VERSION", "LOG_SPELLINGS", "canonical_name", "name_in_log", "enabled_names", "canonical",
           "tuned_op", "ring_steps", "log2i", "apply_forced", "version_note"]

#: the variables :func:`apply_forced` knows (and :func:`commlab.nccl.debuglog.forced_settings` reads)
VARIABLES = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_TREE_THRESHOLD")
#: the NCCL version whose tuner commlab.tuner replays, as (major, minor)
REPLAYED_VERSION = tuple(int(x) for x in NCCL_VERSION.split(".")[:2])
#: the oldest NCCL the predictive model is held to: older releases tune and run differently (calibrated:
#: commlab/data/calibration.csv)
OLDEST_CLOSE_VERSION = tuple(int(x) for x in calibration.entry("OLDEST_CLOSE_VERSION").value.split("."))


def _matches(token: str, names: tuple[str, ...], what: str, spec: str | None = None) -> tuple[str, ...]:
    for name in names:
        if token.lower() == name.lower():                     # strcasecmp, tuning.cc:93 and 101
            return (name,)
    if set(OLD_ALGO_NAMES.get(token.lower(), ())) <= set(names) and token.lower() in OLD_ALGO_NAMES:
        return OLD_ALGO_NAMES[token.lower()]
    where = f" in {spec!r}" if spec is not None else ""
    raise CommlabError(f"unknown {what} {token!r}{where}; NCCL accepts: {', '.join(names)}")


#: how a log writes an algorithm NCCL's lists no longer name: up to 2.12 it printed its one CollNet algorithm as
#: "CollNet" (v2.12.7-1 src/init.cc:42), the algorithm since named CollNetDirect
LOG_SPELLINGS = MappingProxyType({"collnet": "CollNetDirect"})


def name_in_log(token: str, names: tuple[str, ...]) -> str | None:
    """NCCL's spelling of an algorithm or protocol name as a log prints it (``NVLS_TREE``, ``nvlstree``; case,
    ``_`` and spaces ignored, an old log's ``CollNet`` read by :data:`LOG_SPELLINGS`); None when it is none of
    ``names``. Unlike :func:`canonical_name` (NCCL's own reading of its variables) it never raises: a log's
    unknown word is not an error.

    >>> name_in_log("NVLS_Tree", ALGO_NAMES), name_in_log("CollNet", ALGO_NAMES), name_in_log("ll128 ", PROTO_NAMES)
    ('NVLSTree', 'CollNetDirect', 'LL128')
    """
    key = str(token).replace("_", "").replace(" ", "").lower()
    for name in names:
        if key == name.lower():
            return name
    old = LOG_SPELLINGS.get(key)
    return old if old in names else None


def canonical_name(token: str, names: tuple[str, ...], what: str) -> str:
    """NCCL's spelling of one algorithm, protocol or function name, matched case-insensitively as NCCL does."""
    found = _matches(str(token).strip(), names, what)
    if len(found) != 1:
        raise CommlabError(f"{what} {token!r} names {', '.join(found)}; give one of them")
    return found[0]


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
        chosen = {n for t in items.lstrip("^").split(",") if t.strip()
                  for n in _matches(t.strip(), names, what, spec)}
        kept = frozenset(n for n in names if (n in chosen) != exclude)
        funcs = list(_matches(prefix.strip(), tuple(FUNCTIONS), "function", spec) if prefix.strip() else FUNCTIONS)
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


def tuned_op(op: str, ops: tuple[str, ...] = TUNED_OPS, model: str = "NCCL's tuner") -> str:
    """commlab's name of a collective (``allreduce``, ``AllReduce`` and nccl-tests' spellings accepted), refused
    unless ``model`` costs it (``ops``: every collective NCCL's tuner models, or a model's subset)."""
    name = canonical_op(op)
    if name not in ops:
        why = ("grouped send/recv in nccl-tests, which NCCL does not tune" if name not in TUNED_OPS
               else "not one of them")
        raise CommlabError(f"{model} models {', '.join(ops)}; {name!r} is {why}")
    return name


def ring_steps(op: str, n: int) -> int:
    """nsteps of a ring over ``n`` participants (tuning.cc:289-291): 2(n-1) for all_reduce, n-1 for all_gather and
    reduce_scatter, n for broadcast and reduce."""
    return 2 * (n - 1) if op == "all_reduce" else n - 1 if op in ("all_gather", "reduce_scatter") else n


def log2i(x: int) -> int:
    """NCCL's log2i (src/include/utils.h): floor(log2(x)), 0 below 1."""
    return int(math.floor(math.log2(x))) if x >= 1 else 0


def _int_setting(settings: Mapping[str, str], name: str) -> int | None:
    try:
        return int(str(settings[name]).strip(), 0) if name in settings else None
    except ValueError:                                         # NCCL warns and keeps its default (param.cc)
        return None


def apply_forced(machine: Machine, settings: Mapping[str, str]) -> Machine:
    """``machine`` with what ``settings`` (:data:`VARIABLES` -> value) forces; a field the description gives wins.

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


def version_note(version: tuple[int, int, int] | None) -> str:
    """A note when a run's NCCL ``version`` is older than :data:`OLDEST_CLOSE_VERSION` ("" otherwise, or when it
    is not known)."""
    if version is None or version[:2] >= OLDEST_CLOSE_VERSION:
        return ""
    oldest = ".".join(map(str, OLDEST_CLOSE_VERSION))
    return (f"the log's NCCL {'.'.join(map(str, version))} predates {oldest}: the model "
            f"replays NCCL {'.'.join(map(str, REPLAYED_VERSION))}'s tuner, whose choices and speeds an NCCL this old "
            "may not share (NVLS, PAT and today's per-architecture caps came later)")
