"""`pip install commlab` without extras runs the command line and the live layer: `commlab bench`, `torchrun -m
commlab bench`, and the other subcommands, with none of the book's tools (JupyterLab, ipywidgets, IPython,
nbconvert...) importable; `commlab book build` then says which extra to install.

The book's packages are hidden from the child processes by a ``sitecustomize`` on ``PYTHONPATH`` that makes
importing them fail as if they were not installed (torchrun's workers inherit it). A clean virtual
environment with ``pip install .`` is the same check done by hand; it downloads torch, too slow for a test.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Distributions of the [book] extra and what they bring, by import name.
BOOK_MODULES = ("IPython", "ipywidgets", "ipykernel", "nbformat", "nbconvert", "nbclient", "jupyterlab",
                "jupyter_server", "jupyter_client", "jupyter_core", "zmq", "jupyter_server_mathjax", "nbval",
                "widgetsnbextension", "comm", "traitlets", "jupyterlab_widgets")
BLOCKER = f'''import sys
BLOCKED = {BOOK_MODULES!r}


class NotInstalled:
    """A meta path finder that answers for the book's packages as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (hidden: the core install)", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
'''


@pytest.fixture
def core_env(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def run(argv: list[str], env: dict, cwd: Path, timeout_s: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)


def test_the_blocker_hides_the_book(core_env, tmp_path):
    done = run([sys.executable, "-c", "import ipywidgets"], core_env, tmp_path)
    assert done.returncode == 1 and "hidden: the core install" in done.stderr


def test_bench_and_the_cli_run_without_the_book(core_env, tmp_path):
    done = run([sys.executable, "-m", "commlab", "bench", "all_reduce", "-b", "8", "-e", "64", "--ranks", "2",
                "-n", "2", "-w", "1"], core_env, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "# Avg bus bandwidth" in done.stdout and "hidden" not in done.stderr
    for argv in (["doctor"], ["simulate", "ring-all-reduce", "--ranks", "4"], ["exercises", "list"],
                 ["animate", "ring-all-reduce", "--ranks", "3", "--out", str(tmp_path / "r.html")],
                 ["topo", "--from-file", str(ROOT / "tests/data/topo/two_gpu_nv2_hf.txt")]):
        done = run([sys.executable, "-m", "commlab", *argv], core_env, tmp_path)
        assert done.returncode == 0, (argv, done.stderr[-2000:])


def test_torchrun_bench_runs_without_the_book(core_env, tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip(f"no torchrun next to {sys.executable}")
    done = run([str(torchrun), "--nproc-per-node", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:0",
                "-m", "commlab", "bench", "all_reduce", "-b", "8", "-e", "64", "-n", "2", "-w", "1"],
               core_env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("# Avg bus bandwidth") == 1   # rank 0 prints the table


def test_book_build_without_the_book_extra_names_it(core_env, tmp_path):
    done = run([sys.executable, "-m", "commlab", "book", "--manifest", str(ROOT / "book.toml"), "build",
                "--out", str(tmp_path / "html")], core_env, tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "pip install 'commlab[book]'" in done.stderr and "nbformat" in done.stderr
