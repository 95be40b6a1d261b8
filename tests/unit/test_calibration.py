"""The calibrated constants: one table (commlab/data/calibration.csv) that the models read their values from,
each row naming the runs it was chosen on and checked on; benchmarks/README.md shows the same table; the
comments of src/ cite sources, never the tracker or a test fixture's number."""
from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

from commlab import calibration
from commlab.errors import CommlabError
from commlab.nccl import nccl_tests_log
from commlab.scorecard.scorecard import chosen_on, scorecard

ROOT = Path(__file__).resolve().parents[2]
ROWS = calibration.table()


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_every_row_is_complete_and_its_module_uses_the_value(row):
    assert all(getattr(row, f) for f in ("value", "unit", "what", "chosen_on", "checked_on", "source")), row
    constant = getattr(importlib.import_module(row.module), row.name)
    if isinstance(constant, (int, float)):
        assert constant == float(row.value)
    else:                                  # a version or names joined by '+'
        assert tuple(str(x) for x in constant) == tuple(re.split(r"[+.]", row.value))


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_the_runs_a_constant_was_chosen_on_exist(row):
    for run in row.runs:
        if run.isdigit():
            assert nccl_tests_log(run).is_file()
        elif run.endswith(".txt"):
            assert (ROOT / "src" / "commlab" / "data" / "nccl" / run).is_file(), run
        else:                                  # a public run that is not shipped: its source is named
            assert run in row.chosen_on, run


def test_the_scorecard_knows_which_logs_are_in_sample():
    marked = {sc.name[:2]: chosen_on(sc) for sc in scorecard() if chosen_on(sc)}
    assert marked["06"] == ("SHM_TWO_WAY_GBPS",) and "TREE_FILL_HOPS_PER_LEVEL" in marked["09"]
    assert "12" not in marked                                  # TCPXO's hop was chosen on another run


def test_an_unknown_constant_names_the_ones_there_are():
    with pytest.raises(CommlabError, match="no constant 'NOPE'.*SHM_TWO_WAY_GBPS"):
        calibration.entry("NOPE")


def test_benchmarks_readme_shows_the_table():
    assert calibration.markdown() in (ROOT / "benchmarks" / "README.md").read_text()


_HISTORY = re.compile(r"(?<![\w/-])(?:issue|fixtures?)\s+\d", re.IGNORECASE)
_SOURCE = re.compile(r"[\w.-]+/[\w.-]+\s+issue\s+\d|nccl-tests\s+issue\s+\d", re.IGNORECASE)


def _comments(source: str):
    """(line, text) of every comment and docstring of a module (not its other strings: those are output)."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                for k, line in enumerate(first.value.value.splitlines()):
                    yield first.lineno + k, line


def test_no_comment_in_src_cites_the_tracker_or_a_fixture_number():
    found = []
    for path in sorted((ROOT / "src" / "commlab").rglob("*.py")):
        for number, line in _comments(path.read_text()):
            text = _SOURCE.sub("", line)           # an upstream project's issue is a source, cited with its repo
            if _HISTORY.search(text):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
