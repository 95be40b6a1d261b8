"""The package's structure: imports run down the layers only, no import circles, no constant defined twice, and
``import commlab.cost`` loads only the formulas a learner reads.

The layers are listed once, in docs/architecture.md ("### The layers": a table of layer number and packages,
lowest first); this test reads them there. Every import of the package counts, at module level or inside a
function, except those under ``if TYPE_CHECKING:`` (they never run).
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "commlab"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _layers() -> dict[str, int]:
    """package -> layer, from the table under '### The layers' in docs/architecture.md."""
    text = ARCHITECTURE.read_text()
    section = text.split("### The layers", 1)[1].split("\n#", 1)[0]
    out: dict[str, int] = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|([^|]+)\|", line)
        if m:
            for name in re.findall(r"`([\w.]+)`", m.group(2)):
                assert name not in out, f"docs/architecture.md lists {name} in two layers"
                out[name] = int(m.group(1))
    assert out, "docs/architecture.md has no '### The layers' table"
    return out


LAYERS = _layers()


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        out[".".join(parts).removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    """The commlab modules ``module`` imports (``from commlab.x import y`` counts as commlab.x.y when y is one)."""
    tree = ast.parse(MODULES[module].read_text())
    skip = _type_checking_nodes(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("commlab"):
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("commlab")]
        for name in names:
            target = _resolve(name)
            if target and target != module and not module.startswith(target + "."):
                found.add(target)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _unit(module: str) -> str:
    """The layer table's name for a module: its package below commlab (``commlab`` itself for the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "commlab"


def test_every_package_has_a_layer():
    missing = sorted({_unit(m) for m in MODULES} - set(LAYERS))
    assert not missing, f"docs/architecture.md's layer table does not list {missing}"
    gone = sorted(set(LAYERS) - {_unit(m) for m in MODULES})
    assert not gone, f"docs/architecture.md's layer table lists packages that do not exist: {gone}"


def test_imports_run_down_the_layers_only():
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        for target in sorted(targets):
            a, b = _unit(module), _unit(target)
            if a != b and LAYERS[b] >= LAYERS[a]:
                wrong.append(f"{module} (layer {LAYERS[a]}) imports {target} (layer {LAYERS[b]})")
    assert not wrong, "imports that do not run down the layers:\n" + "\n".join(wrong)


def _circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(GRAPH):
        if start in index:
            continue
        work = [(start, iter(sorted(GRAPH[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(GRAPH[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_circle_finder_finds_a_circle():
    GRAPH["commlab.errors"].add("commlab.units")
    try:
        assert ["commlab.errors", "commlab.units"] in _circles()
    finally:
        GRAPH["commlab.errors"].discard("commlab.units")


def test_no_import_circles_outside_the_book():
    circles = [c for c in _circles() if not all(m.startswith("commlab.book.") for m in c)]
    assert not circles, f"modules that import each other (directly or round a loop): {circles}"


def test_no_import_circles_in_the_book():
    circles = [c for c in _circles() if all(m.startswith("commlab.book.") for m in c)]
    assert not circles, f"modules of commlab.book that import each other: {circles}"


# -- constants --------------------------------------------------------------------------------------------------
#: the packages of models and facts, where a constant must have one home
MODEL_PACKAGES = ("commlab.cost", "commlab.tuner", "commlab.scorecard", "commlab.cluster", "commlab.nccl",
                  "commlab.fabric", "commlab.hardware", "commlab.units", "commlab.collectives")
_WRAPPERS = ("MappingProxyType", "frozenset", "tuple", "dict", "_table")


def _literal(node: ast.AST):
    """The value of a constant written as a literal (or a literal wrapped in MappingProxyType, tuple, ...);
    None for anything computed from other names."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WRAPPERS
            and len(node.args) == 1 and not node.keywords):
        node = node.args[0]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _numeric(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, dict):
        return any(_numeric(v) for v in value.values())
    if isinstance(value, (tuple, list, set, frozenset)):
        return any(_numeric(v) for v in value)
    return False


def _constants(source: str, module: str) -> list[tuple[str, str, object]]:
    """(module, NAME, value) of every module-level UPPER_CASE name bound to a literal."""
    out = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id.lstrip("_").isupper():
                    value = _literal(node.value)
                    if value is not None:
                        out.append((module, target.id.lstrip("_"), value))
    return out


def _duplicates(constants: list[tuple[str, str, object]]) -> list[str]:
    """Numbers bound to the same name in two modules, and the same table (2+ entries) written in two modules."""
    by_name: dict[str, set[str]] = {}
    by_value: dict[str, set[str]] = {}
    for module, name, value in constants:
        if _numeric(value):
            by_name.setdefault(name, set()).add(module)
        if isinstance(value, (dict, tuple, list, set, frozenset)) and len(value) >= 2:
            by_value.setdefault(repr(value), set()).add(f"{module}.{name}")
    found = [f"{name} is defined in {sorted(ms)}" for name, ms in sorted(by_name.items()) if len(ms) > 1]
    found += [f"the same table {value[:60]} is written as {sorted(ms)}" for value, ms in sorted(by_value.items())
              if len({m.rpartition('.')[0] for m in ms}) > 1]
    return found


def test_the_duplicate_finder_finds_a_second_copy():
    one = _constants('BASE_LAT_US = MappingProxyType({("Ring", "LL"): 6.6, ("Ring", "Simple"): 8.4})', "a")
    other = _constants('BASE_LAT_US = _table({("Ring", "LL"): 6.6})\nNAMES = ("LL", "LL128")', "b")
    again = _constants('KEPT = ("LL", "LL128")\nDERIVED = tuple(x for x in NAMES)', "c")
    assert len(_duplicates(one + other + again)) == 2


def test_no_constant_is_defined_twice():
    constants = [c for module, path in sorted(MODULES.items()) if module.startswith(MODEL_PACKAGES)
                 for c in _constants(path.read_text(), module)]
    found = _duplicates(constants)
    assert not found, "constants with more than one home:\n" + "\n".join(found)


# -- what importing the formulas costs ----------------------------------------------------------------------------
FORMULAS = {"commlab.cost", "commlab.cost.alpha_beta", "commlab.cost.halving_doubling", "commlab.cost.bandwidth",
            "commlab.cost.fit", "commlab.cost.protocol_fit"}
#: what the formulas themselves stand on
FOUNDATIONS = {"commlab", "commlab.errors", "commlab.units", "commlab.hardware", "commlab.hardware.links",
               "commlab.collectives", "commlab.calibration"}    # hardware reads its chosen network latencies there


def test_import_commlab_cost_loads_only_the_formulas():
    code = ("import json, sys, commlab.cost; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('commlab'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(json.loads(out.stdout))
    assert loaded == FORMULAS | FOUNDATIONS, f"import commlab.cost loads {len(loaded)} modules: {sorted(loaded)}"


def _module_aliases(tree: ast.AST) -> dict[str, str]:
    """local name -> commlab module, for ``import commlab.x as y`` and ``from commlab.x import module``."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update({a.asname: a.name for a in node.names if a.asname and a.name in MODULES})
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("commlab"):
            out.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names
                        if f"{node.module}.{a.name}" in MODULES})
    return out


def test_private_names_stay_private():
    """No module imports another module's ``_name`` or reaches for it through the module: what modules share is
    public and documented."""
    found = []
    for module, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text())
        aliases = _module_aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("commlab"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    found.append(f"{module} imports {', '.join(private)} from {node.module}")
            elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("_")
                  and isinstance(node.value, ast.Name) and aliases.get(node.value.id, module) != module):
                found.append(f"{module} uses {aliases[node.value.id]}.{node.attr}")
    assert not found, "\n".join(found)


# -- one record per GPU ---------------------------------------------------------------------------------------------
def _gpu_figures() -> dict[str, set[float]]:
    """GPU name -> its record's memory, HBM (GB/s and TB/s) and BF16 peak figures."""
    from commlab.hardware.gpus import GPUS, VARIANTS
    out: dict[str, set[float]] = {}
    for name, g in [*GPUS.items(), *VARIANTS.items()]:
        figures = {g.memory_GiB, g.hbm_GBps, g.peak_bf16_TFLOPS, g.hbm_GBps and g.hbm_GBps / 1000}
        out[name] = {float(f) for f in figures if f}
    return out


def _gpu_figures_written(source: str, module: str, figures: dict[str, set[float]]) -> list[str]:
    """A GPU's name and one of its record's figures written side by side: as a dict entry, or in one call (the
    figures are floats: whole-number literals are counts, e.g. 8 GPUs per node)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[ast.AST, list[ast.AST]]] = []
        if isinstance(node, ast.Dict):
            pairs = [(k, [v]) for k, v in zip(node.keys, node.values) if k is not None]
        elif isinstance(node, ast.Call):
            args = [*node.args, *(k.value for k in node.keywords)]
            pairs = [(a, args) for a in args]
        for key, values in pairs:
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            name = key.value.strip().lower()
            numbers = {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, float)}
            if numbers & figures.get(name, set()):
                found.append(f"{module} writes {name}'s {sorted(numbers & figures[name])} (line {key.lineno})")
    return found


def test_the_gpu_figure_finder_finds_a_second_copy():
    figures = {"h100": {80.0, 3350.0, 3.35, 989.0}}
    assert _gpu_figures_written('HBM = MappingProxyType({"h100": 3350.0, "x": 1.0})', "a", figures)
    assert _gpu_figures_written('GpuSpec("h100", "H100", 80.0, 989.0, hbm_TBps=3.35)', "b", figures)
    assert not _gpu_figures_written('GpuSpec("h100", "H100", 80, cluster_gpu="h100")', "c", figures)


def test_every_gpu_figure_is_written_once():
    """Memory, HBM bandwidth and BF16 peak of a GPU live in its record (commlab.hardware.gpus) only."""
    figures = _gpu_figures()
    found = [f for module, path in sorted(MODULES.items()) if module != "commlab.hardware.gpus"
             for f in _gpu_figures_written(path.read_text(), module, figures)]
    assert not found, "GPU figures written outside commlab.hardware.gpus:\n" + "\n".join(found)
