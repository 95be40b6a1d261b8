"""Reading what NCCL chose from NCCL_DEBUG TUNING output, in the formats NCCL prints (src/enqueue.cc,
src/graph/tuning.cc)."""
from __future__ import annotations

import pytest

from commlab.errors import CommlabError
from commlab.nccl.debuglog import choices_for_sizes, read_tuning

# The samples below are NCCL's output verbatim, hence their long lines.

# NCCL >= 2.19 table: blocks of three algorithms (tuning.cc:543-585), then per-call lines of two eras
TABLE_2_19 = """\
h:1:2 [0] NCCL INFO   Algorithm   |                      Tree                  |                      Ring                  |             CollNetDirect                  |
h:1:2 [0] NCCL INFO   Protocol    |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |
h:1:2 [0] NCCL INFO  Max NThreads |            512 |            640 |            512 |            512 |            640 |            544 |            512 |            640 |            512 |
h:1:2 [0] NCCL INFO     Broadcast |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |     4.6/  35.2 |    14.1/ 108.0 |    18.0/ 120.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |
h:1:2 [0] NCCL INFO     AllReduce |    15.2/  37.1 |    22.9/ 202.2 |    36.4/ 220.8 |    15.0/  80.6 |    40.6/ 189.3 |    56.0/ 205.7 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |
h:1:2 [0] NCCL INFO   Algorithm   |                      NVLS                  |                  NVLSTree                  |                       PAT                  |
h:1:2 [0] NCCL INFO   Protocol    |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |             LL |          LL128 |         Simple |
h:1:2 [0] NCCL INFO     AllReduce |     0.0/   0.0 |     0.0/   0.0 |    25.0/ 272.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |
"""
# NCCL 2.12-2.18 table header, as in NVIDIA/nccl issue 754
TABLE_2_12 = """\
a:9373:9456 [0] NCCL INFO Latency/AlgBw |    Tree/    LL |    Tree/ LL128 |    Tree/Simple |    Ring/    LL |    Ring/ LL128 |    Ring/Simple | CollNet/    LL | CollNet/ LL128 | CollNet/Simple |
a:9373:9456 [0] NCCL INFO  Max NThreads |            512 |            640 |            512 |            512 |            640 |            256 |            512 |            640 |            512 |
a:9373:9456 [0] NCCL INFO     AllGather |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |    33.3/   0.8 |    52.0/   0.0 |   105.6/   3.2 |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |
"""


def test_the_2_19_table_by_hand():
    t = read_tuning(TABLE_2_19)
    assert t.table["all_reduce"][("Ring", "LL")] == (15.0, 80.6)
    assert t.table["all_reduce"][("NVLS", "Simple")] == (25.0, 272.0)
    assert ("CollNetDirect", "LL") not in t.table["all_reduce"]                  # 0 bandwidth: disabled
    assert set(t.table["broadcast"]) == {("Ring", "LL"), ("Ring", "LL128"), ("Ring", "Simple")}
    assert not t.calls
    # no per-call lines: NCCL's pick from its own table, the least lat + S / (1000 bw)
    picks = choices_for_sizes(t, [8, 2**20, 2**30], "all_reduce", 8)
    assert [(c.algo, c.proto, c.source) for c in picks] == [
        ("Ring", "LL", "nccl_tuning_table"), ("Ring", "LL", "nccl_tuning_table"),
        ("NVLS", "Simple", "nccl_tuning_table")]
    assert 15.0 + 2**20 / 80.6e3 < 25.0 + 2**20 / 272e3                        # 28.0 < 28.9 us, by hand


def test_the_2_12_table():
    t = read_tuning(TABLE_2_12)
    assert t.table == {"all_gather": {("Ring", "LL"): (33.3, 0.8), ("Ring", "Simple"): (105.6, 3.2)}}


@pytest.mark.parametrize("line, want", [
    ("h:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}",
     (1048576, "Ring", "Simple", "all_reduce")),
    ("h:1:1 [0] NCCL INFO AllGather: 65536 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}",
     (65536, "NVLS", "Simple", "all_gather")),
    ("[0] worker-1:497888:497888 [0] NCCL INFO 262144 Bytes -> Algo 0 proto 1 time 54.707825",
     (262144, "Tree", "LL128", None)),
    ("[0] NCCL INFO 805306368 Bytes -> Algo 1 proto 2 time 3970.683594", (805306368, "Ring", "Simple", None)),
    ("h:1:1 [0] NCCL TRACE tunedColl enqueue coll AllReduce(Sum, float, TREE, LL128), nChannels 8, count 256 "
     "(nbytes 1024), usableChannel 8", (1024, "Tree", "LL128", "all_reduce")),
])
def test_per_call_lines_of_each_era(line, want):
    (call,) = read_tuning(line).calls
    assert (call.nbytes, call.algo, call.proto, call.collective) == want and call.line == 1


def test_calls_win_over_the_table_and_match_per_rank_sizes():
    text = TABLE_2_19 + ("h:1:1 [0] NCCL INFO AllGather: 4096 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n"
                         "h:1:1 [0] NCCL INFO AllReduce: 8 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0}\n")
    t = read_tuning(text)
    (ar,) = choices_for_sizes(t, [8], "all_reduce", 8)
    assert (ar.algo, ar.proto, ar.source) == ("Tree", "LL", "nccl_debug")
    (ag,) = choices_for_sizes(t, [4096 * 8], "all_gather", 8)                  # nccl-tests' size is the whole
    assert (ag.algo, ag.proto, ag.source) == ("Ring", "LL", "nccl_debug")       # buffer, NCCL's count per rank
    assert choices_for_sizes(t, [12345], "reduce", 8) == [None]


def test_nothing_to_read():
    assert not read_tuning("no nccl here\n#  size count\n")
    with pytest.raises(CommlabError, match="as text"):
        read_tuning(b"bytes")


def test_the_shipped_nccl_debug_logs_have_no_tuning_lines():
    """Three real NCCL_DEBUG=INFO excerpts (init, channels, rings, trees): nothing there names a per-call choice,
    and nothing must be read as one."""
    from commlab.nccl import debug_logs

    logs = debug_logs()
    assert len(logs) == 3
    for path in logs:
        assert not read_tuning(path.read_text()), path.name
