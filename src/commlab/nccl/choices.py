"""What NCCL chose, read from NCCL_DEBUG output interleaved with an nccl-tests log.

With ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING`` NCCL prints, on rank 0:

* the table its tuner built at start-up (``src/graph/tuning.cc:543-585``): for each collective and each
  (algorithm, protocol) ``latency/bandwidth`` (us / GB/s). NCCL 2.19 and later print blocks of three algorithms
  under ``Algorithm |`` and ``Protocol |`` lines; 2.12-2.18 print one ``Latency/AlgBw | Tree/LL | ...``
  header. A bandwidth of 0 means the pair is disabled;
* one line per call with what it picked. NCCL 2.23 and later (``src/enqueue.cc:821``)::

      NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}

  2.20-2.22 (``enqueue.cc`` of v2.21.5, line 1534), numbers for NCCL's enums (algorithms Tree 0, Ring 1,
  CollNetDirect 2, CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6; protocols LL 0, LL128 1, Simple 2)::

      NCCL INFO 262144 Bytes -> Algo 0 proto 1 time 54.707825

  (both seen in public logs, e.g. NVIDIA/nccl issues 1453 and 1595). A debug build's ``TRACE`` lines
  ``tunedColl enqueue coll AllReduce(Sum, float, RING, LL, ...) ... (nbytes N)`` are read too.

:func:`read_tuning` gathers both; :func:`choices_for_sizes` says, per nccl-tests row, which pair NCCL used: from
the per-call lines when there are any (``source="nccl_debug"``), else computed from NCCL's own printed table
(``source="nccl_tuning_table"``: the least ``latency + nbytes / (1000 x bandwidth)``).

>>> log = read_tuning("h:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..7}")
>>> log.calls[0].collective, log.calls[0].nbytes, log.calls[0].algo, log.calls[0].proto
('all_reduce', 1048576, 'Ring', 'LL128')
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from commlab.errors import CommlabError
from commlab.tuner.nccl_constants import ALGO_NAMES, PROTO_NAMES
from commlab.tuner.settings import name_in_log


_FUNCS = {"broadcast": "broadcast", "reduce": "reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
          "allreduce": "all_reduce", "sendrecv": "sendrecv", "send": "send", "recv": "recv",
          "alltoall": "all_to_all"}

_NEW = re.compile(r"NCCL INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+)")
_OLD = re.compile(r"NCCL (?:INFO|TRACE).*?\b(\d+) Bytes -> Algo (\d+) proto (\d+)(?: time ([\d.]+))?")
_TRACE = re.compile(r"coll (\w+)\(\s*[^,]+,\s*[^,]+,\s*(\w+),\s*(\w+)\).*?\(nbytes (\d+)\)")
_CELL = re.compile(r"^\s*([\d.]+)\s*/\s*([\d.]+)\s*$")


def _algo(name: str) -> str | None:
    return name_in_log(name, ALGO_NAMES)


def _proto(name: str) -> str | None:
    return name_in_log(name.strip(), PROTO_NAMES)


def _func(name: str) -> str | None:
    return _FUNCS.get(name.replace("_", "").lower())


@dataclass(frozen=True)
class Call:
    """One collective call as NCCL's TUNING line reports it."""

    nbytes: int
    algo: str
    proto: str
    collective: str | None
    """None for the 2.20-2.22 lines, which do not name it."""
    line: int


@dataclass
class TuningLog:
    calls: list[Call] = field(default_factory=list)
    table: dict[str, dict[tuple[str, str], tuple[float, float]]] = field(default_factory=dict)
    """collective -> (algorithm, protocol) -> (latency_us, bandwidth_GBps), enabled pairs only."""

    def __bool__(self) -> bool:
        return bool(self.calls or self.table)


def _read_call(text: str, number: int) -> Call | None:
    m = _NEW.search(text)
    if m and (algo := _algo(m.group(3))) and (proto := _proto(m.group(4))):
        return Call(int(m.group(2)), algo, proto, _func(m.group(1)), number)
    m = _OLD.search(text)
    if m and int(m.group(2)) < len(ALGO_NAMES) and int(m.group(3)) < len(PROTO_NAMES):
        return Call(int(m.group(1)), ALGO_NAMES[int(m.group(2))], PROTO_NAMES[int(m.group(3))], None, number)
    m = _TRACE.search(text)
    if m and (algo := _algo(m.group(2))) and (proto := _proto(m.group(3))):
        return Call(int(m.group(4)), algo, proto, _func(m.group(1)), number)
    return None


def _cells(text: str) -> list[str]:
    """The '|'-separated cells after 'NCCL INFO'."""
    body = text.split("NCCL INFO", 1)[1] if "NCCL INFO" in text else text
    return [c.strip() for c in body.split("|")]


class _TableReader:
    """Reads both table layouts line by line."""

    def __init__(self, out: TuningLog):
        self.out = out
        self.columns: list[tuple[str | None, str | None]] = []
        self.algos: list[str | None] = []

    def feed(self, text: str) -> None:
        if "NCCL INFO" not in text or "|" not in text:
            return
        cells = _cells(text)
        head = cells[0].lower()
        if head.startswith("latency/algbw"):                          # 2.12-2.18: Tree/    LL | ...
            self.columns = [(_algo(c.split("/")[0]), _proto(c.split("/")[1])) if "/" in c else (None, None)
                            for c in cells[1:]]
        elif head == "algorithm":                                     # 2.19+: one name per block of 3
            self.algos = [_algo(c) for c in cells[1:] if c]
        elif head == "protocol" and self.algos:
            protos = [_proto(c) for c in cells[1:] if c]
            per = max(1, len(protos) // max(1, len(self.algos)))
            self.columns = [(self.algos[i // per] if i // per < len(self.algos) else None, p)
                            for i, p in enumerate(protos)]
        elif (func := _func(cells[0])) and self.columns:
            self._row(func, cells[1:])

    def _row(self, func: str, cells: list[str]) -> None:
        for (algo, proto), cell in zip(self.columns, cells):
            m = _CELL.match(cell)
            if algo is None or proto is None or not m:
                continue
            lat, bw = float(m.group(1)), float(m.group(2))
            if bw > 0:
                self.out.table.setdefault(func, {})[(algo, proto)] = (lat, bw)


def read_tuning(text: str) -> TuningLog:
    """Every TUNING per-call line and the tuner's table found in ``text`` (empty when there are none)."""
    if not isinstance(text, str):
        raise CommlabError(f"read_tuning needs the log as text (str), got {type(text).__name__}")
    out = TuningLog()
    reader = _TableReader(out)
    for number, raw in enumerate(text.splitlines(), start=1):
        if "NCCL" not in raw:
            continue
        call = _read_call(raw, number)
        if call is not None:
            out.calls.append(call)
        else:
            reader.feed(raw)
    return out


@dataclass(frozen=True)
class RowChoice:
    algo: str
    proto: str
    source: str
    """"nccl_debug" (NCCL's per-call line) or "nccl_tuning_table" (least time in NCCL's printed table)."""


def _from_calls(calls: list[Call], size: int, collective: str | None, n_ranks: int | None) -> RowChoice | None:
    wanted = {size} | ({size // n_ranks} if n_ranks and size % n_ranks == 0 else set())
    votes = Counter((c.algo, c.proto) for c in calls if c.nbytes in wanted
                    and (c.collective is None or collective is None or c.collective == collective))
    if not votes:
        return None
    (algo, proto), _ = votes.most_common(1)[0]
    return RowChoice(algo, proto, "nccl_debug")


def _from_table(table: dict, size: int) -> RowChoice | None:
    if not table:
        return None
    best = min(table.items(), key=lambda kv: kv[1][0] + size / (1000.0 * kv[1][1]))
    return RowChoice(best[0][0], best[0][1], "nccl_tuning_table")


def choices_for_sizes(tuning: TuningLog, sizes, collective: str | None, n_ranks: int | None
                      ) -> list[RowChoice | None]:
    """Per nccl-tests size, the (algorithm, protocol) NCCL chose, or None where the log does not say."""
    table = tuning.table.get(collective or "", {})
    out = []
    for size in sizes:
        choice = _from_calls(tuning.calls, int(size), collective, n_ranks) if tuning.calls else None
        out.append(choice or _from_table(table, int(size)))
    return out
