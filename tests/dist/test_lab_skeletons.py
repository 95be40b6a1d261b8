"""No lab hands out its answers: the "your turn" cells hold the task and the signature (no solution code in their
comments), no other cell of a lab carries a long stretch of a reference answer, and every skeleton, as shipped,
fails its own check (so the learner must write something, and the check notices when they have not)."""
from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from commlab.labs import cells, registry

REPO = Path(__file__).resolve().parents[2]
#: A run of this many tokens shared with the reference is code, not prose ("dist.all_gather_single(out, x)" is 8).
COMMENT_RUN = 8
#: Outside the "your turn" cells a notebook may show the lab's own code; a run this long from an answer is a leak.
CELL_RUN = 24


def notebook_cells(lab: str) -> list[tuple[str, str]]:
    nb = json.loads((REPO / "labs" / f"{lab}.ipynb").read_text())
    return [(c["id"], "".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "code"]


def your_turn_cells():
    return [(entry.name, cid, source) for entry in registry.LABS for cid, source in notebook_cells(entry.name)
            if cells.decorated_tasks(source)]


def code_tokens(source: str) -> list[str]:
    """The NAME, NUMBER, OP and STRING tokens of Python ``source``; comments, layout and import lines dropped
    (an import is never the answer)."""
    kinds = (tokenize.NAME, tokenize.NUMBER, tokenize.OP, tokenize.STRING)
    imports = {n for n, line in enumerate(source.splitlines(), 1) if line.strip().startswith(("import ", "from "))}
    return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type in kinds and t.start[0] not in imports]


def text_tokens(text: str) -> list[str]:
    """Code-like tokens of free text (a comment): names, numbers, operators."""
    return re.findall(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\*\*|//|==|!=|<=|>=|[-+*/%()\[\]{},.:=<>]", text)


def comments(source: str) -> str:
    return "\n".join(t.string[1:] for t in tokenize.generate_tokens(io.StringIO(source).readline)
                     if t.type == tokenize.COMMENT)


def shared_run(tokens: list[str], reference: list[str], n: int) -> str | None:
    """The first run of ``n`` consecutive tokens of ``tokens`` that also occurs in ``reference``."""
    runs = {tuple(reference[i:i + n]) for i in range(len(reference) - n + 1)}
    for i in range(len(tokens) - n + 1):
        if tuple(tokens[i:i + n]) in runs:
            return " ".join(tokens[i:i + n])
    return None


def _module_functions(path: Path) -> dict[str, tuple[ast.FunctionDef, str]]:
    """name -> (its FunctionDef, the file's text) for a module's functions, and for the names it binds to a
    function of a commlab module it imports (``from commlab.p2p import ring`` then ``x = ring.x``)."""
    text = path.read_text()
    tree = ast.parse(text)
    out = {node.name: (node, text) for node in tree.body if isinstance(node, ast.FunctionDef)}
    modules = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("commlab"):
            for alias in node.names:
                file = REPO / "src" / Path(*node.module.split("."), f"{alias.name}.py")
                if file.is_file():
                    modules[alias.asname or alias.name] = file
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name) and node.value.value.id in modules):
            theirs = _module_functions(modules[node.value.value.id])
            out.update({k: v for k, v in theirs.items() if k not in out})
            for target in node.targets:
                if isinstance(target, ast.Name) and node.value.attr in theirs:
                    out[target.id] = theirs[node.value.attr]
    return out


def answer_sources(lab: str) -> str:
    """The source of the reference answers of ``lab`` (the functions the learner writes, where the solution
    module defines them or takes them from a commlab module), with the functions they call."""
    functions = _module_functions(REPO / "src" / "commlab" / "labs" / "solutions" / f"{lab}.py")
    wanted = {f for task in registry.lab(lab).tasks for f in task.functions}
    names, found = set(wanted), []
    while names:
        name = names.pop()
        entry = functions.get(name)
        if entry is None or entry in found:
            continue
        found.append(entry)
        names |= {n.id for n in ast.walk(entry[0]) if isinstance(n, ast.Name) and n.id in functions}
    return "\n\n".join(ast.get_source_segment(text, node) for node, text in found)


@pytest.mark.parametrize("lab, cell_id, source", your_turn_cells(), ids=lambda v: v if isinstance(v, str) and
                         len(v) < 40 else None)
def test_a_your_turn_cell_has_no_solution_code_in_its_comments(lab, cell_id, source):
    leaked = shared_run(text_tokens(comments(source)), code_tokens(answer_sources(lab)), COMMENT_RUN)
    assert leaked is None, f"{lab} {cell_id}: a comment holds the reference's code: {leaked!r}"


@pytest.mark.parametrize("lab", registry.names())
def test_no_other_cell_carries_a_long_stretch_of_an_answer(lab):
    reference = code_tokens(answer_sources(lab))
    for cid, source in notebook_cells(lab):
        if cells.decorated_tasks(source):
            continue
        leaked = shared_run(code_tokens(source), reference, CELL_RUN)
        assert leaked is None, f"{lab} {cid}: this cell repeats the reference answer: {leaked!r}"


def test_the_scanner_finds_the_old_skeletons_answers():
    """The ring's skeleton as it was before issue 16 carried the whole step in comments: the scan must see it."""
    old = '''def reduce_scatter_steps(buffer, tracer, first_step=0):
    for s in range(n - 1):
        # incoming = torch.empty_like(tracer.chunk(buffer, recv_c))
        # ops = [tracer.send_op(tracer.chunk(buffer, send_c), right, step=first_step + s, chunk=send_c, reduce=True),
        #        dist.P2POp(dist.irecv, incoming, left)]
        raise NotImplementedError("write the reduce-scatter steps")'''
    reference = code_tokens(answer_sources("build_your_own_ring"))
    assert shared_run(text_tokens(comments(old)), reference, COMMENT_RUN) is not None
    assert shared_run(text_tokens("# post the send and the receive together, then add what arrived"), reference,
                      COMMENT_RUN) is None


class _Skeleton:
    """A Code-like view of the functions a lab's skeleton cells define, as shipped."""

    def __init__(self, lab: str, namespace: dict):
        self.lab, self.namespace, self.mine = lab, namespace, True

    def function(self, name):
        if name in self.namespace:
            return self.namespace[name]

        def missing(*args, **kwargs):
            raise NotImplementedError(f"{name} has no skeleton")

        return missing


@pytest.mark.parametrize("lab", registry.names())
def test_every_skeleton_as_shipped_fails_its_check(lab, no_child_left):
    namespace = {"reader_or_solution": lambda name: (lambda fn: fn)}
    for _, _, source in [c for c in your_turn_cells() if c[0] == lab]:
        exec(compile(source, f"<{lab} skeleton>", "exec"), namespace)
    entry = registry.lab(lab)
    for task in entry.tasks:
        result = registry.run_task(entry, task, _Skeleton(lab, namespace))
        assert result.problem, f"{lab}: the skeleton of {task.name} passes its check"
