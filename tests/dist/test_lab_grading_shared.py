"""One sandbox for all of a student's labs under bubblewrap (:mod:`commlab.labs.student_sandbox`,
:mod:`commlab.labs.zygote`): a student's labs run in the same sandbox, another student's in another, a process
a lab left behind is gone before the next lab starts, and a lab that kills the sandbox's first process costs
that lab alone (the next one gets a fresh sandbox)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import grading_helpers
import pytest

from commlab.labs import sandbox

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sandbox.bwrap_path() is None,
                                reason="bubblewrap is not installed or cannot make namespaces here: each lab then "
                                       "has a sandbox of its own (rlimits), and there is nothing shared to test")

#: The start time of the sandbox's first process (PID 2 of its namespace), which names the sandbox.
SANDBOX_ID = textwrap.dedent("""

    def sandbox_id():
        return open("/proc/2/stat").read().split()[21]
    """)
LEAVES_A_SLEEPER = textwrap.dedent("""

    import os as _os
    import time as _time
    if _os.fork() == 0:                      # a detached grandchild that would outlive the lab if it could
        _os.setsid()
        if _os.fork() == 0:
            with open("/tmp/sleeper.pid", "w") as _f:
                _f.write(str(_os.getpid()))
            _time.sleep(300)
        _os._exit(0)
    _time.sleep(0.5)
    """)
SLEEPER_ALIVE = textwrap.dedent("""

    def sleeper_alive():
        import os
        pid = open("/tmp/sleeper.pid").read()
        try:
            return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
        except OSError:
            return False
    """)
KILLS_ITS_SANDBOX = "\nimport os as _os, signal as _signal\n_os.kill(_os.getppid(), _signal.SIGKILL)\n"


def test_a_students_labs_share_a_sandbox_that_each_lab_leaves_empty(tmp_path, no_child_left):
    honest = grading_helpers.honest_source
    klass, hidden, seen = tmp_path / "class", tmp_path / "hidden", tmp_path / "seen"
    for folder in (klass / "ada", klass / "bo", hidden, seen):
        folder.mkdir(parents=True)
    (klass / "ada" / "ring_vs_tree.py").write_text(honest("ring_vs_tree") + SANDBOX_ID + LEAVES_A_SLEEPER)
    (klass / "ada" / "topology.py").write_text(honest("topology") + SANDBOX_ID + SLEEPER_ALIVE)
    (klass / "bo" / "ring_vs_tree.py").write_text(honest("ring_vs_tree") + KILLS_ITS_SANDBOX)
    (klass / "bo" / "topology.py").write_text(honest("topology") + SANDBOX_ID + "\ndef sleeper_alive():\n"
                                              "    return False\n")
    record = ("import json, os, time\n"
              f"SEEN = {str(seen)!r}\n"
              "def _keep(lab, value):\n"
              "    name = f'{time.time_ns()}-{lab}.json'\n"
              "    with open(os.path.join(SEEN, name), 'w') as f:\n"
              "        json.dump(value, f)\n")
    (hidden / "ring_vs_tree.py").write_text(record + "def check_where(sandbox_id):\n"
                                            "    _keep('ring_vs_tree', {'id': sandbox_id()})\n    return ''\n")
    (hidden / "topology.py").write_text(record + "def check_where(sandbox_id, sleeper_alive):\n"
                                        "    _keep('topology', {'id': sandbox_id(), 'alive': sleeper_alive()})\n"
                                        "    return ''\n")
    env = {k: v for k, v in os.environ.items() if k not in ("COMMLAB_LAB_SOLUTIONS", "COMMLAB_LABS_MINE")}
    done = subprocess.run([sys.executable, "-m", "commlab", "labs", "check", "ring_vs_tree", "topology", "--class",
                           str(klass), "--checks", str(hidden), "--json", "--jobs", "1", "--seed", "3"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)["results"]
    public = {(r["learner"], r["lab"], r["task"]): r for r in rows if r["kind"] == "public"}
    assert all(r["passed"] for (who, lab, _), r in public.items() if (who, lab) != ("bo", "ring_vs_tree")), rows
    assert not any(r["passed"] for (who, lab, _), r in public.items() if (who, lab) == ("bo", "ring_vs_tree"))
    kept = sorted(seen.iterdir())                # ada's two labs, then bo's topology (bo's ring lab never loaded)
    values = [json.loads(p.read_text()) for p in kept]
    assert [p.name.split("-", 1)[1] for p in kept] == ["ring_vs_tree.json", "topology.json", "topology.json"], kept
    ada_ring, ada_topology, bo_topology = values
    assert ada_ring["id"] == ada_topology["id"], "a student's two labs ran in two sandboxes"
    assert ada_topology["alive"] is False, "a process the first lab left behind was alive in the second"
    assert bo_topology["id"] != ada_ring["id"], "two students shared a sandbox"
