"""The p2p lab's reference answers and checks on real gloo ranks, and its script (labs/scripts/p2p.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from commlab.labs.solutions import p2p as lab

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SCRIPT = Path(__file__).resolve().parents[2] / "labs" / "scripts" / "p2p.py"


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def _run(args: list[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout_s)


def test_ping_pong_reference_moves_the_data_and_times_every_size():
    sizes = [8, 4096, 1 << 20]
    outcome = lab.measure_ping_pong(lab.ping_pong, sizes, n_round_trips=2, n_repeats=2)
    assert outcome.ok, outcome.problem
    assert outcome.backend == "gloo"
    assert len(outcome.details["one_way_s"]) == len(sizes) and min(outcome.details["one_way_s"]) > 0


def _no_reply(rank, buffer, n_round_trips):
    """Rank 1 answers with zeros instead of what it received."""
    import torch
    import torch.distributed as dist

    for _ in range(n_round_trips):
        if rank == 0:
            dist.send(buffer, dst=1)
            dist.recv(buffer, src=1)
        else:
            dist.recv(torch.empty_like(buffer), src=0)
            dist.send(torch.zeros_like(buffer), dst=0)


def _rank_1_never_answers(rank, buffer, n_round_trips):
    import torch.distributed as dist

    if rank == 0:
        dist.send(buffer, dst=1)
        dist.recv(buffer, src=1)
    else:
        dist.recv(buffer, src=0)


def test_ping_pong_check_names_a_wrong_reply_and_a_missing_one():
    wrong = lab.measure_ping_pong(_no_reply, [64], n_round_trips=1, n_repeats=1)
    assert not wrong.ok and "rank 0" in wrong.problem and "reply did not come back" in wrong.problem
    hung = lab.measure_ping_pong(_rank_1_never_answers, [64], n_round_trips=1, n_repeats=1, timeout_s=3)
    assert not hung.ok and "deadlock" in hung.problem and "rank 0 in dist.recv" in hung.problem


def _swapped(rank, n_ranks, to_left, to_right, from_left, from_right):
    """Sends each buffer to the wrong side."""
    lab.halo_exchange_nonblocking(rank, n_ranks, to_right, to_left, from_left, from_right)


def test_halo_exchanges_are_checked_and_timed():
    both = lab.compare_halo_exchanges([("blocking", lab.halo_exchange_blocking),
                                       ("non-blocking", lab.halo_exchange_nonblocking)], 3, 4096, n_repeats=2)
    assert both.ok, both.problem
    assert set(both.details["times_s"]) == {"blocking", "non-blocking"}
    assert all(t > 0 for t in both.details["times_s"].values())
    wrong = lab.compare_halo_exchanges([("swapped", _swapped)], 3, 4096, n_repeats=1)
    assert not wrong.ok and "from_left should hold" in wrong.problem


def _left(rank, n_ranks, outgoing, incoming):
    import torch.distributed as dist

    left, right = (rank - 1) % n_ranks, (rank + 1) % n_ranks
    ops = [dist.P2POp(dist.isend, outgoing, left), dist.P2POp(dist.irecv, incoming, right)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()


def test_ring_exchange_fixed_passes_naive_deadlocks_wrong_direction_is_named():
    fixed = lab.check_ring_exchange(lab.ring_exchange, (2, 3, 4), n_elements=64)
    assert fixed.ok and fixed.values == [2, 3, 4], fixed.problem
    naive = lab.check_ring_exchange(lab.ring_exchange_naive, (3,), timeout_s=3, backend="gloo")
    assert not naive.ok and "deadlock" in naive.problem
    assert all(f"rank {r} in dist.send" in naive.problem for r in range(3))
    backwards = lab.check_ring_exchange(_left, (3,))
    assert not backwards.ok and "on 3 ranks: rank 0 should have received rank 2's buffer" in backwards.problem


def _zero_both(rank, n_ranks, outgoing, incoming):
    outgoing.zero_()
    incoming.zero_()


def test_a_ring_exchange_that_sends_nothing_and_zeroes_both_buffers_fails():
    """What arrived is held against each rank's buffer as it was before the exchange (made from the rank and the
    seed), not as the student's code left it: zeroing both buffers matches nothing."""
    for seed in (None, 7):
        out = lab.check_ring_exchange(_zero_both, (2,), n_elements=64, seed=seed)
        assert not out.ok and "rank 0 should have received rank 1's buffer" in out.problem, out.problem


def test_gloo_sends_wait_for_the_receive_at_every_size():
    early = lab.probe_eager_sizes([8, 1 << 16], pause_s=0.05)
    assert early == {8: False, 1 << 16: False}


def test_blocked_in_reads_stacks_and_tracebacks():
    stack = ('Current thread 0x1 (most recent call first):\n'
             '  File "/v/torch/distributed/distributed_c10d.py", line 2753 in recv\n'
             '  File "/v/torch/distributed/c10d_logger.py", line 83 in wrapper\n  File "cell", line 4 in f')
    assert lab.blocked_in(stack) == "dist.recv"
    assert lab.blocked_in('  File "/tmp/ipykernel_1/2.py", line 9 in ring_exchange') == "ring_exchange (line 9)"
    assert lab.blocked_in("") == "an unknown place"


def test_script_runs_by_itself_with_the_deadlock_demo():
    alone = _run([str(SCRIPT), "--ranks", "2", "--max-size", "64K", "--halo-size", "64K", "--deadlock"])
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert "ring_exchange_naive on 4 ranks did not finish within 5 s: a deadlock" in alone.stdout
    assert "fit t = alpha + S/B" in alone.stdout and "every rank received its left neighbour's buffer" in alone.stdout


def test_script_runs_under_torchrun():
    launched = _run(["-m", "torch.distributed.run", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                     "--rdzv-endpoint", "127.0.0.1:0", str(SCRIPT), "--max-size", "64K", "--halo-size", "64K"])
    assert launched.returncode == 0, launched.stderr[-2000:]
    assert "p2p lab on 2 ranks, backend gloo" in launched.stdout and "32 KiB: one way" in launched.stdout


def test_script_help_and_a_bad_argument():
    helped = _run([str(SCRIPT), "--help"], timeout_s=60)
    assert helped.returncode == 0 and "--deadlock" in helped.stdout and "torchrun" in helped.stdout
    bad = _run([str(SCRIPT), "--ranks", "1"], timeout_s=60)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "p2p.py: error: the p2p lab needs at least 2 ranks (a ping-pong has two ends), got --ranks 1"]


def test_a_ping_pong_that_ignores_n_round_trips_is_named():
    """A loop that always does one round trip would make every one-way time n_round_trips times too small."""

    def one_trip_only(rank, buffer, n_round_trips):
        import torch.distributed as dist

        if rank == 0:
            dist.send(buffer, 1)
            dist.recv(buffer, 1)
        elif rank == 1:
            dist.recv(buffer, 0)
            dist.send(buffer, 0)

    outcome = lab.measure_ping_pong(one_trip_only, [64], n_round_trips=2, n_repeats=1, timeout_s=30)
    assert not outcome.ok and "sent 1 messages instead of 3" in outcome.problem
