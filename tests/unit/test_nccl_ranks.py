"""The rank count held against the busbw column: a '# Rank' list cut short by whoever published the log
(NVIDIA/nccl-tests issue 322: ranks 0-99 of a 1024-rank run, 128 nodes x 8 H100) must not silently give n = 100.
The rows below are that issue's, verbatim; the rank lines are a subset of its (the last one, 99, kept)."""
from __future__ import annotations

import pytest

from commlab.collectives import busbw_factor
from commlab.nccl import parse_log
from commlab.nccl.parse import implied_ranks

RANK = "#  Rank {r:2d} Group  0 Pid 3491113 on     HCA-32 device  {d} [0000:0a:00] NVIDIA H100 80GB HBM3"
HEADER = """\
# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 34359738368 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
{ranks}
#
# Reducing maxBytes to 27951912277 due to memory limitation
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""  # noqa: E501
ROWS = """\
  1073741824     268435456     float     sum      -1    19355   55.48  110.84      0    19189   55.96  111.80      0
  2147483648     536870912     float     sum      -1    20218  106.22  212.23      0    19883  108.01  215.80      0
  4294967296    1073741824     float     sum      -1    25377  169.24  338.16      0    25456  168.72  337.11      0
  8589934592    2147483648     float     sum      -1    47078  182.46  364.57      0    46939  183.00  365.65      0
 17179869184    4294967296     float     sum      -1    93457  183.83  367.29      0    93420  183.90  367.44      0
"""
SHORT_LIST = "\n".join(RANK.format(r=r, d=r % 8) for r in (*range(8), 96, 97, 98, 99))


def _log(meta: str = "") -> str:
    return meta + HEADER.format(ranks=SHORT_LIST) + ROWS


def test_a_shortened_rank_list_alone_is_kept_but_named_wrong_with_the_n_the_busbw_implies():
    log = parse_log(_log())
    assert log.n_ranks == 100  # nothing else in the text: the reader does not guess
    said = [n for n in log.notes if "busbw column implies" in n]
    assert said and "between 1011 and 1035" in said[0] and "--ranks" in said[0]
    assert len(log.busbw_mismatches) == 5


def test_the_nranks_comment_wins_where_only_it_fits_the_busbw_column():
    log = parse_log(_log("# nranks: 1024\n"))
    assert log.n_ranks == 1024 and log.busbw_mismatches == []
    assert any("shortened rank list" in n for n in log.notes)


def test_a_wrong_nranks_comment_does_not_override_rank_lines_that_fit():
    full = "\n".join(RANK.format(r=r, d=r % 8) for r in range(16))
    text = "# nranks: 1024\n" + HEADER.format(ranks=full) + """\
  4294967296    1073741824     float     sum      -1    17262  248.81  466.52      0    17284  248.49  465.91      0
"""  # nccl-tests issue 309, 2 nodes x 8 H100: n = 16 fits
    log = parse_log(text)
    assert log.n_ranks == 16 and log.busbw_mismatches == []


def test_the_caller_still_decides():
    assert parse_log(_log(), n_ranks=1024).n_ranks == 1024


@pytest.mark.parametrize("op,n", [("all_reduce", 16), ("all_gather", 8), ("reduce_scatter", 64), ("all_reduce", 1024)])
def test_implied_ranks_contains_the_true_n(op, n):
    alg = 183.83
    bus = round(alg * busbw_factor(op, n), 2)
    lo, hi = implied_ranks(op, [(alg, bus, 0.005, 0.005)])
    assert lo <= n <= hi


def test_implied_ranks_is_silent_where_busbw_says_nothing_about_n():
    assert implied_ranks("broadcast", [(12.0, 12.0, 0.005, 0.005)]) is None
    assert implied_ranks("all_reduce", [(10.0, 30.0, 0.005, 0.005)]) is None  # F(n) < 2 for every n
