"""`make lab` listens where the user asked, not where an exported HOST or PORT says."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _dry_run(*variables: str) -> str:
    env = {**os.environ, "HOST": "0.0.0.0", "PORT": "80"}  # tcsh exports HOST; some images export both
    done = subprocess.run(["make", "-n", "-o", "install", "-o", ".venv/.commlab-installed", "lab", *variables],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_lab_listens_on_loopback_whatever_host_and_port_the_environment_exports():
    assert "--ServerApp.ip=127.0.0.1 --ServerApp.port=8888" in _dry_run()
    assert "--ServerApp.ip=0.0.0.0 --ServerApp.port=9999" in _dry_run("LAB_HOST=0.0.0.0", "LAB_PORT=9999")


def test_the_readme_names_the_variables_the_makefile_reads():
    readme = (ROOT / "README.md").read_text()
    assert "make lab LAB_HOST=0.0.0.0 LAB_PORT=9999" in readme and "make lab HOST=" not in readme
