"""A script run under a real ``torchrun --nproc-per-node 2`` (on 127.0.0.1): commlab.launch.main runs the
worker in each process, and ``commlab bench`` uses the launched group with rank 0 printing.

The script initialises its group once: a second ``init_process_group(env://)`` in the same processes would
find the first group's keys still in torchrun's store."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commlab.launch import Context, init_from_env, is_launched
from commlab.errors import CommlabError

SCRIPT = '''
import json, sys
from commlab import launch
from commlab.cli import main as cli

def worker(rank, n_ranks, scale):
    import torch, torch.distributed as dist
    ctx = launch.init_from_env()
    x = torch.tensor([float(rank + 1)])
    dist.all_reduce(x)
    return {"rank": rank, "n_ranks": n_ranks, "sum": x.item() * scale, "local_rank": ctx.local_rank,
            "backend": ctx.backend, "launched": launch.is_launched()}

if __name__ == "__main__":
    import torch.distributed as dist

    launch.init_from_env()  # one group for the whole script: main and bench reuse it
    print("WORKER " + json.dumps(launch.main(worker, 3, 10.0)), flush=True)
    code = cli(["bench", "all_gather", "-b", "64", "-e", "256", "-n", "2", "-w", "1", "--json-out", sys.argv[1]])
    dist.destroy_process_group()
    sys.exit(code)
'''


def _torchrun() -> str:
    path = Path(sys.executable).with_name("torchrun")
    if not path.exists():
        pytest.skip(f"no torchrun next to {sys.executable}")
    return str(path)


def test_a_script_runs_under_torchrun_with_main_and_bench(tmp_path):
    script = tmp_path / "lab_script.py"
    script.write_text(SCRIPT)
    rows_json = tmp_path / "rows.json"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")}
    done = subprocess.run([_torchrun(), "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                           "--rdzv-endpoint", "127.0.0.1:0", str(script), str(rows_json)],
                          capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # two ranks share one stdout, so their lines may interleave: find each record, not each line
    workers = sorted((json.loads(m) for m in re.findall(r"WORKER (\{[^{}]*\})", done.stdout)),
                     key=lambda w: w["rank"])
    assert workers == [{"rank": r, "n_ranks": 2, "sum": 30.0, "local_rank": r, "backend": "gloo",
                        "launched": True} for r in range(2)]
    assert done.stdout.count("# Collective test starting: all_gather_perf") == 1  # rank 0 prints, once
    data = json.loads(rows_json.read_text())
    assert data["n_ranks"] == 2 and [r["size_bytes"] for r in data["rows"]] == [64, 128, 256]
    assert all(r["oop"]["wrong"] == 0 and r["ip"]["wrong"] == 0 for r in data["rows"])


def test_without_a_launcher_init_from_env_says_how_to_start(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR"):
        monkeypatch.delenv(name, raising=False)
    assert not is_launched()
    with pytest.raises(CommlabError, match="not started by a launcher: RANK, WORLD_SIZE, MASTER_ADDR not set"):
        init_from_env()
    assert Context(0, 2, 0, "gloo", "cpu").is_main
