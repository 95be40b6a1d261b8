"""A lab's slow first imports (commlab.labs.registry.Lab.imports): a process's first torch optimizer or
DistributedDataParallel imports torch._dynamo (torch/_compile.py), about a second of CPU, so a lab whose code
builds one names it, and the grader imports it once in the fork server and in each student's sandbox, before the
lab's ranks are forked."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from commlab.labs import registry

SRC = Path(__file__).resolve().parents[2] / "src" / "commlab" / "labs"


def _lab_source(name: str) -> str:
    parts = [SRC / "solutions" / f"{name}.py", SRC / "checks" / f"{name}.py", *(SRC / "checks" / name).glob("*.py")]
    return "\n".join(p.read_text() for p in parts if p.is_file())


@pytest.mark.parametrize("name", registry.names())
def test_a_lab_that_builds_an_optimizer_or_ddp_names_torch_dynamo(name):
    source = _lab_source(name)
    builds = "optim." in source or "DistributedDataParallel" in source
    assert ("torch._dynamo" in registry.lab(name).imports) == builds


def test_the_first_optimizer_imports_torch_dynamo():
    code = ("import sys, torch; assert 'torch._dynamo' not in sys.modules; "
            "torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1); print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
