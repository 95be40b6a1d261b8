"""Which rank a failed launch blames (commlab.launch.failures), whatever order the launcher noticed things in."""
from __future__ import annotations

import itertools

import pytest

from commlab.launch.failures import RankError, RankFailure, format_failures, order_failures

LOST = "RuntimeError: [gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:4817"
KILLED = RankFailure(2, "exit", "killed by signal SIGKILL (9)", "")


def _lost(rank: int) -> RankFailure:
    return RankFailure(rank, "exception", LOST, f"Traceback ... in all_reduce\n{LOST}")


@pytest.mark.parametrize("times", list(itertools.permutations([1.0, 2.0, 3.0])))
def test_the_killed_rank_is_the_cause_in_every_order_of_notice(times):
    noticed = list(zip([_lost(0), _lost(1), KILLED], times))
    ordered = order_failures(noticed, returned=[])
    assert ordered[0] == KILLED
    err = RankError(ordered, 3, "gloo")
    assert err.rank == 2 and str(err).startswith("rank 2 of 3 (gloo) failed: killed by signal SIGKILL (9)")
    assert "then (a consequence of the first failure, most likely):" in str(err)


def test_a_genuine_exception_noticed_after_a_peer_error_is_the_cause():
    boom = RankFailure(3, "exception", "ValueError: boom", "Traceback ...\nValueError: boom")
    assert order_failures([(_lost(0), 1.0), (boom, 5.0)], returned=[])[0] is boom


def test_a_rank_that_returned_while_its_peers_waited_is_named_as_leaving_early():
    ordered = order_failures([(_lost(0), 1.0), (_lost(2), 1.5)], returned=[1])
    assert [(f.rank, f.kind) for f in ordered] == [(1, "left"), (0, "exception"), (2, "exception")]
    text = format_failures(ordered, 3, "gloo")
    assert text.startswith("rank 1 of 3 (gloo) left early: it returned its value while other ranks still waited")
    assert "--- rank 0 (where it was when rank 1 left early) ---" in text and "in all_reduce" in text


def test_returned_ranks_are_not_blamed_when_a_rank_really_failed():
    assert order_failures([(_lost(0), 1.0), (KILLED, 2.0)], returned=[1])[0] == KILLED


def test_stopped_ranks_come_last():
    stopped = RankFailure(0, "stopped", "had not finished when another rank failed")
    ordered = order_failures([(stopped, 0.5), (KILLED, 2.0)], returned=[])
    assert [f.kind for f in ordered] == ["exit", "stopped"]
