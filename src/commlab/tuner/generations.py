"""NCCL's tuner by release: the constants and rules of each generation of ``src/graph/tuning.cc``, and the replay
of a log's own generation.

NCCL's cost model has changed under the same names many times: the LL protocol's bus bandwidth was a quarter of
the links before 2.18 and is a half now; Tree/Simple paid 28 us a hop (NCCL's own 256 kB chunk time) and pays
4 now; LL128 was on only for sm70 and sm80 exactly, then sm90, now any GPU from sm70; the ring's "plateau" penalty
was x 1.9 from ``nRanks / 16 x 64 KiB`` and is x 1.4 (sm80 on) from 64 bytes a channel a rank. A prediction for a
run of NCCL 2.8 made with today's table picks and times what 2.8 never did. Each generation is a data file,
``commlab/data/nccl/generations/<first>-<last>.toml``, read from one tagged release (its tag and commit in the file)
with the line of every table and rule there; :func:`generation_for` picks the generation of a version, or says
which it assumed.

The replay (:func:`replay`) is ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` with the generation's numbers and
rules, on the channels of :func:`commlab.tuner.graphs.nccl_graphs` (today's search: the search changed too,
and that is not replayed). As for the current model (:mod:`commlab.tuner.predict`), NCCL picks with its own
estimate and the time is the pick's as the machine runs it: inside a node the channels move data at the links'
total (or through host memory with P2P off), and a network hop costs what the transport really costs. The current
generation is the predictive model itself, unchanged: :func:`replay` hands it to
:func:`commlab.tuner.predict.predict`.

>>> generation_for((2, 8, 3)).generation.name, generation_for((2, 30, 7)).generation.name
('2.4-2.8', '2.24-2.30')
>>> choice = generation_for(None)
>>> choice.assumed, choice.generation.name
(True, '2.24-2.30')
>>> g = load_generation("2.4-2.8")
>>> g.base_lat_us[("Ring", "LL128")], g.hw_lat_us[("net", "Tree", "Simple")], g.line("ring_ll_factor")
(10.0, 28.0, 'v2.8.4-1 src/graph/tuning.cc:125')
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

import numpy as np

from commlab.errors import CommlabError
from commlab.tuner import nccl_constants as K
from commlab.tuner.graphs import Graph, nccl_graphs
from commlab.tuner.launch import LaunchShape
from commlab.tuner.machine import Machine
from commlab.tuner.networks import NET_TYPES
from commlab.tuner.predict import Prediction, predict
from commlab.tuner.settings import TUNED_OPS, log2i, ring_steps
from commlab.tuner.table import net_hop_us, nccl_tuning_table, realized_graph

if sys.version_info >= (3, 11):
    import tomllib
else:                                                          # pragma: no cover - Python 3.10
    import tomli as tomllib

#: the generations, oldest first (the data files' names)
GENERATION_NAMES = ("2.4-2.8", "2.9-2.17", "2.18-2.23", "2.24-2.30")
#: the hardware rows of hwLat, and the node-count columns of the per-architecture tables (1 node, 2, more)
HWS, NODE_INDEX = ("nvlink", "pci", "net"), ("n1", "n2", "n4")
ALGOS, PROTOS, ARCH_ROWS = K.ALGOS, K.PROTOS, K.ARCHS
#: a Tree all-reduce takes the correction factor of log2(bytes / 64) below 23 in every generation (v2.8.4-1
#: tuning.cc:278, v2.23.4-1:458, v2.30.7-1:640; 2.30's 24th entry serves NVLSTree, :643)
TREE_CORRECTION_BELOW = 23
#: the rules every generation file states, each with its line
RULES = ("arch_index", "ampere_bus_cap_GBps", "ring_ll_factor", "ring_ll128_factor", "tree_factor", "tree_ll_factor",
         "tree_ll128_factor", "ll_intra_lat_nodes_factor", "net_overhead", "net_plugin_latency",
         "tree_net_lat_one_gpu_per_node", "ll128_compute_capabilities", "plateau", "nvls")


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
    plateau_rule: str = "share_per_channel"

    def __repr__(self) -> str:
        return f"Generation({self.name!r}, {self.tag})"

    def line(self, name: str) -> str:
        """Where a table or rule comes from: ``"v2.8.4-1 src/graph/tuning.cc:125"``."""
        if name not in self.lines:
            raise CommlabError(f"generation {self.name} has no table or rule {name!r}; it has: "
                               f"{', '.join(sorted(self.lines))}")
        return f"{self.tag} {self.source}:{self.lines[name]}"

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
        ranged = K.arch_of(cc)
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


def _parse(data: dict[str, Any], where: str) -> Generation:
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
            plateau_rule=str(data["rules"]["plateau"]["rule"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise CommlabError(f"{where}: not a generation of NCCL's tuner ({type(exc).__name__}: {exc})") from None


@cache
def load_generation(name: str) -> Generation:
    """The generation ``name`` (one of :data:`GENERATION_NAMES`), read from its data file."""
    if name not in GENERATION_NAMES:
        raise CommlabError(f"unknown NCCL tuner generation {name!r}; the generations are: "
                           f"{', '.join(GENERATION_NAMES)}")
    path = resources.files("commlab") / "data" / "nccl" / "generations" / f"{name}.toml"
    return _parse(tomllib.loads(path.read_text(encoding="utf-8")), f"generations/{name}.toml")


def generations() -> tuple[Generation, ...]:
    return tuple(load_generation(n) for n in GENERATION_NAMES)


def current() -> Generation:
    return load_generation(GENERATION_NAMES[-1])


@dataclass(frozen=True)
class GenerationChoice:
    """The generation a log is replayed with, and why."""

    generation: Generation
    version: tuple[int, ...] | None
    assumed: bool
    """True where the log names no NCCL version (or one outside every generation) and the generation is a guess."""
    why: str

    def to_json(self) -> dict:
        return {"generation": self.generation.name, "tag": self.generation.tag,
                "nccl_version": None if self.version is None else ".".join(map(str, self.version)),
                "assumed": self.assumed, "why": self.why}


def generation_for(version: tuple[int, ...] | None, log_format: str | None = None) -> GenerationChoice:
    """The generation of NCCL ``version`` (``(2, 8, 3)``); without one, the era the log's format implies: the
    legacy table (an ``error`` column, nccl-tests before 2.0, 2019) the oldest generation, else the current one.
    Either way the choice says it was assumed."""
    gens = generations()
    if version is not None:
        shown = ".".join(map(str, version))
        for g in gens:
            if g.covers(version):
                return GenerationChoice(g, tuple(version), False, f"the log names NCCL {shown}")
        if tuple(version[:2]) < gens[0].first:
            return GenerationChoice(gens[0], tuple(version), True, f"NCCL {shown} predates every generation read "
                                    f"(the oldest is {gens[0].name}); assumed {gens[0].name}")
        return GenerationChoice(gens[-1], tuple(version), True, f"NCCL {shown} is newer than the generations read "
                                f"(the newest is {gens[-1].name}, {gens[-1].tag}); assumed {gens[-1].name}")
    if log_format == "legacy":
        return GenerationChoice(gens[0], None, True, f"the log names no NCCL version; its legacy table (an error "
                                f"column, nccl-tests before 2.0) implies an old NCCL: assumed {gens[0].name}")
    return GenerationChoice(gens[-1], None, True, f"the log names no NCCL version: assumed the current "
                            f"generation {gens[-1].name} ({gens[-1].tag})")


def generation_note(version: tuple[int, ...] | None) -> str:
    """A note when a named NCCL version is replayed with an older generation than the current one ("" otherwise:
    the current generation, or no version, which :class:`GenerationChoice` reports itself)."""
    if version is None:
        return ""
    choice = generation_for(version)
    if choice.generation.current and not choice.assumed:
        return ""
    return (f"{choice.why}: replayed with the tuner of NCCL {choice.generation.name} ({choice.generation.tag} "
            f"{choice.generation.source}), not today's")


# -- the replay ----------------------------------------------------------------------------------------------------
def _candidates(op: str, graphs: dict, m: Machine, gen: Generation) -> list[tuple[str, str]]:
    """The enabled pairs: Tree only for all-reduce, NVLS as the generation has it (one node; NVLSTree across), LL128
    by the generation's GPU list with NVLink inside the node, within the machine's NCCL_ALGO / NCCL_PROTO."""
    algos, protos = m.enabled(op)
    nvls = gen.rules["nvls"] != "none"
    pairs = []
    for algo in ALGOS:
        if algo not in graphs or (algos is not None and algo not in algos):
            continue
        if algo in ("NVLS", "NVLSTree") and not nvls:
            continue
        if op in ("broadcast", "reduce") and algo != "Ring":
            continue
        if op in ("all_gather", "reduce_scatter") and algo not in ("Ring", "NVLS"):
            continue
        if algo == "NVLSTree" and m.nodes == 1 or algo == "NVLS" and m.nodes > 1:
            continue
        for proto in PROTOS:
            if algo in ("NVLS", "NVLSTree") and proto != "Simple":
                continue
            if protos is not None:
                if proto in protos:
                    pairs.append((algo, proto))
                continue
            if proto == "LL128" and not (m.has_nvlink and gen.ll128_allowed(m.compute_capability)):
                continue
            if m.nodes > 1 and proto not in NET_TYPES[m.net].protocols:
                continue
            pairs.append((algo, proto))
    return pairs


def _ll128_cap(table: MappingProxyType, op: str, arch: str, ni: str) -> float:
    return table[(op, "any")] if (op, "any") in table else table[(arch, ni)]


def _bus_bw(op: str, algo: str, proto: str, g: Graph, m: Machine, gen: Generation) -> float:
    """The bus bandwidth of one pair, GB/s, by the generation's rules (v2.8.4-1 tuning.cc:120-132,
    v2.23.4-1 :181-192)."""
    arch, ni, r = gen.arch_of(m.compute_capability), K.nodes_index(m.nodes), gen.rules
    bw = g.bw_intra_GBps if m.nodes <= 2 else g.bw_inter_GBps
    if algo == "NVLS":
        bw = min(g.bw_intra_GBps, g.bw_inter_GBps)
    if algo == "NVLSTree":
        bw = min(g.bw_intra_GBps, g.bw_inter_GBps if m.nodes <= 2 else g.bw_inter_GBps / 2)
    bus = g.n_channels * bw
    if r["ampere_bus_cap_GBps"] and arch == "ampere":
        bus = min(bus, r["ampere_bus_cap_GBps"])
    ll_row = arch if m.nodes == 1 else K.LL_MAX_BW_CPU_ROW[m.cpu]
    ll_max = gen.ll_max_bw_GBps[(ll_row, ni)]
    ppn = m.gpus_per_node
    if algo == "Ring" and proto == "LL":
        wide = m.nodes > 1 or op in ("all_reduce", "reduce")
        bus = min(ll_max, bus * r["ring_ll_factor"][0 if wide else 1])
    if algo == "Ring" and proto == "LL128":
        bus = min(bus * r["ring_ll128_factor"][1 if ppn < 2 else 0],
                  g.n_channels * _ll128_cap(gen.ring_ll128_max_bw_per_ch_GBps, op, arch, ni))
    if algo == "Tree" and op == "all_reduce":
        bus = min(bus * r["tree_factor"], g.n_channels * gen.tree_max_bw_per_ch_GBps[(arch, ni)])
    if algo == "Tree" and proto == "LL":
        bus = min(bus * r["tree_ll_factor"], ll_max)
    if algo == "Tree" and proto == "LL128":
        bus = min(bus * r["tree_ll128_factor"][0 if m.nodes == 1 else 1],
                  g.n_channels * _ll128_cap(gen.tree_ll128_max_bw_per_ch_GBps, op, arch, ni))
    return bus


def _alg_bw(op: str, algo: str, bus: float, n: int) -> float:
    if algo != "Ring" and op in ("all_gather", "reduce_scatter"):
        return bus
    if algo in ("NVLS", "NVLSTree"):
        return bus * 5.0 / 6.0                                  # v2.23.4-1 tuning.cc:224
    return bus * (n / ring_steps(op, n) if algo == "Ring" else 0.5)


def _latency_us(op: str, algo: str, proto: str, m: Machine, gen: Generation, real: bool) -> float:
    """The latency of one pair, us, by the generation's rules (v2.8.4-1 tuning.cc:138-160, v2.23.4-1 :233-275)."""
    n, nodes, ppn, r = m.n_ranks, m.nodes, m.gpus_per_node, gen.rules
    intra_hw = "nvlink" if m.has_nvlink else "pci"
    lat = gen.base_lat_us[(algo, proto)]
    intra = gen.hw_lat_us[(intra_hw, algo, proto)]
    if nodes > 1 and proto == "LL":
        intra *= r["ll_intra_lat_nodes_factor"]
    net_algo = "Tree" if (ppn == 1 and r["tree_net_lat_one_gpu_per_node"]) else algo
    inter = gen.hw_lat_us[("net", net_algo, proto)]
    hop, simple_extra = net_hop_us(proto, m, real)
    plugin = r["net_plugin_latency"]
    if plugin == "add" or real:                 # a real hop always costs what it costs, whatever NCCL budgets
        inter += hop + (simple_extra if proto == "Simple" else 0.0)
    elif plugin == "replace" and hop > 0:
        inter = hop
    if algo == "Ring":
        hw = intra_hw if nodes == 1 else "net"
        if op in ("broadcast", "reduce"):
            return lat + gen.hw_lat_us[(hw, "Ring", proto)]
        if r["net_overhead"] and nodes > 1:
            intra = max(intra, K.NET_OVERHEAD_US[m.cpu] * (3.0 if proto == "Simple" else 1.0))
        inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if op == "all_reduce" else nodes - 1
        return lat + (ring_steps(op, n) - inter_steps) * intra + inter_steps * inter
    if algo == "Tree":
        return lat + 2 * ((ppn - 1) * intra + log2i(nodes) * inter)
    if algo == "NVLS":
        return intra + (inter if nodes > 1 else 0.0)
    return lat + intra + 2 * log2i(nodes) * inter


@dataclass(frozen=True)
class Entry:
    latency_us: float
    algbw_GBps: float


def tuning_table(op: str, m: Machine, gen: Generation, realized: bool = False) -> dict[tuple[str, str], Entry]:
    """The generation's table for ``op`` on ``m``: (algo, proto) -> latency and algorithm bandwidth, enabled pairs
    only; ``realized`` as the machine runs it (:func:`commlab.tuner.table.realized_graph`, the network's real hop)."""
    if op not in TUNED_OPS:
        raise CommlabError(f"NCCL's tuner models {', '.join(TUNED_OPS)}; got {op!r}")
    if m.n_ranks < 2:
        raise CommlabError(f"NCCL's model needs at least 2 ranks; the machine has {m.n_ranks}")
    graphs = nccl_graphs(m)
    table = {}
    for algo, proto in _candidates(op, graphs, m, gen):
        g = realized_graph(graphs[algo], m, op) if realized else graphs[algo]
        bus = _bus_bw(op, algo, proto, g, m, gen)
        if bus > 0:
            table[(algo, proto)] = Entry(_latency_us(op, algo, proto, m, gen, realized), _alg_bw(op, algo, bus,
                                                                                                   m.n_ranks))
    if not table:
        raise CommlabError(f"algo={m.algo or '(any)'} and proto={m.proto or '(any)'} leave NCCL {gen.name} no "
                           f"algorithm/protocol for {op} on {m.describe()}")
    return table


def _pair_time_us(op: str, algo: str, proto: str, e: Entry, s: np.ndarray, m: Machine, gen: Generation,
                  channels: int) -> np.ndarray:
    """ncclTopoGetAlgoTime with the generation's tree correction and ring plateau (v2.8.4-1 tuning.cc:271-283)."""
    bw = np.full(s.shape, e.algbw_GBps)
    lat = np.full(s.shape, e.latency_us)
    if algo == "Tree" and op == "all_reduce":
        factors = np.asarray(gen.tree_correction[proto])[:TREE_CORRECTION_BELOW]
        log_size = np.floor(np.log2(np.maximum(s, 1) / 64.0))
        idx = np.clip(log_size, 0, len(factors) - 1).astype(int)
        bw = np.where((log_size >= 0) & (log_size < len(factors)), bw * factors[idx], bw)
    if algo == "Ring" and proto == "Simple" and m.nodes > 1 and op == "all_reduce":
        pre, post = gen.rules["plateau"]
        factor = pre if m.compute_capability < 80 else post
        hit = s >= m.n_ranks / 16.0 * 65536 if gen.plateau_rule == "bytes_over_ranks" \
            else s / (channels * m.n_ranks) >= 64
        lat = np.where(hit, lat * factor, lat)
    return lat + s / (1000.0 * bw)


def replay(op: str, nbytes, m: Machine, gen: Generation, launch: LaunchShape | None = None,
           run_machine: Machine | None = None, nic_scale: float = 1.0) -> Prediction:
    """NCCL ``gen``'s pick per size for ``op`` on ``m`` and its time as the machine runs it; the current generation is
    :func:`commlab.tuner.predict.predict` itself. A calibration (:mod:`commlab.tuner.calibrate`) times the pick on
    ``run_machine`` (the same machine with its real network hop) with every bandwidth across nodes at ``nic_scale``
    of what NCCL budgets (what a NIC delivers over its port speed), while NCCL still picks with what it sees on
    ``m``. The scale divides the time's bandwidth part, ``latency + (time - latency) / nic_scale``: every term but the
    latency (bytes over bandwidth, the pipeline fills) goes as one over the bandwidth."""
    s = np.asarray(nbytes, dtype=float)
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise CommlabError(f"nbytes must be finite and >= 0, got {nbytes!r}")
    if not nic_scale > 0:
        raise CommlabError(f"nic_scale must be > 0 (a NIC's delivered rate over its port speed), got {nic_scale!r}")
    runner = run_machine or m
    scale = nic_scale if m.nodes > 1 else 1.0
    if gen.current:
        if runner == m and scale == 1.0:
            return predict(op, s, m, launch=launch)
        return _retime(op, s, predict(op, s, m), predict(op, s, runner), runner, scale, launch)
    channels = min(K.MAX_CHANNELS, 2 * nccl_graphs(m)["Ring"].n_channels)
    est_table = tuning_table(op, m, gen)
    pairs = list(est_table)
    est = np.stack([_pair_time_us(op, a, p, est_table[(a, p)], s, m, gen, channels) for a, p in pairs])
    run_table = tuning_table(op, runner, gen, realized=True)
    run = np.stack([_pair_time_us(op, a, p, Entry(run_table[(a, p)].latency_us, run_table[(a, p)].algbw_GBps * scale),
                                  s, runner, gen, channels) if (a, p) in run_table
                    else np.full(s.shape, np.inf) for a, p in pairs])
    if launch is not None:
        run = np.maximum(run, launch.floor_us)
    best = np.argmin(est, axis=0)
    algo = np.array([a for a, _ in pairs])[best]
    proto = np.array([p for _, p in pairs])[best]
    time_us = np.take_along_axis(run, best[None], axis=0)[0]
    nccl_us = np.take_along_axis(est, best[None], axis=0)[0]
    return Prediction(op, m, s, time_us * 1e-6, algo, proto, MappingProxyType(dict(zip(pairs, run))), nccl_us,
                      launch, MappingProxyType(dict(zip(pairs, est))))


def _latency_part_us(op: str, algo: str, proto: str, s: np.ndarray, m: Machine) -> np.ndarray:
    """The latency term of the predictive model's time of one pair on ``m`` (its realized latency, with the ring
    plateau where ncclTopoGetAlgoTime applies it, tuning.cc:647-650), per size."""
    lat = np.full(s.shape, nccl_tuning_table(op, m, realized=True)[(algo, proto)].latency_us)
    if algo == "Ring" and proto == "Simple" and m.nodes > 1 and op == "all_reduce":
        channels = min(K.MAX_CHANNELS, 2 * nccl_graphs(m)["Ring"].n_channels)            # connect.cc:460
        factor = K.RING_PLATEAU_FACTOR["pre_sm80" if m.compute_capability < 80 else "sm80_up"]
        lat = np.where(s / (channels * m.n_ranks) >= 64, lat * factor, lat)
    return lat


def _retime(op: str, s: np.ndarray, pick: Prediction, run: Prediction, runner: Machine, scale: float,
            launch: LaunchShape | None) -> Prediction:
    """``pick``'s choices (NCCL's, on the machine it sees) timed by ``run``'s table (the same pairs on ``runner``),
    the bandwidth part divided by ``scale``; a pair ``runner`` does not enable keeps ``run``'s own pick."""
    times = np.empty(s.shape)
    for (a, p) in {(str(a), str(p)) for a, p in zip(np.atleast_1d(pick.algo), np.atleast_1d(pick.proto))}:
        at = (np.atleast_1d(pick.algo) == a) & (np.atleast_1d(pick.proto) == p)
        row = run.table.get((a, p))
        t = np.asarray(row if row is not None else run.time_s * 1e6, dtype=float)
        if scale != 1.0:
            lat = _latency_part_us(op, a, p, s, runner) if row is not None else np.zeros(s.shape)
            t = lat + (t - lat) / scale
        times[at] = t[at]
    if launch is not None:
        times = np.maximum(times, launch.floor_us)
    return replace(pick, time_s=times * 1e-6, table=run.table, launch=launch)
