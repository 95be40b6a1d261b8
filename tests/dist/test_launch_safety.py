"""commlab.launch on real ranks: the rendezvous store listens on loopback only, the ranks see torchrun's
environment, the right rank is blamed, and nothing a rank started outlives the launch."""
from __future__ import annotations

import inspect
import os
import re
import socket
import sys
import time

import pytest

from commlab.launch import RankError, run

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]


def _listeners(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} print them) of sockets in LISTEN state on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.append(address)
    return found


def _store_listeners(rank, n_ranks):
    import os

    port = int(os.environ["MASTER_PORT"])
    return port, _listeners(port)


def _outside_address() -> str | None:
    """An IPv4 address of this machine other than loopback, if it has one."""
    try:
        candidates = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    except OSError:
        candidates = set()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # no packet is sent by connect()
        try:
            probe.connect(("192.0.2.1", 9))
            candidates.add(probe.getsockname()[0])
        except OSError:
            pass
    return next((a for a in sorted(candidates) if not a.startswith("127.") and a != "0.0.0.0"), None)


def _store_refuses_outside(rank, n_ranks, address):
    import os
    import socket

    if rank != 0:
        return None
    try:
        socket.create_connection((address, int(os.environ["MASTER_PORT"])), timeout=2).close()
    except OSError as exc:
        return type(exc).__name__
    return "connected"


def test_the_store_listens_on_127_0_0_1_only():
    values = run(_store_listeners, 2, verbose=False, timeout_s=60)
    port, listeners = values[0]
    assert values[1][0] == port
    assert listeners == ["0100007F"], f"store on port {port} listens on {listeners} (0100007F is 127.0.0.1)"


def test_the_store_refuses_a_connection_through_another_address():
    address = _outside_address()
    if address is None:
        pytest.skip("this machine has no address other than loopback")
    assert run(_store_refuses_outside, 2, address, verbose=False, timeout_s=60)[0] == "ConnectionRefusedError"


def _environment(rank, n_ranks):
    import os

    import torch

    return dict(os.environ), torch.get_num_threads()


def _torchrun_worker_variables() -> set[str]:
    """The keys of the worker environment torchrun's agent builds, read from torch's own source."""
    from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent

    source = inspect.getsource(LocalElasticAgent)
    block = source[source.index("worker_env = {"):]
    block = block[:block.index("}")]
    names = set(re.findall(r'"([A-Z_]+)":', block)) | {"LOCAL_RANK"}
    assert {"GROUP_RANK", "ROLE_NAME", "TORCHELASTIC_RUN_ID"} <= names  # the reference parsed
    return names


def test_ranks_see_every_variable_torchrun_sets(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    values = run(_environment, 3, verbose=False, timeout_s=60)
    expected = _torchrun_worker_variables()
    for rank, (env, threads) in enumerate(values):
        assert expected <= set(env), f"missing {sorted(expected - set(env))}"
        assert (env["RANK"], env["LOCAL_RANK"], env["ROLE_RANK"]) == (str(rank),) * 3
        assert (env["WORLD_SIZE"], env["ROLE_WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == ("3",) * 3
        assert (env["GROUP_RANK"], env["GROUP_WORLD_SIZE"], env["ROLE_NAME"]) == ("0", "1", "default")
        assert env["TORCHELASTIC_RUN_ID"] == values[0][0]["TORCHELASTIC_RUN_ID"] != "none"
        assert env["OMP_NUM_THREADS"] == "1" and threads == 1  # torchrun: 1 when unset and nproc > 1
    other = run(_environment, 2, verbose=False, timeout_s=60)[0][0]["TORCHELASTIC_RUN_ID"]
    assert other != values[0][0]["TORCHELASTIC_RUN_ID"]


def test_a_users_omp_num_threads_is_kept(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert {env["OMP_NUM_THREADS"] for env, _ in run(_environment, 2, verbose=False, timeout_s=60)} == {"2"}


def _killed_in_a_collective(rank, n_ranks):
    import os
    import signal
    import time

    import torch
    import torch.distributed as dist

    x = torch.ones(1 << 14)
    dist.all_reduce(x)
    if rank == n_ranks - 1:
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)  # what an out-of-memory kill looks like
    for _ in range(1_000_000):
        dist.all_reduce(x)


def test_a_rank_killed_during_a_collective_is_named_first():
    with pytest.raises(RankError) as info:
        run(_killed_in_a_collective, 3, verbose=False, timeout_s=60)
    assert info.value.rank == 2
    assert str(info.value).startswith("rank 2 of 3 (gloo) failed: killed by signal SIGKILL (9)")


def _returns_early(rank, n_ranks):
    import torch
    import torch.distributed as dist

    if rank == 1:
        return "done"
    dist.all_reduce(torch.ones(4))


def test_a_rank_that_returns_without_joining_the_collective_is_named_as_leaving_early():
    with pytest.raises(RankError) as info:
        run(_returns_early, 2, verbose=False, timeout_s=60)
    err = info.value
    assert err.rank == 1 and err.failures[0].kind == "left"
    assert str(err).startswith("rank 1 of 2 (gloo) left early: it returned its value while other ranks")


def _starts_a_child(rank, n_ranks, pid_dir, fail):
    import os
    import subprocess

    child = subprocess.Popen(["sleep", "600"])
    with open(os.path.join(pid_dir, f"{rank}.pid"), "w") as fh:
        fh.write(str(child.pid))
    if fail and rank == 1:
        raise ValueError("rank 1 fails after starting a child")
    return child.pid


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("fail", [True, False])
def test_processes_a_rank_started_do_not_outlive_the_launch(tmp_path, fail):
    try:
        run(_starts_a_child, 2, str(tmp_path), fail, verbose=False, timeout_s=60)
    except RankError as exc:
        assert fail and exc.rank == 1
    pids = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)], "a process started by a rank survived the launch"
