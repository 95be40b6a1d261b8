"""The build-your-own-ring lab: the reference ring against torch.distributed on real gloo ranks, the words
its checks find for typical mistakes, the recorded trace, the timing, and the script."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from commlab import launch, p2p, schedules
from commlab.labs.solutions import build_your_own_ring as lab

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SCRIPT = Path(__file__).resolve().parents[2] / "labs" / "scripts" / "build_your_own_ring.py"
LENGTHS = (0, 1, 5, 17)


@pytest.fixture(autouse=True)
def _no_learner_code(tmp_path, monkeypatch):
    """These tests run the reference: an empty labs/mine (never the repository's), the solutions switch off."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "no-mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def _run(args: list[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout_s)


@pytest.mark.parametrize("kind", list(lab.KINDS))
def test_reference_ring_equals_torch_and_follows_the_schedule(kind):
    report = p2p.check_ring(lab.KINDS[kind], kind, range(2, 7), LENGTHS)
    assert report.ok, report.failure
    assert lab.in_words(report) == "" and len(report.traced) == 5 * len(LENGTHS)


def _wrong_chunk(x, tracer):
    """The lab's broken variant: sends chunk (r - s) instead of (r - s - 1) in the reduce-scatter."""
    import torch
    import torch.distributed as dist

    buffer = x.clone()
    rank, n = tracer.rank, tracer.n_ranks
    for s in range(n - 1):
        send_c, recv_c = (rank - s) % n, (rank - s - 2) % n
        incoming = torch.empty_like(tracer.chunk(buffer, recv_c))
        ops = [tracer.send_op(tracer.chunk(buffer, send_c), (rank + 1) % n, step=s, chunk=send_c, reduce=True),
               dist.P2POp(dist.irecv, incoming, (rank - 1) % n)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()
        tracer.chunk(buffer, recv_c).add_(incoming)
    return tracer.chunk(buffer, rank).clone()


def _all_gather_from_step_0(x, tracer):
    buffer = x.clone()
    lab.reduce_scatter_steps(buffer, tracer)
    lab.all_gather_steps(buffer, tracer)
    return buffer


def _untraced(x, tracer):
    return p2p.ring_reduce_scatter(x)


def _not_written(x, tracer):
    raise NotImplementedError("write the ring all-reduce")


def _send_first(x, tracer):
    import torch.distributed as dist

    dist.send(x, (tracer.rank + 1) % tracer.n_ranks)
    dist.recv(x, (tracer.rank - 1) % tracer.n_ranks)
    return x


def test_mistakes_are_named_in_words():
    wrong = lab.in_words(p2p.check_ring(_wrong_chunk, "reduce_scatter", (2, 3), (840,)))
    assert wrong.startswith("reduce_scatter is wrong with n_ranks=2, length=840 on rank 0: max error")
    restart = lab.in_words(p2p.check_ring(_all_gather_from_step_0, "all_reduce", (2,), (4,)))
    assert "depart from ring-all-reduce: step 0: unexpected transfer" in restart and "first_step = N - 1" in restart
    assert "recorded no sends" in lab.in_words(p2p.check_ring(_untraced, "reduce_scatter", (2,), (4,)))
    missing = lab.in_words(p2p.check_ring(_not_written, "all_reduce", (2,), (4,)))
    assert "not written yet (NotImplementedError: write the ring all-reduce)" in missing


def test_rings_checked_together_get_the_reports_each_gets_alone():
    """check_rings: one launch per N for several pairs, the same report per pair as check_ring gives it (the
    wrong chunk fails at N = 2 and is not run at N = 3 and 4, as check_ring stops there; a ring that records no
    sends passes, its schedule unchecked); a crash leaves it to check_ring."""
    pairs = [(lab.KINDS["all_reduce"], "all_reduce"), (_wrong_chunk, "reduce_scatter"),
             (lab.KINDS["all_gather"], "all_gather"), (_untraced, "reduce_scatter")]
    together = p2p.check_rings(pairs, (2, 3, 4), (12, 24), seed=7)        # even chunks: the wrong one is wrong,
    alone = [p2p.check_ring(fn, kind, (2, 3, 4), (12, 24), seed=7) for fn, kind in pairs]   # not a crash
    assert together == alone
    assert [r.ok for r in together] == [True, False, True, True]
    assert {c.n_ranks for c in together[1].cases} == {2} and not together[3].traced
    assert p2p.check_rings([(lab.KINDS["all_reduce"], "all_reduce"), (_send_first, "all_reduce")], (2,), (4,),
                           timeout_s=3) is None


def _no_steps(buffer, tracer):
    """An all-gather phase that sends nothing: the buffer keeps this rank's chunk alone."""


def test_the_graders_checks_together_say_what_each_tasks_check_says():
    from commlab.labs.checks import build_your_own_ring as checks

    fns = {"reduce_scatter_steps": (lab.reduce_scatter_steps,), "all_gather_steps": (_no_steps,),
           "ring_all_reduce": (lab.ring_all_reduce,)}
    together = checks.drawn_together(fns, seed=5)
    alone = {task: getattr(checks, f"drawn_{task}")(fn, seed=5) for task, (fn,) in fns.items()}
    assert {t: o.problem for t, o in together.items()} == {t: o.problem for t, o in alone.items()}
    assert together["all_gather_steps"].problem and not together["ring_all_reduce"].problem


def test_a_deadlock_is_stopped_and_named():
    words = lab.in_words(p2p.check_ring(_send_first, "all_reduce", (2,), (4,), timeout_s=3))
    assert "did not finish within 3 s: a deadlock?" in words and "waiting in dist.send (in _send_first" in words


def test_recorded_trace_is_the_ring_schedule():
    outcome = lab.record_trace(lab.ring_all_reduce, 4, length=8)
    assert outcome.ok, outcome.problem
    trace = outcome.details["trace"]
    assert len(trace) == 4 * 2 * 3                                     # N ranks x 2(N-1) steps
    assert all(t.dst == (t.src + 1) % 4 for t in trace)                 # always to the right neighbour
    assert schedules.compare_trace(schedules.build("ring-all-reduce", 4), trace) is None


def test_timing_against_torch_gives_the_same_sums():
    outcome = lab.time_against_torch(lab.ring_all_reduce, 3, n_elements=4096, n_repeats=2)
    assert outcome.ok, outcome.problem
    assert outcome.details["max_error"] == 0 and outcome.details["yours_s"] > 0 and outcome.details["torch_s"] > 0


def _in_group(rank, n_ranks):
    return [lab.check_in_group(rank, n_ranks, fn, kind, LENGTHS) for kind, fn in lab.KINDS.items()] + \
        [lab.check_in_group(rank, n_ranks, _wrong_chunk, "reduce_scatter", (6,))]


def test_in_group_checks_pass_the_reference_and_catch_a_wrong_chunk():
    per_rank = launch.run(_in_group, 3, backend="gloo", timeout_s=60, verbose=False)
    assert all(found == [] for rank in per_rank for found in rank[:3])
    assert per_rank[0][3][0] == "reduce_scatter is wrong with n_ranks=3, length=6 on rank 0"
    assert "wrong chunk" in per_rank[0][3][1]


def test_script_by_itself_and_under_torchrun():
    alone = _run([str(SCRIPT), "--ranks", "3", "--elements", "4096", "--repeats", "2"])
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert alone.stdout.count("equals torch and follows the schedule") == 3
    launched = _run(["-m", "torch.distributed.run", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                     "--rdzv-endpoint", "127.0.0.1:0", str(SCRIPT), "--elements", "4096", "--repeats", "2"])
    assert launched.returncode == 0, launched.stderr[-2000:]
    assert "all-reduce of 16 KiB (gloo)" in launched.stdout
