"""No chapter and not the planner costs a collective across servers with one link's bandwidth per GPU.

Across servers NCCL's rings and trees are rail-aligned: channel c leaves every server through NIC c, so each
crosses the network once per server and channel, and a server's NICs share its bytes. A collective's time there
comes from the node model of :mod:`commlab.cluster` (the server's NICs x rate, the NVLink stage, NCCL's pick),
never from an alpha-beta ring whose B is one network link (chapters 00, 05, 07; issue 23 item 1).

The chapters are held two ways:

* statically, every code cell of every chapter: a call of a single-link cost function (the alpha-beta rings and
  trees of :mod:`commlab.cost`, ``fabric.ring_all_reduce_time_s``, a traffic item's ``time_s(link)``, the
  overlap simulator's ``bw_GBps``) that is handed a network link (a catalogue name of kind InfiniBand, RoCE or
  Ethernet, a ``hardware.link(...)`` of one, of a name the code does not fix, or anything computed from them) is
  a finding (a point-to-point message, "sendrecv" or a pipeline's send, crosses one NIC and is not). A chapter
  may keep a finding only where it teaches the single link on purpose and says so beside
  the node model: those few are listed below with the reason, and a listed one that is gone fails too;
* by running: chapter 00's widget function against ``cluster_cost`` for the example the chapter prints.

The scanner is shown to catch the code chapters 00 and 07 had before (one 50 GB/s NIC as the ring's B).
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from commlab import cluster, hardware

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))

#: Cost functions that take one link's latency and bandwidth for every hop of a collective.
SINGLE_LINK_CALLS = frozenset({
    "ring_all_reduce_time_s", "ring_reduce_scatter_time_s", "ring_all_gather_time_s", "all_reduce_time_s",
    "collective_time_s", "naive_all_reduce_time_s", "tree_all_reduce_time_s", "pipelined_tree_all_reduce_time_s",
    "double_tree_all_reduce_time_s", "recursive_doubling_all_reduce_time_s", "rabenseifner_all_reduce_time_s",
    "bidirectional_ring_all_reduce_time_s", "log_step_all_gather_time_s", "log_step_reduce_scatter_time_s",
    "time_s", "time_per_call_s", "DDPConfig", "FSDPConfig", "fabric.ring_all_reduce_time_s",
    "node_ring_all_reduce_time_s",
})
#: Calls that return a link (or hops over links) from the catalogue.
LINK_LOOKUPS = frozenset({"link", "find_link", "node_ring"})
NETWORK_KINDS = ("infiniband", "roce", "ethernet")
NETWORK_LINKS = frozenset(item.name for item in hardware.links() if item.kind in NETWORK_KINDS)

#: Single-link costs a chapter keeps on purpose, each beside the node model in the same cell:
#: (chapter, cell id, function) -> why.
ALLOWED = {
    ("05_ring_allreduce", "cell-016b", "ring_all_reduce_time_s"):
        "the ideal ring with the network's latency at every step, set against NCCL's own accounting "
        "(2(nNodes-1) network steps) and cluster_cost's ring and tree in the same cell",
    ("05_ring_allreduce", "cell-019b", "ring_all_reduce_time_s"):
        "one flat ring through two servers, the slow way the next cells contrast with NCCL's rings per NIC",
    ("05_ring_allreduce", "cell-019b", "node_ring_all_reduce_time_s"):
        "the same flat ring, timed hop by hop from fabric.node_ring",
    ("05_ring_allreduce", "cell-019b", "time_s"):
        "one hop of that flat ring over the network, printed beside its NVLink hops",
}

#: Chapters other engineers are fixing in parallel; strict, so that the lead flips each one once it passes.
PENDING: dict[str, str] = {
}


@dataclass(frozen=True)
class Finding:
    cell_id: str
    function: str
    line: int
    text: str


def _name_of(func: ast.expr) -> str:
    """`ring_all_reduce_time_s` for cost.ring_all_reduce_time_s(...), `fabric.ring_all_reduce_time_s` for the
    fabric's (the one of that name that takes hops), `time_s` for x.time_s(...)."""
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"fabric.{func.attr}" if owner == "fabric" and func.attr == "ring_all_reduce_time_s" else func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_point_to_point(call: ast.Call) -> bool:
    """A message between two GPUs ("sendrecv", a pipeline's send): it crosses one NIC, so one link is right."""
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Constant) and first.value == "sendrecv":
        return True
    owner = call.func.value if isinstance(call.func, ast.Attribute) else None
    return isinstance(owner, ast.Name) and "send" in owner.id


def _is_network_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NETWORK_LINKS


class _Scanner(ast.NodeVisitor):
    """One notebook's code cells in order; names bound to network links stay tainted across cells."""

    def __init__(self) -> None:
        self.tainted: set[str] = set()
        self.findings: list[Finding] = []
        self.cell_id = ""
        self.lines: list[str] = []

    # -- what is a network link ------------------------------------------------------------------------
    def _tainted(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if _is_network_literal(sub) or isinstance(sub, ast.Name) and sub.id in self.tainted:
                return True
            if isinstance(sub, ast.Call) and _name_of(sub.func).split(".")[-1] in LINK_LOOKUPS:
                args = list(sub.args) + [k.value for k in sub.keywords]
                if any(_is_network_literal(a) for a in args) or not all(isinstance(a, ast.Constant) for a in args):
                    return True                 # a network by name, or a link the code does not fix
        return False

    def _bind(self, targets: list[ast.expr], value: ast.AST) -> None:
        pairs = [(t, value) for t in targets]
        for target in targets:                              # a, b = x, y: each name from its own value
            if (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                    and len(target.elts) == len(value.elts)):
                pairs = [p for p in pairs if p[0] is not target] + list(zip(target.elts, value.elts))
        if len(pairs) > len(targets) or any(t is not targets[0] for t, _ in pairs):
            for target, part in pairs:
                self._bind_one(target, part)
            return
        self._bind_one(targets[0] if len(targets) == 1 else ast.Tuple(elts=list(targets)), value)

    def _bind_one(self, target: ast.AST, value: ast.AST) -> None:
        names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if self._tainted(value):
            self.tainted |= names
        else:
            self.tainted -= names

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        self._bind(node.targets, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if node.value is not None:
            self._bind([node.target], node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.generic_visit(node)
        self._bind([node.target], node.value)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        """A function's parameters are its own names: a module-level binding of the same name does not reach them."""
        outer = set(self.tainted)
        params = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        self.tainted -= {a.arg for a in params}
        self.generic_visit(node)
        self.tainted = outer

    def visit_For(self, node: ast.For) -> None:
        self._bind([node.target], node.iter)
        self.generic_visit(node)

    # -- what is a single-link cost of a network ------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        name = _name_of(node.func)
        if name not in SINGLE_LINK_CALLS or _is_point_to_point(node):
            return
        args = list(node.args) + [k.value for k in node.keywords]
        if any(self._tainted(a) for a in args):
            line = self.lines[node.lineno - 1].strip() if node.lineno <= len(self.lines) else ""
            self.findings.append(Finding(self.cell_id, name, node.lineno, line))


def scan_cells(cells: list[tuple[str, str]]) -> list[Finding]:
    """Findings in (cell id, source) pairs taken in order (IPython magics and shell lines are left out)."""
    scanner = _Scanner()
    for cell_id, source in cells:
        text = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
        scanner.cell_id, scanner.lines = cell_id, text.splitlines()
        scanner.visit(ast.parse(text))
    return scanner.findings


def notebook_cells(path: Path) -> list[tuple[str, str]]:
    nb = json.loads(path.read_text())
    return [(cell.get("id", f"#{i}"), "".join(cell["source"])) for i, cell in enumerate(nb["cells"])
            if cell["cell_type"] == "code"]


def _unallowed(chapter: str, findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if (chapter, f.cell_id, f.function) not in ALLOWED]


def _case(path: Path):
    reason = PENDING.get(path.stem)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [_case(p) for p in CHAPTERS])
def test_no_chapter_costs_a_network_collective_on_one_link(path):
    bad = _unallowed(path.stem, scan_cells(notebook_cells(path)))
    assert not bad, (f"{path.name} costs collectives across servers with one network link's bandwidth (take the "
                     "time from commlab.cluster.cluster_cost, the server's NICs together):\n"
                     + "\n".join(f"  cell {f.cell_id}, line {f.line}: {f.function}: {f.text}" for f in bad))


def test_every_allowed_single_link_cost_is_still_there():
    found = set()
    for path in CHAPTERS:
        found |= {(path.stem, f.cell_id, f.function) for f in scan_cells(notebook_cells(path))}
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"allowed single-link costs no chapter has any more (remove them from ALLOWED): {stale}"


def test_allowed_cells_also_ask_the_cluster_model():
    by_chapter = {p.stem: dict(notebook_cells(p)) for p in CHAPTERS}
    for chapter, cell_id, _ in ALLOWED:
        cells = by_chapter[chapter]
        ids = list(cells)
        near = [cells[i] for i in ids[ids.index(cell_id):ids.index(cell_id) + 3]]   # the cell and the two after
        assert any("cluster_cost" in source for source in near), (chapter, cell_id)


# --- the scanner catches what the chapters had ----------------------------------------------------------
OLD_CHAPTER_00 = '''
RING_LINKS = ("nvlink4", "pcie5", "ib-ndr", "roce-400", "eth-100-tcp")
def step_times_s(n_params, n_gpus, link_name, tokens_per_gpu):
    item = hardware.link(link_name)
    compute_s = 6 * n_params * tokens_per_gpu / (H100_BF16_DENSE_FLOPS * SUSTAINED_SHARE)
    ring_s = float(cost.ring_all_reduce_time_s(2 * n_params, n_gpus, item.latency_s, item.unidir_Bps))
    return compute_s, ring_s
'''
OLD_CHAPTER_07_HSDP = '''
ndr, nv4 = hardware.link("ib-ndr"), hardware.link("nvlink4")
fsdp_all = parallelism.dp_traffic(m7, parallelism.ParallelConfig(dp=64, zero=3))
print(f"{units.format_time(fsdp_all.time_s(ndr))} on InfiniBand NDR")
print(f"({units.format_time(inside.time_s(nv4))}), ({units.format_time(across.time_s(ndr))})")
'''
OLD_CHAPTER_07_DDP = '''
ndr = hardware.link("ib-ndr")
defaults = overlap.DDPConfig(layers=layers, n_ranks=64, alpha_s=alpha_s, bw_GBps=ndr.unidir_GBps,
                             bucket_cap_mb=25)
'''


def test_the_scanner_catches_chapter_00s_old_widget():
    found = scan_cells([("ch00-02b", OLD_CHAPTER_00)])
    assert [f.function for f in found] == ["ring_all_reduce_time_s"]


def test_the_scanner_catches_chapter_07s_old_fsdp_and_ddp_costs():
    hsdp = scan_cells([("ch07-26a", OLD_CHAPTER_07_HSDP)])
    assert [f.function for f in hsdp] == ["time_s", "time_s"]          # flat FSDP and HSDP's replicas on NDR
    assert all("ndr" in f.text for f in hsdp)                          # not the NVLink one
    ddp = scan_cells([("ch07-03", OLD_CHAPTER_07_DDP)])
    assert [f.function for f in ddp] == ["DDPConfig"]


def test_the_scanner_leaves_nvlink_and_the_cluster_model_alone():
    code = '''
nvlink = hardware.link("nvlink4")
t = cost.ring_all_reduce_time_s(S, 8, nvlink.latency_s, nvlink.unidir_Bps)
net_GBps = cluster.Shape.of(view, 64).network_GBps
cfg = overlap.DDPConfig(layers=layers, n_ranks=64, alpha_s=1e-5, bw_GBps=net_GBps)
x = cost.collective_time_s("all_reduce", sizes, 8, "nvlink4")
'''
    assert scan_cells([("c", code)]) == []


def test_a_rebound_name_is_no_longer_a_network():
    code = '''
link = hardware.link("ib-ndr")
link = hardware.link("nvlink4")
t = cost.ring_all_reduce_time_s(S, 8, link.latency_s, link.unidir_Bps)
'''
    assert scan_cells([("c", code)]) == []


# --- chapter 00's widget, run --------------------------------------------------------------------------
def test_chapter_00s_widget_takes_the_cluster_models_time():
    cells = dict(notebook_cells(ROOT / "chapters" / "00_welcome.ipynb"))
    source = cells["ch00-02b"]
    source = source[:source.index("\nExplorer(")]                        # the functions and their checks
    space: dict = {}
    exec(compile(source, "ch00-02b", "exec"), space)                    # noqa: S102 - the chapter's own cell
    network = "InfiniBand NDR, 8 x 400 Gb/s per server"
    _, comm_s, algo, _ = space["step_times_s"](70e9, 64, network, 4, 4096)
    costed = cluster.cluster_cost("all_reduce", [4 * 70e9], "dgx-h100-ndr", 8)
    assert costed.nccl_pick is not None and algo == costed.nccl_pick[0]
    assert comm_s == pytest.approx(float(costed[algo].ran_time_s[0]))
    one_link = hardware.link("ib-ndr")
    single = 2 * 63 / 64 * 4 * 70e9 / one_link.unidir_Bps               # the old widget's bandwidth term
    assert comm_s < single / 5


# --- the planner ------------------------------------------------------------------------------------------
PLANNER_TOLERANCE = 0.25       # the planner's time for a collective across servers against the cluster model's


def test_the_planner_costs_collectives_across_servers_with_the_node_model():
    from commlab import parallelism
    from commlab.parallelism.placement import place_layout

    dgx = cluster.preset("dgx-h100-ndr")
    misses = []
    for n_gpus in (64, 256):
        for layout in parallelism.plan("70B", n_gpus, "h100").ranked:
            for g in place_layout(layout, dgx):
                if g.nodes > 1 and g.cluster_s > 0 and abs(g.planner_s / g.cluster_s - 1) > PLANNER_TOLERANCE:
                    misses.append(f"{layout.name}: {g.strategy} {g.primitive} on {g.n_ranks} ranks "
                                  f"({g.ranks_per_node} per node): planner {g.planner_s:.3g} s, "
                                  f"cluster {g.cluster_s:.3g} s")
    assert not misses, "\n".join(misses[:10])


def test_the_node_model_is_what_the_chapters_say():
    """The figures the chapters teach, held against the cluster model itself: a server's egress is its NICs
    together, and NCCL's rings across 8 DGX H100 run at min(NVLink, k B_NIC), not at one NIC."""
    shape = cluster.Shape.of(cluster.preset("dgx-h100-ndr"), 8)
    assert shape.network_GBps == shape.nics_per_domain * shape.nic_GBps == 8 * 48.0
    s = 4 * 70e9
    costed = cluster.cluster_cost("all_reduce", [s], "dgx-h100-ndr", 8)
    closed = 2 * 63 / 64 * s / (min(shape.nvlink_GBps, shape.network_GBps) * 1e9)
    assert float(costed["ring"].ran_time_s[0]) == pytest.approx(closed, rel=0.15)
    assert float(costed["flat-ring"].ran_time_s[0]) > 7 * closed      # one ring through one NIC per server


def test_half_busbw_answers_in_one_unit():
    from commlab import exercises

    for seed in ("a", "b", "c", "d", "e", "f", "g", "h"):
        worked = exercises.worked("ch05.half-busbw", seed)
        sizes = re.findall(r"= ([\d.]+) (\w+)\. With|gives ([\d.]+) (\w+),", worked.solution)
        units_used = {u for a, u, b, v in sizes for u in (u, v) if u}
        assert units_used == {"MB"}, (seed, worked.solution)
        match = re.search(r"= ([\d.]+) MB\. With", worked.solution)
        assert match is not None, worked.solution
        first = float(match.group(1))
        assert first == pytest.approx(worked.expected, rel=1e-3)


def test_chapter_07s_fsdp_and_hsdp_times_are_the_cluster_models():
    import math

    from commlab import expect, parallelism, units
    from commlab.cluster.groups import group_view

    source = dict(notebook_cells(ROOT / "chapters" / "07_overlap.ipynb"))["ch07-26a"]
    space: dict = {"math": math, "parallelism": parallelism, "cluster": cluster, "units": units,
                   "group_view": group_view, "expect": expect}
    exec(compile(source, "ch07-26a", "exec"), space)                    # noqa: S102 - the chapter's own cell
    flat_s, _, network_s = space["times"]["dgx-h100-ndr"]
    fsdp_all = space["fsdp_all"]
    # independently: every call on 8 DGX H100 as cluster_cost's NCCL pick, summed
    dgx = cluster.preset("dgx-h100-ndr")
    want = 0.0
    for item in fsdp_all:
        costed = cluster.cluster_cost(item.primitive, [item.nbytes_per_call], dgx, 8)
        assert costed.nccl_pick is not None
        want += item.calls_per_step * float(costed[costed.nccl_pick[0]].ran_time_s[0])
    assert flat_s == pytest.approx(want)
    one_link = fsdp_all.time_s("ib-ndr")                               # the old per-GPU count on one NIC
    assert flat_s < one_link / 4 and network_s < flat_s
