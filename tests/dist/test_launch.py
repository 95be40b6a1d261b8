"""commlab.launch.run on real gloo ranks: values, output, notebook-style functions, faults, clean-up."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

from commlab.errors import CommlabError
from commlab.launch import RankError, run

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]


def _sum_of_ranks(rank, n_ranks, offset, scale=1.0):
    import torch
    import torch.distributed as dist

    x = torch.tensor([float(rank + offset)], dtype=torch.float64)
    dist.all_reduce(x)
    return (rank, x.item() * scale)


def test_returns_each_ranks_value_in_rank_order_with_args_and_kwargs():
    values = run(_sum_of_ranks, 4, 10, scale=0.5, backend="gloo", verbose=False)
    expected = 0.5 * np.sum(np.arange(4) + 10)
    assert values == [(r, expected) for r in range(4)]


def _talk(rank, n_ranks):
    print(f"hello from {rank}")
    print(f"warning from {rank}", file=sys.stderr)
    return None


def test_what_ranks_print_reaches_the_caller_with_a_rank_prefix(capsys):
    run(_talk, 3, timeout_s=30)
    out, err = capsys.readouterr()
    assert "3 ranks on gloo" in out.splitlines()[0]
    assert sorted(line for line in out.splitlines() if line.startswith("[rank")) == [
        f"[rank {r}] hello from {r}" for r in range(3)]
    assert {f"[rank {r}] warning from {r}" for r in range(3)} <= set(err.splitlines())


CELL = '''
factor = 3
def cell_fn(rank, n_ranks, k):
    import torch, torch.distributed as dist
    x = torch.tensor([float(rank)])
    dist.all_reduce(x)
    return x.item() * k * factor
'''


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_function_defined_in_a_notebook_cell_runs(start_method):
    namespace = {"__name__": "__main__"}
    exec(compile(CELL, "<cell 3>", "exec"), namespace)  # what Jupyter does with a cell
    fn = namespace["cell_fn"]
    assert fn.__module__ == "__main__"
    values = run(fn, 2, 2, start_method=start_method, verbose=False, timeout_s=120)
    assert values == [1.0 * 2 * 3] * 2


def _fails_on_rank_2(rank, n_ranks):
    import torch
    import torch.distributed as dist

    if rank == 2:
        raise ValueError("boom on the third rank")
    dist.all_reduce(torch.ones(4))


def test_an_exception_on_rank_2_of_4_names_the_rank_and_shows_its_traceback():
    with pytest.raises(RankError) as info:
        run(_fails_on_rank_2, 4, verbose=False, timeout_s=60)
    err = info.value
    assert err.rank == 2 and err.ranks[0] == 2 and not err.timed_out
    text = str(err)
    assert text.startswith("rank 2 of 4 (gloo) failed: ValueError: boom on the third rank")
    assert "Traceback (most recent call last)" in text and "in _fails_on_rank_2" in text
    assert 'raise ValueError("boom on the third rank")' in text


def _rank_1_hangs(rank, n_ranks):
    import time

    if rank == 1:
        time.sleep(600)
    return rank


def test_a_hung_rank_is_stopped_at_the_timeout_and_named_with_its_stack():
    start = time.monotonic()
    with pytest.raises(RankError) as info:
        run(_rank_1_hangs, 3, verbose=False, timeout_s=3)
    assert time.monotonic() - start < 20
    err = info.value
    assert err.timed_out and err.ranks == [1]
    assert "did not finish within timeout_s=3 s" in str(err) and "in _rank_1_hangs" in str(err)


def _dies(rank, n_ranks, how):
    import ctypes
    import os
    import signal
    import time

    if rank == n_ranks - 1:
        if how == "exit":
            os._exit(7)
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        ctypes.string_at(0)  # segmentation fault
    time.sleep(600)


@pytest.mark.parametrize("how, words", [("exit", "exited with code 7"), ("kill", "killed by signal SIGKILL (9)"),
                                        ("segfault", "crashed with a segmentation fault SIGSEGV")])
def test_a_rank_that_dies_is_detected_at_once(how, words):
    start = time.monotonic()
    with pytest.raises(RankError) as info:
        run(_dies, 3, how, verbose=False, timeout_s=120)
    assert time.monotonic() - start < 30  # the 600 s sleepers were stopped, not waited for
    assert info.value.rank == 2 and words in str(info.value)


def test_two_launches_at_once_do_not_collide():
    results: dict = {}

    def launch(tag: int) -> None:
        results[tag] = [run(_sum_of_ranks, 3, tag, verbose=False, timeout_s=60) for _ in range(3)]

    threads = [threading.Thread(target=launch, args=(tag,)) for tag in (100, 200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for tag in (100, 200):
        assert results[tag] == [[(r, float(3 * tag + 3)) for r in range(3)]] * 3


def _returns_a_lock(rank, n_ranks):
    return threading.Lock()


def test_a_value_that_cannot_travel_back_is_a_rank_error():
    with pytest.raises(RankError, match="cannot be pickled"):
        run(_returns_a_lock, 2, verbose=False, timeout_s=30)


def test_a_function_that_cannot_be_pickled_for_spawn_is_refused_before_starting():
    lock = threading.Lock()

    def uses_lock(rank, n_ranks):
        return lock.locked()

    with pytest.raises(CommlabError, match="cannot send 'uses_lock'.*start_method='fork'"):
        run(uses_lock, 2, start_method="spawn", verbose=False)


def test_fork_after_cuda_was_initialised_is_refused(monkeypatch):
    from commlab.launch import choose

    monkeypatch.setattr(choose, "cuda_initialised", lambda: True)
    with pytest.raises(CommlabError, match="'fork' cannot be used once CUDA is initialised"):
        run(_sum_of_ranks, 2, 0, start_method="fork", backend="gloo")
    assert choose.choose_start_method("auto", "gloo")[0] == "spawn"


@pytest.mark.parametrize("kwargs, words", [
    ({"n_ranks": 0}, "n_ranks must be a whole number from 1"),
    ({"n_ranks": 2, "backend": "mpi"}, "unknown backend 'mpi'"),
    ({"n_ranks": 2, "timeout_s": -1}, "timeout_s must be a finite number of seconds > 0, got -1"),
    ({"n_ranks": 2, "start_method": "forkserver"}, "unknown start_method 'forkserver'"),
])
def test_bad_arguments_are_commlab_errors_naming_the_value(kwargs, words):
    with pytest.raises(CommlabError, match=words):
        run(_sum_of_ranks, offset=0, **kwargs)


def test_nccl_without_gpus_says_what_is_missing():
    import torch

    if torch.cuda.device_count() >= 2:
        pytest.skip("this machine has GPUs")
    with pytest.raises(CommlabError, match="backend 'nccl' needs 2 CUDA GPU"):
        run(_sum_of_ranks, 2, 0, backend="nccl")


def test_main_without_a_launcher_starts_the_ranks_itself(monkeypatch):
    from commlab.launch import main

    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR"):
        monkeypatch.delenv(name, raising=False)
    assert main(_sum_of_ranks, 3, 1) == [(r, 6.0) for r in range(3)]


def _cuda_device(rank, n_ranks):
    import torch
    import torch.distributed as dist

    x = torch.ones(1, device="cuda")
    dist.all_reduce(x)
    return torch.cuda.current_device(), dist.get_backend(), x.item()


@pytest.mark.gpu
def test_nccl_ranks_each_use_the_gpu_of_their_rank():
    import torch

    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n_gpus < 2:
        pytest.skip(f"needs 2 CUDA GPUs, found {n_gpus}")
    assert run(_cuda_device, 2, verbose=False, timeout_s=120) == [(0, "nccl", 2.0), (1, "nccl", 2.0)]


def _returns_but_lingers(rank, n_ranks):
    import threading
    import time

    threading.Thread(target=time.sleep, args=(600,)).start()  # a non-daemon thread keeps the process alive
    return rank


def test_ranks_that_return_but_do_not_exit_are_stopped_and_their_values_kept():
    start = time.monotonic()
    assert run(_returns_but_lingers, 2, verbose=False, timeout_s=120) == [0, 1]
    assert time.monotonic() - start < 30


def test_auto_spawns_on_a_gpu_machine_and_forks_without_one(monkeypatch):
    """On a machine with an NVIDIA driver the parent's device count poisons fork for CUDA: gloo ranks are spawned."""
    import sys as _sys

    from commlab.launch import choose

    if not _sys.platform.startswith("linux"):
        pytest.skip("fork is only chosen on Linux")
    monkeypatch.setattr(choose, "cuda_initialised", lambda: False)
    monkeypatch.setattr(choose, "cuda_driver_present", lambda: True)
    assert choose.choose_start_method("auto", "gloo") == (
        "spawn", "a GPU machine: a forked rank could not use CUDA once this process has asked for the GPUs")
    monkeypatch.setattr(choose, "cuda_driver_present", lambda: False)
    assert choose.choose_start_method("auto", "gloo") == ("fork", "gloo on Linux")
