"""Read an NCCL_DEBUG=INFO log: version, ranks and devices, transports between peers, channels, rings, trees,
network, NVLS/CollNet and warnings.

NCCL prefixes its lines with ``host:pid:tid [cudaDev] NCCL INFO|WARN`` (``src/debug.cc``). The lines this reader
understands (NCCL 2.4 to 2.2x; examples from real logs under ``commlab/data/nccl``):

* ``NCCL version 2.21.5+cuda12.4``
* ``comm 0x.. rank 4 nranks 8 cudaDev 0 nvmlDev 0 busId 42000 ... - Init COMPLETE``
* ``Channel 00/02 :    0   1   2   3`` (ring order of a channel; ``Ring 00 : 0 1 2 3`` before 2.5)
* ``Channel 01/0 : 5[1] -> 4[0] via P2P/CUMEM``, ``... [send] via NET/IB/0/GDRDMA`` (a connection and its transport)
* ``Trees [0] 1/-1/-1->0->-1 [1] ...`` (per channel: up to three children, the rank, its parent)
* ``Using network IB``, ``NET/Plugin ...``, ``8 coll channels, 8 collnet channels, 0 nvls channels, ...``

What NCCL chose is :mod:`commlab.nccl.choices`; the settings a run forces and its NCCL version
:mod:`commlab.nccl.run_settings` (their public names are importable from here too).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from commlab.nccl.lines import strip_prefix
from commlab.nccl.choices import (Call, RowChoice, TuningLog, choices_for_sizes, read_tuning)  # noqa: F401
from commlab.nccl.run_settings import VERSION_PATTERN, forced_settings, nccl_version  # noqa: F401


_PREFIX = re.compile(r"(?:^|(?<=\s))(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:(?P<where>\S+) )?"
                     r"NCCL (?P<level>INFO|WARN|TRACE|ABORT) (?P<msg>.*)$")
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
        log.nccl_version = next((m.group("text") for m in VERSION_PATTERN.finditer(text) if m.group("text")), None)
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
