"""The nccl-tests table writer against the real modern fixtures: every row it writes must be the row
nccl-tests printed, character for character, and whatever it writes must read back to the same rows."""
from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commlab.errors import CommlabError
from commlab.nccl import Measure, Row, format_row, format_table, parse_log
from commlab.nccl.examples import nccl_tests_logs
from commlab.nccl.format import HEADER_LINES, fit_number, format_time_us

LOGS = nccl_tests_logs()
MODERN = [p for p in LOGS if re.search(r"^# format: modern", p.read_text(), re.M)]
PREFIX = re.compile(r"^(?:\[\d+,\d+\]<stdout>:|\d+: )")
ROW = re.compile(r"^\s*\d+\s+\d+\s+[a-z]")


def printed_rows(text: str) -> list[str]:
    """The row lines as nccl-tests printed them (launcher prefix removed)."""
    lines = [PREFIX.sub("", ln) for ln in text.splitlines()]
    return [ln for ln in lines if ROW.match(ln)]


@pytest.mark.parametrize("path", MODERN, ids=lambda p: p.name[:2])
def test_rows_are_written_exactly_as_nccl_tests_printed_them(path):
    text = path.read_text()
    assert [format_row(r) for r in parse_log(text).rows] == printed_rows(text)


@pytest.mark.parametrize("path", MODERN, ids=lambda p: p.name[:2])
def test_header_lines_are_the_fixtures_header_lines(path):
    if path.name.startswith("07"):
        pytest.skip("fixture 07 comes from an nccl-tests version whose header lines are spaced differently")
    lines = [PREFIX.sub("", ln) for ln in path.read_text().splitlines()]
    assert HEADER_LINES[1] in lines and HEADER_LINES[2] in lines
    assert HEADER_LINES[0] in lines or not any("out-of-place" in ln for ln in lines)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[:2])
def test_round_trip_through_the_writer(path):
    log = parse_log(path.read_text())
    text = format_table(log.collective, log.n_ranks, log.rows, preamble=log.preamble or None)
    back = parse_log(text)
    assert back.rows == log.rows
    assert (back.collective, back.n_ranks, back.format) == (log.collective, log.n_ranks, "modern")
    assert back.unreadable == [] and back.busbw_mismatches == [] == log.busbw_mismatches
    footer = float(re.search(r"Avg bus bandwidth\s*:\s*(\S+)", text).group(1))
    assert footer == pytest.approx(log.computed_avg_busbw_GBps, rel=1e-5)


def test_preamble_devices_and_footer_lines():
    log = parse_log(LOGS[13].read_text())  # fixture 14: full output with its preamble
    devices = [{"pid": 31706, "host": "autodl-container-xxxxx", "device": r, "bus_id": f"0000:b{4 + r}:00",
                "name": "NVIDIA GeForce RTX 2080 Ti"} for r in range(2)]
    text = format_table("all_reduce", 2, log.rows, preamble=log.preamble, devices=devices)
    original = LOGS[13].read_text().splitlines()
    for line in original[6:11] + original[-3:-2]:  # preamble, device block, footer as nccl-tests printed them
        assert line in text.splitlines()
    # the average of the printed (rounded) busbw values, not of nccl-tests' unrounded ones
    assert re.search(r"^# Avg bus bandwidth    : 2.057\d*$", text, re.M)
    assert text.splitlines()[0] == "# Collective test starting: all_reduce_perf"


def test_wrong_counts_and_na():
    m_ok, m_na, m_bad = Measure(12.5, 1.0, 1.5, 0), Measure(12.5, 1.0, 1.5, None), Measure(12.5, 1.0, 1.5, 3)
    row = Row(12500, 3125, "float", "sum", -1, m_ok, m_na)  # algbw = size / time, as nccl-tests computes it
    assert format_row(row).endswith("      0    12.50    1.00    1.50    N/A")
    text = format_table("all_reduce", 4, [row, Row(12504, 3126, "float", "sum", -1, m_bad, m_ok)])
    assert "# Out of bounds values : 1 FAILED" in text
    assert parse_log(text).rows[1].oop.wrong == 3


@pytest.mark.parametrize("value, width, expected", [
    (449.73, 6, "449.73"), (0.0, 6, "  0.00"), (1234.567, 6, "1234.6"), (12345.6, 6, " 12346"),
    (123456.7, 6, "123457"), (1.5e7, 6, " 2e+07"), (1.5e7, 7, "1.5e+07"),
])
def test_fit_number_falls_back_to_fewer_decimals_then_an_exponent(value, width, expected):
    assert fit_number(value, width) == expected


@pytest.mark.parametrize("t_us, expected", [(12.9, "  12.90"), (124.04, "  124.0"), (7163.5, " 7163.5"),
                                            (13989.0, "  13989"), (2479229.0, "2479229")])
def test_time_column_as_in_the_fixtures(t_us, expected):
    assert format_time_us(t_us) == expected


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0, max_value=1e12, allow_nan=False), st.sampled_from([6, 7]))
def test_fit_number_fits_and_keeps_the_value(value, width):
    text = fit_number(value, width)
    assert len(text) == width
    decimals = len(text.split(".")[1].split("e")[0]) if "." in text else 0
    if "e" in text:
        assert float(text) == pytest.approx(value, rel=0.5)
    else:
        assert abs(float(text) - value) <= 0.5 * 10.0 ** -decimals + 1e-9 * value


@st.composite
def sweeps(draw):
    """Rows of one sweep as nccl-tests prints it: growing sizes, algbw = size / time, busbw = algbw * 1.5."""
    sizes = sorted(draw(st.sets(st.integers(1, 2**40), min_size=1, max_size=6)))
    rows = []
    for size in sizes:
        measures = []
        for _ in range(2):
            t_us = draw(st.floats(0.1, 1e6))
            algbw = size / (t_us * 1e-6) / 1e9
            measures.append(Measure(t_us, algbw, algbw * 1.5, draw(st.one_of(st.none(), st.integers(0, 10**5)))))
        rows.append(Row(size, size // 4, draw(st.sampled_from(["float", "half"])), "sum", -1, *measures))
    return rows


@settings(max_examples=100, deadline=None)
@given(sweeps())
def test_writer_output_reads_back_and_is_a_fixed_point(rows):
    first = format_table("all_reduce", 4, rows)
    back = parse_log(first)
    assert len(back.rows) == len(rows) and back.unreadable == []
    assert [format_row(r) for r in back.rows] == [format_row(r) for r in rows]  # printing is idempotent
    for a, b in zip(rows, back.rows):
        assert (a.size_bytes, a.count, a.oop.wrong) == (b.size_bytes, b.count, b.oop.wrong)
        assert math.isclose(a.oop.time_us, b.oop.time_us, rel_tol=0.05, abs_tol=0.005)


def test_bad_arguments():
    row = parse_log(LOGS[0].read_text()).rows[0]
    with pytest.raises(CommlabError):
        format_table("allsum", 4, [row])
    with pytest.raises(CommlabError):
        format_table("all_reduce", 0, [row])
    with pytest.raises(CommlabError):
        format_table("all_reduce", 4, [row], devices=["a", "b"])
    with pytest.raises(CommlabError):
        format_table("all_reduce", 4, [{"size_bytes": 8}])  # type: ignore[list-item]


def test_rows_without_an_in_place_measurement():
    """commlab's benchmark may time only out-of-place for a collective without an in-place form."""
    rows = []
    for k in range(5):
        size, t_us = 8 * 4 ** k, 10.0 + k
        algbw = round(size / (t_us * 1e-6) / 1e9, 2)
        rows.append(Row(size, 2 * 4 ** k, "float", "none", -1, Measure(t_us, algbw, round(algbw / 2, 2), 0)))
    text = format_table("all_to_all", 2, rows)
    back = parse_log(text)
    assert back.rows == rows and back.unreadable == [] and back.collective == "all_to_all"
    assert back.n_ranks == 2 and back.busbw_mismatches == []
