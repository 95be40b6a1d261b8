"""Every lab script with the learner's code (labs/mine/<lab>.py): a deliberately wrong function stops the script
with exit status 1 and the sentence the notebook's check prints, before any rank starts; a right module runs the
whole lab with the learner's functions, announced in the first line of output; and without a module the script
says it runs the reference."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from commlab.labs import registry
from commlab.labs.code import Code

REPO = Path(__file__).resolve().parents[2]
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE")

#: lab -> (what goes after `from commlab.labs.solutions.<lab> import *`: the mistake, the task it breaks)
WRONG = {
    "topology": ('def my_sizes():\n    return {"tp": 4, "pp": 1, "dp": 2}\n', "my_sizes"),
    "p2p": ("def ping_pong(rank, buffer, n_round_trips):\n    import torch.distributed as dist\n\n"
            "    if rank == 0:\n        dist.send(buffer, dst=1)\n        dist.recv(buffer, src=1)\n"
            "    elif rank == 1:\n        dist.recv(buffer, src=0)\n        dist.send(buffer, dst=0)\n", "ping_pong"),
    "collectives": ("_right = my_predictions\n\n\ndef my_predictions():\n    table = dict(_right())\n"
                    "    n_out, last, sent = table['reduce_scatter']\n    table['reduce_scatter'] = (4 * n_out, last, sent)\n"
                    "    return table\n", "my_predictions"),
    "build_your_own_ring": ("reduce_scatter_steps = reduce_scatter_steps_wrong_chunk\n", "reduce_scatter_steps"),
    "ring_vs_tree": ("import math\n\n\ndef tree_time_s(nbytes, n_ranks, alpha_s, bw_Bps):\n"
                     "    return 2 * math.floor(math.log2(n_ranks)) * (alpha_s + np.asarray(nbytes, dtype=float) / bw_Bps)\n",
                     "models"),
    "ddp_overlap": ("_right = layers_from_model\n\n\ndef layers_from_model(model, backward_s):\n"
                    "    return tuple(reversed(_right(model, backward_s)))\n", "layers_from_model"),
    "ddp_zero": ("_right = allreduce_gradients\n\n\ndef allreduce_gradients(model):\n"
                 "    import torch.distributed as dist\n\n    for p in model.parameters():\n"
                 "        dist.all_reduce(p.grad)\n", "allreduce_gradients"),
    "bandwidth_sweep": ("_right = bus_factor\n\n\ndef bus_factor(op, n_ranks):\n"
                        "    return (n_ranks - 1) / n_ranks if op == 'all_reduce' else _right(op, n_ranks)\n", "bus_factor"),
    "nccl_debug_multinode": ("def classify_run(peak_busbw_GBps, link_unidir_GBps):\n"
                             "    ratio = peak_busbw_GBps / link_unidir_GBps\n"
                             "    return 'above the link' if ratio > 1 else 'healthy' if ratio > 0.7 else 'low'\n",
                             "classify_run"),
    "find_the_hang": ("def find_the_hang(records):\n    base = records[0] or []\n    for rank, entries in sorted(records.items()):\n"
                      "        for a, b in zip(base, entries or []):\n"
                      "            if (a['profiling_name'], a['input_sizes']) != (b['profiling_name'], b['input_sizes']):\n"
                      "                return {'rank': rank, 'call': b['collective_seq_id']}\n    return None\n",
                      "find_the_hang"),
}
#: lab -> how its script runs quickly: (under torchrun?, arguments)
QUICK = {
    "topology": (False, ["--ranks", "4"]),
    "p2p": (False, ["--ranks", "2", "--max-size", "8K", "--halo-size", "64K"]),
    "collectives": (False, ["--ranks", "2"]),
    "build_your_own_ring": (True, ["--elements", "4096", "--repeats", "1"]),
    "ring_vs_tree": (False, ["--ranks", "2", "--sizes", "4K,64K", "--repeats", "1"]),
    "ddp_overlap": (False, ["--ranks", "2", "--caps", "1", "--steps", "1"]),
    "ddp_zero": (True, ["--caps", "16384", "--no-profile"]),
    "bandwidth_sweep": (False, ["--ranks", "2", "-b", "1K", "-e", "4K"]),
    "nccl_debug_multinode": (False, ["--ranks", "2", "--size", "4K"]),
    "find_the_hang": (False, ["--ranks", "4"]),
}
PURE = {"topology", "collectives", "ring_vs_tree", "ddp_overlap", "bandwidth_sweep", "nccl_debug_multinode",
        "find_the_hang"}


def write_module(folder: Path, lab: str, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{lab}.py"
    path.write_text(f"from commlab.labs.solutions.{lab} import *  # noqa: F403\n\n\n{extra}")
    return path


def run_script(lab: str, folder: Path, args: list[str], torchrun: bool = False, timeout_s: float = 240):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS + ("COMMLAB_LAB_SOLUTIONS",)}
    env["COMMLAB_LABS_MINE"] = str(folder)
    script = str(REPO / "labs" / "scripts" / f"{lab}.py")
    head = (["-m", "torch.distributed.run", "--nproc-per-node", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
             "127.0.0.1:0"] if torchrun else [])
    return subprocess.run([sys.executable, *head, script, *args], capture_output=True, text=True, timeout=timeout_s,
                          env=env, cwd=REPO)


def test_every_lab_has_a_wrong_module_and_a_quick_run():
    assert set(WRONG) == set(QUICK) == set(registry.names())


@pytest.mark.parametrize("lab", sorted(WRONG))
def test_a_wrong_function_stops_the_script_with_the_notebooks_sentence(lab, tmp_path):
    extra, task = WRONG[lab]
    path = write_module(tmp_path / "mine", lab, extra)
    done = run_script(lab, tmp_path / "mine", QUICK[lab][1])
    assert done.returncode == 1, (done.stdout + done.stderr)[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == f"{lab}: running your code from {path}"
    assert lines[1] == "your code does not pass the lab's checks (the notebook says the same):"
    assert lines[2].startswith(f"{lab}.{task}: ")
    if lab in PURE:                                   # the very sentence the notebook's check cell asserts with
        entry = registry.lab(lab)
        result = registry.run_task(entry, next(t for t in entry.tasks if t.name == task), Code(lab, path))
        assert lines[2] == f"{lab}.{task}: {result.problem}"
    assert "commlab.launch:" not in done.stdout       # stopped before any rank started


@pytest.mark.parametrize("lab", sorted(QUICK))
def test_a_right_module_runs_the_lab_with_the_learners_code(lab, tmp_path, no_child_left):
    path = write_module(tmp_path / "mine", lab)
    torchrun, args = QUICK[lab]
    done = run_script(lab, tmp_path / "mine", args, torchrun=torchrun)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert done.stdout.splitlines()[0] == f"{lab}: running your code from {path}"


@pytest.mark.parametrize("lab", ["ring_vs_tree", "find_the_hang"])
def test_without_a_module_the_script_runs_the_reference_and_says_so(lab, tmp_path):
    done = run_script(lab, tmp_path / "empty", QUICK[lab][1])
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert done.stdout.splitlines()[0] == (f"{lab}: running the reference solution (commlab.labs.solutions.{lab}): "
                                           f"there is no {tmp_path / 'empty' / (lab + '.py')} yet (the notebook writes "
                                           "it when you run its 'your turn' cells)")


def test_reference_forces_the_reference_over_a_wrong_module(tmp_path):
    write_module(tmp_path / "mine", "ring_vs_tree", WRONG["ring_vs_tree"][0])
    done = run_script("ring_vs_tree", tmp_path / "mine", QUICK["ring_vs_tree"][1] + ["--reference"])
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert done.stdout.splitlines()[0].endswith("(commlab.labs.solutions.ring_vs_tree): --reference")


def test_under_torchrun_a_wrong_pure_function_fails_every_rank(tmp_path):
    write_module(tmp_path / "mine", "nccl_debug_multinode", WRONG["nccl_debug_multinode"][0])
    done = run_script("nccl_debug_multinode", tmp_path / "mine", ["--size", "4K"], torchrun=True)
    assert done.returncode != 0
    said = done.stdout.count("nccl_debug_multinode.classify_run: classify_run: a peak of")
    assert said == 1, (done.stdout + done.stderr)[-3000:]                                       # local rank 0 says it
