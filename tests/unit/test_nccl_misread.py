"""The nccl-tests reader never misreads in silence: repeated or interleaved tables, header units, values that are
no measurements, two collectives in one file, an NCCL WARN glued to a row, a log that is mostly unreadable.
Every variant is built from a real fixture; the clean fixture is the reference."""
from __future__ import annotations

import json
import re

import pytest

from commlab.cli import main
from commlab.errors import CommlabError
from commlab.nccl import parse_log
from commlab.nccl.examples import nccl_tests_log
from commlab.nccl.summary import summarize

ROW = re.compile(r"^\s*\d+\s+\d+\s+[a-z]")
CLEAN = nccl_tests_log(14).read_text()  # all_reduce, 2 ranks, full output with header and footer
REFERENCE = parse_log(CLEAN)


def _lines(text: str = CLEAN) -> list[str]:
    return text.splitlines()


def _row_indices(lines: list[str]) -> list[int]:
    return [i for i, ln in enumerate(lines) if ROW.match(ln)]


def _scaled_row(line: str, time_scale: float, bw_scale: float) -> str:
    """A row with its time columns times ``time_scale`` and its bandwidth columns times ``bw_scale``."""
    tokens = line.split()
    for block in (5, 9):
        tokens[block] = f"{float(tokens[block]) * time_scale:.6g}"
        for k in (1, 2):
            tokens[block + k] = f"{float(tokens[block + k]) * bw_scale:.6g}"
    return "  ".join(tokens)


def test_two_ranks_tables_interleaved_are_refused_with_the_lines():
    lines = _lines()
    rows = _row_indices(lines)
    mixed = lines[:rows[0]]
    for i in rows:
        mixed += [lines[i], lines[i]]  # two ranks printing the same table at once
    with pytest.raises(CommlabError, match=r"size 16 appears again at line \d+ \(first at line \d+\) without the sweep "
                                           r"starting over: rows of two tables are interleaved"):
        parse_log("\n".join(mixed))


def test_a_duplicated_row_is_refused():
    lines = _lines()
    i = _row_indices(lines)[10]
    with pytest.raises(CommlabError, match=f"size 8192 appears again at line {i + 2}"):
        parse_log("\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]))


def test_the_whole_log_twice_is_read_once_and_said():
    log = parse_log(CLEAN + CLEAN)
    assert log.rows == REFERENCE.rows
    assert any(n.startswith("the same table appears 2 times") for n in log.notes)
    assert summarize(log) == summarize(REFERENCE)


def test_several_sweeps_keep_the_first_and_name_the_others():
    lines = _lines()
    rows = _row_indices(lines)
    second = [_scaled_row(lines[i], 2.0, 0.5) for i in rows]  # a second cycle (-N 2), twice as slow
    text = "\n".join(lines[:rows[-1] + 1] + second + lines[rows[-1] + 1:])
    log = parse_log(text)
    assert log.rows == REFERENCE.rows
    note = next(n for n in log.notes if n.startswith("2 sweeps in one log"))
    assert f"lines {rows[0] + 1}-{rows[-1] + 1}" in note and f"lines {rows[-1] + 2}-" in note


def test_two_collectives_in_one_file_are_refused_naming_both():
    text = CLEAN + "\n" + nccl_tests_log(15).read_text()  # then an all_gather run
    with pytest.raises(CommlabError, match=r"runs of different collectives: all_reduce \(lines 16-\d+\), "
                                           r"all_gather \(lines \d+-\d+\)"):
        parse_log(text)


@pytest.mark.parametrize("time_unit, time_scale, bw_unit, bw_scale", [
    ("ms", 1e-3, "GB/s", 1.0), ("us", 1.0, "MB/s", 1e3), ("s", 1e-6, "GiB/s", 1e9 / 1024**3)])
def test_the_header_units_are_read(time_unit, time_scale, bw_unit, bw_scale):
    lines = _lines()
    units = next(i for i, ln in enumerate(lines) if "(elements)" in ln)
    lines[units] = lines[units].replace("(us)", f"({time_unit})").replace("(GB/s)", f"({bw_unit})")
    for i in _row_indices(lines):
        lines[i] = _scaled_row(lines[i], time_scale, bw_scale)
    log = parse_log("\n".join(lines))
    assert len(log.rows) == len(REFERENCE.rows) and log.unreadable == []
    for got, want in zip(log.rows, REFERENCE.rows):
        assert got.oop.time_us == pytest.approx(want.oop.time_us, rel=1e-5)
        assert got.oop.busbw_GBps == pytest.approx(want.oop.busbw_GBps, rel=1e-5, abs=1e-9)
    assert summarize(log).peak_busbw_GBps == pytest.approx(summarize(REFERENCE).peak_busbw_GBps, rel=1e-5)


def test_an_unknown_unit_is_refused():
    text = CLEAN.replace("(GB/s)", "(Gb/s)")
    with pytest.raises(CommlabError, match=r"units \(us\), \(Gb/s\).*Gb/s is not one of them"):
        parse_log(text)


@pytest.mark.parametrize("time_scale, bw_scale", [(1.0, 1e3), (1e-3, 1.0)])
def test_values_in_other_units_than_the_header_says_are_refused(time_scale, bw_scale):
    """MB/s values under a (GB/s) header read as 'peak 4000 GB/s'; ms under (us) as 'alpha 11.9 ns'."""
    lines = _lines()
    for i in _row_indices(lines):
        lines[i] = _scaled_row(lines[i], time_scale, bw_scale)
    with pytest.raises(CommlabError, match=r"algbw is not size / time: at line \d+ algbw x time / size = "
                                           r"(1e\+03|0\.001) \(1 expected"):
        parse_log("\n".join(lines))


@pytest.mark.parametrize("value", ["nan", "inf", "-3.99", "-nan"])
def test_rows_that_are_no_measurements_are_refused_and_listed(value, tmp_path, capsys):
    lines = _lines()
    i = _row_indices(lines)[-1]
    tokens = lines[i].split()
    tokens[7] = value  # the out-of-place busbw
    lines[i] = "  ".join(tokens)
    log = parse_log("\n".join(lines))
    assert log.rows == REFERENCE.rows[:-1]
    assert log.unreadable == [(i + 1, lines[i])]
    assert any(f"busbw {value!r} is not a finite number >= 0" in n for n in log.notes)
    path = tmp_path / "log.txt"
    path.write_text("\n".join(lines))
    assert main(["nccl-tests", str(path), "--json"]) == 0
    strict = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))
    assert strict["unreadable"][0]["line"] == i + 1


def test_a_nan_footer_is_not_used():
    log = parse_log(re.sub(r"(# Avg bus bandwidth\s*:) \S+", r"\1 nan", CLEAN))
    assert log.avg_busbw_GBps == pytest.approx(REFERENCE.computed_avg_busbw_GBps)
    assert any("'Avg bus bandwidth' is nan" in n for n in log.notes)


def test_a_row_with_an_nccl_warn_glued_to_it_is_read_and_the_warning_mentioned():
    lines = _lines()
    i = _row_indices(lines)[20]
    warn = "autodl-container:31706:31740 [1] NCCL WARN Call to recv failed : Connection reset by peer"
    lines[i] = lines[i] + " " + warn
    log = parse_log("\n".join(lines))
    assert log.rows == REFERENCE.rows and log.unreadable == []
    assert any(n.startswith(f"line {i + 1}: an NCCL message is glued to the end of this row") and "NCCL WARN" in n
               for n in log.notes)


def test_no_summary_or_verdict_when_most_rows_are_unreadable(tmp_path, capsys):
    lines = _lines()
    rows = _row_indices(lines)
    for i in rows[: len(rows) // 2 + 1]:
        lines[i] = lines[i][: len(lines[i]) // 2]  # cut short
    log = parse_log("\n".join(lines))
    assert len(log.unreadable) > len(log.rows) > 0
    with pytest.raises(CommlabError, match=r"15 of 28 table rows could not be read \(first at line 16: expected 13 "
                                           r"columns, found \d+\): no summary or verdict"):
        summarize(log)
    path = tmp_path / "log.txt"
    path.write_text("\n".join(lines))
    assert main(["nccl-tests", str(path), "--link", "pcie3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no summary or verdict" in err
