"""One generation of NCCL's tuner: the tables, rules and chunk sizes of one range of releases, read from its data
file ``commlab/data/nccl/generations/<first>-<last>.toml`` (one tagged release, its commit, and the line of every
entry in ``src/graph/tuning.cc`` or ``src/enqueue.cc`` there).

The current generation's file is the one home of NCCL 2.30.7's tuning tables: :mod:`commlab.tuner.nccl_constants`
reads them from it. Which generation a log gets is :mod:`commlab.tuner.generation_choice`; replaying one is
:mod:`commlab.tuner.replay`.

>>> g = load_generation("2.4-2.8")
>>> g.base_lat_us[("Ring", "LL128")], g.hw_lat_us[("net", "Tree", "Simple")], g.line("ring_ll_factor")
(10.0, 28.0, 'v2.8.4-1 src/graph/tuning.cc:125')
>>> load_generation("2.18-2.23").line("nvls_rules")
'v2.23.4-1 src/enqueue.cc:2035-2037'
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from commlab.errors import CommlabError
from commlab.tuner.nccl_names import ARCHS, NODE_INDEX, PROTOS, TUNED_OPS, arch_of

if sys.version_info >= (3, 11):
    import tomllib
else:                                                          # pragma: no cover - Python 3.10
    import tomli as tomllib

#: the generations, oldest first (the data files' names); the last is the current one
GENERATION_NAMES = ("2.4-2.8", "2.9-2.17", "2.18-2.23", "2.24-2.30")
#: the hardware rows of hwLat
HWS = ("nvlink", "pci", "net")
ARCH_ROWS = ARCHS
#: the rules every generation file states, each with its line
RULES = ("arch_index", "ampere_bus_cap_GBps", "ring_ll_factor", "ring_ll128_factor", "tree_factor", "tree_ll_factor",
         "tree_ll128_factor", "ll_intra_lat_nodes_factor", "net_overhead", "net_plugin_latency",
         "tree_net_lat_one_gpu_per_node", "ll128_compute_capabilities", "plateau", "nvls")
#: the chunk sizes a generation file may state (calcCollChunking, ncclNvlsTuning), each with its file and line:
#: NVLS's largest chunk; the NVLS and NVLSTree halving rules; NVLSTree's cap on 4+ nodes; Tree/LL128's rules
CHUNKING = ("nvls_chunk_bytes", "nvls_rules", "nvls_tree_rules", "nvls_tree_max_chunk_4_nodes_bytes",
            "tree_ll128_rules")


def _frozen(value):
    """Lists of a data file as tuples (nested), numbers as they are."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _version(text: str) -> tuple[int, int]:
    major, minor = (int(x) for x in str(text).split(".")[:2])
    return major, minor


@dataclass(frozen=True, repr=False)
class Generation:
    """One generation of NCCL's tuner: its tables keyed as :mod:`commlab.tuner.nccl_constants` keys them, its rules,
    and where each comes from (:meth:`line`)."""

    name: str
    first: tuple[int, int]
    last: tuple[int, int]
    tag: str
    commit: str
    source: str
    current: bool
    notes: tuple[str, ...]
    base_lat_us: MappingProxyType
    """(algo, proto) -> us"""
    hw_lat_us: MappingProxyType
    """(hw, algo, proto) -> us per hop"""
    ll_max_bw_GBps: MappingProxyType
    """(row, node index) -> GB/s; rows volta/ampere double as intel/amd across nodes (tuning.cc's index1)"""
    tree_max_bw_per_ch_GBps: MappingProxyType
    ring_ll128_max_bw_per_ch_GBps: MappingProxyType
    """(arch, node index) -> GB/s a channel; or (op, "any") where the generation caps LL128 per collective"""
    tree_ll128_max_bw_per_ch_GBps: MappingProxyType
    tree_correction: MappingProxyType
    """proto -> factors by log2(bytes / 64)"""
    rules: MappingProxyType
    """rule name -> value (:data:`RULES`)"""
    lines: MappingProxyType
    """table or rule name -> its line(s) in ``source`` at ``tag``"""
    chunking: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    """calcCollChunking's sizes and rules (:data:`CHUNKING`): name -> value, where the generation has them"""
    plateau_rule: str = "share_per_channel"

    def __repr__(self) -> str:
        return f"Generation({self.name!r}, {self.tag})"

    def line(self, name: str) -> str:
        """Where a table, rule or chunk size comes from: ``"v2.8.4-1 src/graph/tuning.cc:125"``; a chunk size names
        its own file (``"v2.23.4-1 src/enqueue.cc:2035-2037"``)."""
        if name not in self.lines:
            raise CommlabError(f"generation {self.name} has no table or rule {name!r}; it has: "
                               f"{', '.join(sorted(self.lines))}")
        where = self.lines[name]
        return f"{self.tag} {where}" if where.startswith("src/") else f"{self.tag} {self.source}:{where}"

    def covers(self, version: tuple[int, ...]) -> bool:
        return self.first <= tuple(version[:2]) <= self.last

    @property
    def arch_rows(self) -> tuple[str, ...]:
        return tuple(a for a in ARCH_ROWS if (a, "n1") in self.tree_max_bw_per_ch_GBps)

    def arch_of(self, compute_capability: int) -> str:
        """compCapIndex: ``exact`` (sm80 only is Ampere, sm90 only Hopper, all else Volta: tuning.cc before 2.18) or
        ``range`` (sm >= 80 Ampere, >= 90 Hopper, >= 100 Blackwell, as far as the generation has rows)."""
        cc, rows = compute_capability, self.arch_rows
        if self.rules["arch_index"] == "exact":
            arch = {80: "ampere", 90: "hopper"}.get(cc, "volta")
            return arch if arch in rows else "volta"
        ranged = arch_of(cc)
        while ranged not in rows:
            ranged = ARCH_ROWS[ARCH_ROWS.index(ranged) - 1]
        return ranged

    def ll128_allowed(self, compute_capability: int) -> bool:
        """LL128's default by GPU (with NVLink inside the node): the listed compute capabilities, or any from sm70."""
        allowed = self.rules["ll128_compute_capabilities"]
        return compute_capability >= 70 if allowed == "70+" else compute_capability in allowed

    def to_json(self) -> dict:
        return {"name": self.name, "tag": self.tag, "commit": self.commit, "source": self.source,
                "versions": f"{self.first[0]}.{self.first[1]}-{self.last[0]}.{self.last[1]}", "notes": list(self.notes)}


def _rows3(table: dict, name: str, where: str) -> dict:
    out = {}
    for row, values in table.items():
        if row == "line":
            continue
        if not (isinstance(values, list) and len(values) == 3):
            raise CommlabError(f"{where}: {name}.{row} must be 3 numbers (1 node, 2 nodes, more), got {values!r}")
        out.update({(row, n): float(v) for n, v in zip(NODE_INDEX, values)})
    return out


def parse_generation(data: dict[str, Any], where: str) -> Generation:
    """A generation from its data file's parsed text; ``where`` names the file in the one-line error a broken file
    gives."""
    try:
        lines: dict[str, str] = {}
        base = {(a, p): float(v) for a, row in data["base_lat_us"].items() if a != "line"
                for p, v in zip(PROTOS, row)}
        lines["base_lat_us"] = data["base_lat_us"]["line"]
        hw = {(h, a, p): float(v) for h in HWS for a, row in data["hw_lat_us"][h].items() if a != "line"
              for p, v in zip(PROTOS, row)}
        lines.update({f"hw_lat_us.{h}": data["hw_lat_us"][h]["line"] for h in HWS})
        for name in ("ll_max_bw_GBps", "tree_max_bw_per_ch_GBps", "tree_correction"):
            lines[name] = data[name]["line"]
        if "ll128_max_bw_per_ch_by_op_GBps" in data:
            by_op = data["ll128_max_bw_per_ch_by_op_GBps"]
            ring_ll128 = tree_ll128 = {(op, "any"): float(by_op[op]) for op in TUNED_OPS}
            lines["ring_ll128_max_bw_per_ch_GBps"] = lines["tree_ll128_max_bw_per_ch_GBps"] = by_op["line"]
        else:
            ring_ll128 = _rows3(data["ring_ll128_max_bw_per_ch_GBps"], "ring_ll128_max_bw_per_ch_GBps", where)
            tree_ll128 = _rows3(data["tree_ll128_max_bw_per_ch_GBps"], "tree_ll128_max_bw_per_ch_GBps", where)
            for name in ("ring_ll128_max_bw_per_ch_GBps", "tree_ll128_max_bw_per_ch_GBps"):
                lines[name] = data[name]["line"]
        rules = {}
        for name in RULES:
            entry = data["rules"][name]
            rules[name] = tuple(entry["value"]) if isinstance(entry["value"], list) else entry["value"]
            lines[name] = entry["line"]
        corr = {p: tuple(float(x) for x in data["tree_correction"][p]) for p in PROTOS}
        chunking = {}
        for name, entry in data.get("chunking", {}).items():
            if name not in CHUNKING:
                raise KeyError(f"chunking.{name} (the chunk sizes are {', '.join(CHUNKING)})")
            chunking[name] = _frozen(entry["value"])
            lines[name] = entry["line"]
        return Generation(
            name=data["name"], first=_version(data["first"]), last=_version(data["last"]), tag=data["tag"],
            commit=data["commit"], source=data["source"], current=bool(data.get("current", False)),
            notes=tuple(data.get("notes", ())), base_lat_us=MappingProxyType(base), hw_lat_us=MappingProxyType(hw),
            ll_max_bw_GBps=MappingProxyType(_rows3(data["ll_max_bw_GBps"], "ll_max_bw_GBps", where)),
            tree_max_bw_per_ch_GBps=MappingProxyType(_rows3(data["tree_max_bw_per_ch_GBps"],
                                                            "tree_max_bw_per_ch_GBps", where)),
            ring_ll128_max_bw_per_ch_GBps=MappingProxyType(ring_ll128),
            tree_ll128_max_bw_per_ch_GBps=MappingProxyType(tree_ll128),
            tree_correction=MappingProxyType(corr), rules=MappingProxyType(rules), lines=MappingProxyType(lines),
            chunking=MappingProxyType(chunking), plateau_rule=str(data["rules"]["plateau"]["rule"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise CommlabError(f"{where}: not a generation of NCCL's tuner ({type(exc).__name__}: {exc})") from None


@cache
def load_generation(name: str) -> Generation:
    """The generation ``name`` (one of :data:`GENERATION_NAMES`), read from its data file."""
    if name not in GENERATION_NAMES:
        raise CommlabError(f"unknown NCCL tuner generation {name!r}; the generations are: "
                           f"{', '.join(GENERATION_NAMES)}")
    path = resources.files("commlab") / "data" / "nccl" / "generations" / f"{name}.toml"
    return parse_generation(tomllib.loads(path.read_text(encoding="utf-8")), f"generations/{name}.toml")


def generations() -> tuple[Generation, ...]:
    return tuple(load_generation(n) for n in GENERATION_NAMES)


def current() -> Generation:
    """The current generation: NCCL 2.30.7's tuner, the predictive model's."""
    return load_generation(GENERATION_NAMES[-1])
