"""The commlab package a student's process imports while a lab is graded: a read-only copy without the
reference solutions, the checks (their answer keys), the exercises' answers and the grader itself, in which
each function that computes a lab's answer is replaced by one that refuses (:func:`package_copy`)."""
from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

from commlab.errors import CommlabError

#: Parts of the package a student's process never gets: the references, the checks (answer keys), the book's
#: exercise bank and its answers, the grader itself.
HIDDEN = ("labs/solutions", "labs/checks", "exercises", "labs/grade.py", "labs/grade_lab.py", "labs/graded.py",
          "labs/gradebook.py", "labs/collect.py", "labs/reference_cache.py", "labs/student_sandbox.py",
          "labs/forked.py")


def _stub_source(text: str, names: set[str], why: str) -> str:
    """``text`` with every function (or method, as ``Class.method``) of ``names`` replaced by one that refuses."""
    tree = ast.parse(text)

    def body(qualname: str):
        message = f"{qualname} computes the answer of a lab ({why}): it is not available while a lab is graded"
        return ast.parse(f"raise PermissionError({message!r})").body

    def visit(nodes, prefix: str):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and prefix + node.name in names:
                node.body = body(prefix + node.name)
                node.decorator_list = [d for d in node.decorator_list if isinstance(d, ast.Name)
                                       and d.id in ("staticmethod", "classmethod", "property")]
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")

    visit(tree.body, "")
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def package_copy(dest: Path, answers: dict[str, tuple[str, ...]]) -> Path:
    """A copy of the running commlab package under ``dest`` (``dest/commlab``), read-only, for the students.

    ``answers`` maps a lab to its answer functions, ``"commlab.module:function"`` or ``":Class.method"``
    (:attr:`commlab.labs.registry.Lab.answers`): each is replaced by a function that raises PermissionError
    (its source is not in the copy). The parts in :data:`HIDDEN` are left out. The copy is compiled to bytecode
    before it is made read-only.
    """
    import commlab

    source = Path(commlab.__file__).resolve().parent
    target = Path(dest) / "commlab"
    hidden = {source / h for h in HIDDEN}

    def ignore(folder: str, entries: list[str]) -> list[str]:
        return [e for e in entries if e == "__pycache__" or Path(folder, e) in hidden or e.endswith(".pyc")]

    shutil.copytree(source, target, ignore=ignore, symlinks=False)
    by_module: dict[str, tuple[set[str], set[str]]] = {}
    for lab, names in answers.items():
        for name in names:
            module, _, function = name.partition(":")
            entry = by_module.setdefault(module, (set(), set()))
            entry[0].add(function)
            entry[1].add(lab)
    for module, (functions, labs) in by_module.items():
        parts = module.split(".")[1:]
        path = target.joinpath(*parts).with_suffix(".py")
        if not path.is_file():
            path = target.joinpath(*parts, "__init__.py")
        if not path.is_file():
            raise CommlabError(f"an answer function's module {module!r} is not in the package")
        path.write_text(_stub_source(path.read_text(), functions, "the lab " + ", ".join(sorted(labs))))
    import compileall                   # compiled once here: no sandbox compiles the package again (read-only)

    compileall.compile_dir(str(target), quiet=1)
    for path in sorted(target.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    target.chmod(0o555)
    return target


def remove_tree(path: Path) -> None:
    """Remove a folder this module made read-only."""
    def again(func, name, _exc):
        try:
            os.chmod(name, 0o700)
            os.chmod(os.path.dirname(name), 0o700)
            func(name)
        except OSError:
            pass
    if Path(path).exists():
        for p in Path(path).rglob("*"):
            try:
                if p.is_dir() and not p.is_symlink():
                    p.chmod(0o700)
            except OSError:
                pass
        shutil.rmtree(path, onerror=again)
