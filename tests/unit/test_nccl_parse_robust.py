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
