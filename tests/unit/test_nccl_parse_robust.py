"""The reader on real logs as they arrive in practice: launcher prefixes, Windows line ends, NCCL INFO lines in
between, a run cut off mid-row, a row that does not read, a table without its header. Every variant is built
by transforming a real fixture, and the rows must come out as from the clean file."""
from __future__ import annotations

import re

import pytest

from commlab.nccl import parse_log
from commlab.nccl.examples import debug_logs, nccl_tests_log, nccl_tests_logs

LOGS = nccl_tests_logs()


ROW = re.compile(r"^(?:\[\d+,\d+\]<stdout>:|\d+: )?\s*\d+\s+\d+\s+[a-z]")


def row_line_numbers(text: str) -> list[int]:
    return [i for i, ln in enumerate(text.splitlines(), 1) if ROW.match(ln)]


@pytest.mark.parametrize("prefix", ["[1,0]<stdout>:", "0: ", "[default0]:", "[rank0]:"])
@pytest.mark.parametrize("number", [1, 14, 19, 23])
def test_launcher_prefixes(prefix, number):
    text = nccl_tests_log(number).read_text()
    wrapped = "\n".join(prefix + ln for ln in text.splitlines())
    assert parse_log(wrapped).rows == parse_log(text).rows


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[:2])
def test_windows_line_ends(path):
    text = path.read_text()
    crlf = parse_log(text.replace("\n", "\r\n"))
    assert crlf.rows == parse_log(text).rows and crlf.unreadable == []


def test_interleaved_nccl_info_lines():
    """Real NCCL_DEBUG lines (from a shipped debug log) between every row of a real table."""
    info = [ln for ln in debug_logs()[0].read_text().splitlines() if "NCCL INFO" in ln]
    text = nccl_tests_log(14).read_text()
    mixed = []
    for k, line in enumerate(text.splitlines()):
        mixed += [line, info[k % len(info)]]
    log = parse_log("\n".join(mixed))
    assert log.rows == parse_log(text).rows and log.unreadable == []
    assert any("NCCL debug lines" in n for n in log.notes)


@pytest.mark.parametrize("number", [7, 9, 14, 20])
def test_a_run_cut_off_mid_row(number):
    text = nccl_tests_log(number).read_text()
    lines = text.splitlines()
    last = row_line_numbers(text)[-1]
    cut = lines[last - 1][: len(lines[last - 1]) * 2 // 3]  # the process died while printing
    log = parse_log("\n".join(lines[: last - 1] + [cut]))
    full = parse_log(text)
    assert log.rows == full.rows[:-1]
    assert log.unreadable == [(last, cut)]


def test_a_row_cut_right_after_the_out_of_place_block_is_not_taken_for_a_row():
    text = nccl_tests_log(14).read_text()
    lines = text.splitlines()
    last = row_line_numbers(text)[-1]
    tokens = lines[last - 1].split()
    lines[last - 1] = "  ".join(tokens[:9])  # size count type redop root + out-of-place only
    log = parse_log("\n".join(lines))
    assert [n for n, _ in log.unreadable] == [last]
    assert len(log.rows) == len(parse_log(text).rows) - 1


def test_an_unreadable_row_is_reported_not_dropped():
    text = nccl_tests_log(3).read_text()
    lines = text.splitlines()
    second = row_line_numbers(text)[1]
    lines[second - 1] = lines[second - 1].replace("float", "float  oops")
    log = parse_log("\n".join(lines))
    assert [n for n, _ in log.unreadable] == [second]
    assert log.unreadable[0][1] == lines[second - 1]
    assert len(log.rows) == 3


@pytest.mark.parametrize("number", [14, 16, 19, 21, 22, 23])
def test_tables_without_their_header_lines(number):
    """Rows pasted without the three header lines: the columns come from the rows themselves."""
    text = nccl_tests_log(number).read_text()
    bare = "\n".join(ln for ln in text.splitlines() if "size" not in ln and "(B)" not in ln)
    log = parse_log(bare)
    full = parse_log(text)
    assert log.rows == full.rows and log.format == full.format and log.collective == full.collective


def test_empty_and_noise_only_text():
    log = parse_log("Warning: Permanently added '[10.0.142.242]:2022' (RSA) to the list of known hosts.\n")
    assert log.rows == [] and log.collective is None and log.n_ranks is None
    assert any("no table rows" in n for n in log.notes)


@pytest.mark.parametrize("quote", ["> ", ">", "> > "])
@pytest.mark.parametrize("number", [1, 14, 19])
def test_markdown_quoted_logs(quote, number):
    """A log re-quoted in an issue thread: every line behind '> ' (seen on NVIDIA/nccl's RTX 5090 thread)."""
    text = nccl_tests_log(number).read_text()
    quoted = "\n".join(quote + ln for ln in text.splitlines())
    assert parse_log(quoted).rows == parse_log(text).rows


# A real single-node log as published (an 8 x B200 GKE A4 README): the author trimmed the table to time, algbw
# and busbw: no #wrong column and no in-place block; rank lines without "on <host>".
B200_TRIMMED = """\
# nThread 1 nGpus 8 minBytes 8388608 maxBytes 17179869184 step: 2(factor)
#
# Using devices
#  Rank  0 Group  0 Pid 221599 device  0 [0000:8f:00] NVIDIA B200
#  Rank  7 Group  0 Pid 221599 device  7 [0000:cc:00] NVIDIA B200
#
#       size         count      type   redop    root     time   algbw   busbw
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)
     8388608       2097152     float     sum      -1    80.32  104.44  182.77
    16777216       4194304     float     sum      -1    110.5  151.81  265.67
    33554432       8388608     float     sum      -1    172.6  194.36  340.13
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 587.371 GB/s
"""


def test_a_table_without_the_check_column():
    log = parse_log(B200_TRIMMED, n_ranks=8)
    assert [r.size_bytes for r in log.rows] == [8388608, 16777216, 33554432]
    assert [r.oop.time_us for r in log.rows] == [80.32, 110.5, 172.6]
    assert all(r.oop.wrong is None and r.ip is None for r in log.rows) and log.unreadable == []
    # the same table with the in-place block (also without #wrong) reads both blocks
    both = B200_TRIMMED.replace("  busbw\n", "  busbw     time   algbw   busbw\n")
    for oop in ("80.32  104.44  182.77", "110.5  151.81  265.67", "172.6  194.36  340.13"):
        both = both.replace(oop + "\n", oop + "   " + oop + "\n")
    log = parse_log(both, n_ranks=8)
    assert [r.ip.time_us for r in log.rows] == [80.32, 110.5, 172.6] and log.unreadable == []


def test_a_legacy_alltoall_table_with_a_blank_redop_column():
    """Legacy nccl-tests printed 'redop' in the alltoall header and left it blank in the rows (a real run:
    microsoft/superbenchmark tests/data/nccl_alltoall.log); the rows are read without it."""
    header = ("#                                             out-of-place                       in-place\n"
              "#   size       count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
              "#    (B)  (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
    rows = ("      32           1   float            89.00    0.00    0.00    N/A    85.13    0.00    0.00    N/A\n"
            " 1048576       32768   float            87.42   11.99   10.50    N/A    88.90   11.79   10.32    N/A\n"
            "8589934592 268435456 float              37984  226.14  197.87    N/A    37946  226.37  198.07    N/A\n")
    log = parse_log(header + rows, n_ranks=8, collective="alltoall")
    assert [r.size_bytes for r in log.rows] == [32, 1048576, 8589934592]
    assert [r.redop for r in log.rows] == ["none"] * 3 and not log.unreadable
    assert log.rows[1].oop.time_us == 87.42 and log.rows[1].ip is not None and log.rows[1].ip.time_us == 88.90
