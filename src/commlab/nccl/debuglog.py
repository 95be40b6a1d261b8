"""What NCCL's own lines and a run's command lines say: an NCCL_DEBUG=INFO log (transports, rings, trees),
what NCCL chose (TUNING lines and its printed table), the NCCL settings a run forces and its NCCL version.

Read an NCCL_DEBUG=INFO log: version, ranks and devices, transports between peers, channels, rings, trees,
network, NVLS/CollNet and warnings.

NCCL prefixes its lines with ``host:pid:tid [cudaDev] NCCL INFO|WARN`` (``src/debug.cc``). The lines this reader
understands (NCCL 2.4 to 2.2x; examples from real logs under ``commlab/data/nccl``):

* ``NCCL version 2.21.5+cuda12.4``
* ``comm 0x.. rank 4 nranks 8 cudaDev 0 nvmlDev 0 busId 42000 ... - Init COMPLETE``
* ``Channel 00/02 :    0   1   2   3`` (ring order of a channel; ``Ring 00 : 0 1 2 3`` before 2.5)
* ``Channel 01/0 : 5[1] -> 4[0] via P2P/CUMEM``, ``... [send] via NET/IB/0/GDRDMA`` (a connection and its transport)
* ``Trees [0] 1/-1/-1->0->-1 [1] ...`` (per channel: up to three children, the rank, its parent)
* ``Using network IB``, ``NET/Plugin ...``, ``8 coll channels, 8 collnet channels, 0 nvls channels, ...``

What NCCL chose, read from NCCL_DEBUG output interleaved with an nccl-tests log.

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

The NCCL settings a run's log shows: NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE and NCCL_TREE_THRESHOLD as its
command lines and NCCL's INFO lines set them, and the NCCL version it names.

What the settings mean to NCCL's tuner (the list syntax, applying them to a machine) is
:mod:`commlab.tuner.settings`.

>>> forced_settings("mpirun -np 16 -x NCCL_ALGO=Ring -x NCCL_PROTO=Simple ./build/all_reduce_perf -b 8 -e 8G")
{'NCCL_ALGO': 'Ring', 'NCCL_PROTO': 'Simple'}
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from commlab.errors import CommlabError
from commlab.nccl.lines import strip_prefix
from commlab.tuner.nccl_constants import ALGO_NAMES, PROTO_NAMES
from commlab.tuner.settings import VARIABLES, name_in_log


_PREFIX = re.compile(r"(?:^|(?<=\s))(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:(?P<where>\S+) )?"
                     r"NCCL (?P<level>INFO|WARN|TRACE|ABORT) (?P<msg>.*)$")
#: the NCCL version a log names: ``NCCL version 2.18.3+cuda12.2`` (NCCL's own line, group ``text``; also read
#: with a colon or more spaces, group ``dotted``), ``NCCL version: 22602`` (NCCL_VERSION_CODE, group ``code``)
#: and ``nccl-library=22903`` (nccl-tests 2.17's header, group ``library``)
_VERSION = re.compile(r"NCCL version(?: (?P<text>\S+)|:?\s+(?P<dotted>\d+\.\d+\.\d+)|:\s+(?P<code>\d{4,6}))"
                      r"|nccl-library=(?P<library>\d{4,6})")
_DOTTED = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_COMM = re.compile(r"comm 0x[0-9a-f]+ rank (\d+) n[rR]anks (\d+)(?: nNodes (\d+))?"
                   r"(?:.*?cudaDev (\d+))?(?:.*?busId ([0-9a-fA-F]+))?")
_ORDER = re.compile(r"^(?:Channel|Ring) (\d+)(?:/(\d+))? :((?:\s+\d+)+)\s*$")
_CONNECTION = re.compile(r"^(?:Channel|Ring) (\d+)(?:/\d+)? : (\d+)(?:\[[0-9a-fA-F]+\])? -> (\d+)"
                         r"(?:\[[0-9a-fA-F]+\])?(?: \[(send|receive)\])? via (.+?)\s*$")
_TREE = re.compile(r"\[(\d+)\] ([-\d]+)/([-\d]+)/([-\d]+)->(\d+)->([-\d]+)")
_CHANNELS = re.compile(r"(\d+) coll channels(?:, (\d+) collnet channels)?(?:, (\d+) nvls channels)?")
_NETWORK = re.compile(r"Using network (.+?)\s*$")


@dataclass(frozen=True)
class Connection:
    """One ``A -> B via TRANSPORT`` line: channel, sending and receiving rank, transport as NCCL prints it."""

    channel: int
    src: int
    dst: int
    transport: str
    direction: str | None = None

    @property
    def kind(self) -> str:
        """The transport family: P2P, SHM, NET/IB, NET/Socket, NET/<plugin>, or the text before ``/``."""
        parts = self.transport.split("/")
        if parts[0] == "NET" and len(parts) > 1:
            return f"NET/{parts[1]}"
        if self.transport.startswith("direct shared memory"):
            return "SHM"
        return parts[0]


@dataclass(frozen=True)
class TreeNode:
    """A rank's place in one channel's tree: its children (-1 for none) and its parent (-1 at the root)."""

    channel: int
    rank: int
    children: tuple[int, ...]
    parent: int


@dataclass
class DebugLog:
    """What an NCCL_DEBUG=INFO log says."""

    nccl_version: str | None = None
    n_ranks: int | None = None
    n_nodes: int | None = None
    hosts: list[str] = field(default_factory=list)
    devices: dict[int, dict] = field(default_factory=dict)
    """rank -> {"cuda_dev", "bus_id", "host"} from the ``comm ... rank R`` lines."""
    connections: list[Connection] = field(default_factory=list)
    rings: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """channel -> ring order of ranks."""
    trees: list[TreeNode] = field(default_factory=list)
    n_channels: int | None = None
    collnet_channels: int | None = None
    nvls_channels: int | None = None
    network: str | None = None
    plugin_lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    nccl_lines: int = 0

    @property
    def transports(self) -> dict[str, int]:
        """Connections per transport family (P2P, SHM, NET/IB, NET/Socket, ...)."""
        return dict(Counter(c.kind for c in self.connections))

    @property
    def uses_nvls(self) -> bool:
        return bool(self.nvls_channels)

    @property
    def uses_collnet(self) -> bool:
        return bool(self.collnet_channels)


def _read_comm(msg: str, host: str, log: DebugLog) -> None:
    match = _COMM.search(msg)
    if not match:
        return
    rank, nranks, nnodes, dev, bus = match.groups()
    log.n_ranks = int(nranks)
    if nnodes is not None:
        log.n_nodes = int(nnodes)
    entry = log.devices.setdefault(int(rank), {"host": host})
    if dev is not None:
        entry["cuda_dev"] = int(dev)
    if bus is not None:
        entry["bus_id"] = bus


def _read_structure(msg: str, log: DebugLog) -> None:
    """Ring orders, connections, trees, channel counts, network."""
    if (m := _ORDER.match(msg)) is not None:
        log.rings[int(m.group(1))] = tuple(int(x) for x in m.group(3).split())
        if m.group(2) is not None:
            log.n_channels = log.n_channels or int(m.group(2))
    elif (m := _CONNECTION.match(msg)) is not None:
        log.connections.append(Connection(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(5),
                                          m.group(4)))
    elif msg.startswith("Trees"):
        for ch, a, b, c, rank, parent in _TREE.findall(msg):
            node = TreeNode(int(ch), int(rank), tuple(int(x) for x in (a, b, c) if int(x) >= 0), int(parent))
            if node not in log.trees:
                log.trees.append(node)
    elif (m := _CHANNELS.search(msg)) is not None:
        log.n_channels = int(m.group(1))
        log.collnet_channels = int(m.group(2)) if m.group(2) else log.collnet_channels
        log.nvls_channels = int(m.group(3)) if m.group(3) else log.nvls_channels
    elif (m := _NETWORK.search(msg)) is not None:
        log.network = m.group(1)
    elif msg.startswith(("NET/Plugin", "NET/IB :", "NET/Socket :", "TUNER/Plugin")):
        log.plugin_lines.append(msg)


def _read_line(text: str, log: DebugLog) -> None:
    if log.nccl_version is None:
        log.nccl_version = next((m.group("text") for m in _VERSION.finditer(text) if m.group("text")), None)
    match = _PREFIX.search(text)
    if not match:
        return
    log.nccl_lines += 1
    host, msg = match.group("host"), match.group("msg")
    if host not in log.hosts:
        log.hosts.append(host)
    if match.group("level") == "WARN":
        where = match.group("where")
        log.warnings.append(f"{where}: {msg}" if where else msg)
        return
    _read_comm(msg, host, log)
    _read_structure(msg, log)


def read_debug_log(text: str) -> DebugLog:
    """Read every NCCL line of ``text`` (launcher prefixes and Windows line ends are accepted)."""
    log = DebugLog()
    for raw in text.splitlines():
        _read_line(strip_prefix(raw), log)
    if log.n_ranks is None and log.rings:
        log.n_ranks = max(len(order) for order in log.rings.values())
    return log


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
    for m in _VERSION.finditer(text):
        dotted = _DOTTED.match(m.group("text") or m.group("dotted") or "")
        if dotted:
            found = (int(dotted.group(1)), int(dotted.group(2)), int(dotted.group(3)))
        elif m.group("code") or m.group("library"):
            code = int(m.group("code") or m.group("library"))
            found = (code // 10000, code // 100 % 100, code % 100)
    return found
