"""Reading a "your turn" cell: which tasks it defines, whether it is still the skeleton, what it imports.

A lab's "your turn" cell defines one or more functions decorated with ``@reader_or_solution("<lab>")``; those
function names are the cell's *tasks*. When the cell runs, :mod:`commlab.labs.mine` keeps its source as a
section of ``labs/mine/<lab>.py``; this module answers the three questions that needs, from the source alone
(``ast``, no execution):

* :func:`decorated_tasks`: the functions the cell hands in;
* :func:`is_skeleton`: is the cell still the unwritten skeleton the book ships? Such a cell is never saved
  over the learner's earlier code (a newer notebook, or a cell reset by mistake, must not erase it);
* :func:`module_imports`: the ``import`` lines for the notebook's modules the cell uses without importing them
  (``np`` from the lab's first cell), so that the saved section is a module that imports on its own.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import types

DECORATOR = "reader_or_solution"


def normalize(source: str) -> str:
    """The cell's text with trailing spaces and trailing blank lines removed, ``\\n`` line ends.

    >>> normalize("def f():  \\r\\n    pass\\n\\n\\n")
    'def f():\\n    pass\\n'
    """
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def fingerprint(source: str) -> str:
    """SHA-256 of :func:`normalize` (``source``): the same for a cell however its lines end.

    >>> fingerprint("x = 1\\n") == fingerprint("x = 1   \\n\\n")
    True
    """
    return hashlib.sha256(normalize(source).encode()).hexdigest()


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _is_our_decorator(node: ast.expr) -> bool:
    call = node.func if isinstance(node, ast.Call) else node
    name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
    return name == DECORATOR


def _decorated(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(_is_our_decorator(d) for d in node.decorator_list)]


def decorated_tasks(source: str) -> tuple[str, ...]:
    """Names of the top-level functions decorated with ``reader_or_solution``, in the cell's order.

    >>> decorated_tasks('@reader_or_solution("x")\\ndef f(): pass\\ndef g(): pass\\n'
    ...                 '@labs.reader_or_solution("x")\\ndef h(): pass')
    ('f', 'h')
    """
    tree = _parse(source)
    return () if tree is None else tuple(node.name for node in _decorated(tree))


def _unconditional_raise(body: list[ast.stmt]) -> bool:
    """A ``raise NotImplementedError`` reached whatever the arguments: in the body itself or in a loop of it."""
    for stmt in body:
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            if getattr(exc, "id", "") == "NotImplementedError":
                return True
        if isinstance(stmt, (ast.For, ast.While, ast.With)) and _unconditional_raise(stmt.body):
            return True
    return False


def is_skeleton(source: str, shipped: frozenset[str] = frozenset()) -> bool:
    """True when the cell is a skeleton: its fingerprint is one the book shipped (``shipped``), or one of its
    decorated functions still raises ``NotImplementedError`` unconditionally.

    >>> is_skeleton('@reader_or_solution("x")\\ndef f(n):\\n    for i in range(n):\\n'
    ...             '        raise NotImplementedError("write f")')
    True
    >>> is_skeleton('@reader_or_solution("x")\\ndef f(n):\\n    if n < 0:\\n'
    ...             '        raise NotImplementedError\\n    return n')
    False
    """
    if fingerprint(source) in shipped:
        return True
    tree = _parse(source)
    return tree is not None and any(_unconditional_raise(node.body) for node in _decorated(tree))


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the cell itself binds (assignments, imports, defs, arguments, comprehension targets)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


def free_names(source: str) -> list[str]:
    """Names the cell reads but neither binds nor gets from builtins, sorted.

    >>> free_names("import math\\ndef f(x):\\n    y = np.sqrt(x)\\n    return math.pi * y + len(WIDTHS)")
    ['WIDTHS', 'np']
    """
    tree = _parse(source)
    if tree is None:
        return []
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return sorted(used - _bound_names(tree) - set(dir(builtins)))


def module_imports(source: str, namespace: dict) -> tuple[list[str], list[str]]:
    """(import lines for the free names that are modules in ``namespace``, the other free names).

    >>> import numpy
    >>> module_imports("def f(x):\\n    return np.sqrt(x) + OFFSET", {"np": numpy, "OFFSET": 3})
    (['import numpy as np'], ['OFFSET'])
    """
    lines, others = [], []
    for name in free_names(source):
        value = namespace.get(name)
        if isinstance(value, types.ModuleType):
            real = value.__name__
            if real == name:
                lines.append(f"import {real}")
            elif "." in real and real.rsplit(".", 1)[1] == name:
                lines.append(f"from {real.rsplit('.', 1)[0]} import {name}")
            else:
                lines.append(f"import {real} as {name}")
        else:
            others.append(name)
    return lines, others
