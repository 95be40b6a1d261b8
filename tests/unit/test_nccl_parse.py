"""parse_log over all 23 real nccl-tests logs, checked against their metadata, nccl-tests' own footer,
the busbw rule of nccl-tests' doc/PERFORMANCE.md and the peak busbw of each fixture."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from commlab.collectives import busbw_factor, canonical
from commlab.nccl import parse_log
from commlab.nccl.examples import nccl_tests_logs

LOGS = nccl_tests_logs()
META = re.compile(r"^#\s*(nranks|collective|format):\s*(\S+)", re.M)


def meta(path: Path) -> dict[str, str]:
    return dict(META.findall(path.read_text()))


def strip_meta(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines()
                     if not re.match(r"#\s*(source|command|nranks|collective|hardware|format):", ln))


def peak(log) -> float:
    return max(m.busbw_GBps for r in log.rows for m in (r.oop, r.ip) if m is not None)


def test_all_23_fixtures_are_shipped():
    assert len(LOGS) == 23
    for path in LOGS:  # each is a published run: it names where it comes from, and its shape
        assert re.search(r"^# source: \S", path.read_text(), re.M), path.name
        assert {"nranks", "collective", "format"} <= set(meta(path)), path.name


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[:2])
def test_collective_ranks_and_format_match_the_metadata(path):
    m = meta(path)
    log = parse_log(path.read_text())
    assert log.collective == canonical(m["collective"])
    assert log.n_ranks == int(m["nranks"])
    assert log.format == m["format"].rstrip(",")
    assert log.unreadable == []
    assert len(log.rows) >= 4 and log.busbw_mismatches == []


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[:2])
def test_busbw_is_algbw_times_the_bus_factor(path):
    """nccl-tests' doc/PERFORMANCE.md: busbw = algbw * F(n); legacy all_gather/reduce_scatter print busbw = algbw with
    algbw = S(n-1)/n/t. Tolerance: half a unit of the printed 2nd decimal on each side."""
    m = meta(path)
    n, op = int(m["nranks"]), canonical(m["collective"])
    log = parse_log(path.read_text())
    legacy_rule = m["format"].startswith("legacy") and op in ("all_gather", "reduce_scatter")
    factor = 1.0 if legacy_rule else busbw_factor(op, n)
    assert log.bandwidth_rule == ("legacy" if legacy_rule else "modern")
    for r in log.rows:
        for meas in (r.oop, r.ip):
            assert abs(meas.busbw_GBps - meas.algbw_GBps * factor) <= 0.005 * factor + 0.005 + 1e-9
            if legacy_rule and meas.algbw_GBps >= 10:  # algbw = S (n-1)/n / t, to the printed precision
                expected = r.size_bytes * (n - 1) / n / (meas.time_us * 1e3)
                assert meas.algbw_GBps == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[:2])
def test_average_busbw_matches_the_footer(path):
    footer = re.search(r"Avg bus bandwidth\s*:\s*(\S+)", path.read_text())
    log = parse_log(path.read_text())
    if footer is None:
        assert log.footer_avg_busbw_GBps is None
        assert log.avg_busbw_GBps == pytest.approx(log.computed_avg_busbw_GBps)
        return
    assert log.avg_busbw_GBps == float(footer.group(1))
    # the mean of the printed (rounded) values is within the rounding of each value
    assert log.computed_avg_busbw_GBps == pytest.approx(float(footer.group(1)), abs=0.006)


@pytest.mark.parametrize("number, anchor_GBps", [(1, 235.0), (3, 370.0), (7, 480.0), (9, 487.0), (14, 4.0)])
def test_peak_busbw_matches_the_anchors_of_nccl_tests_md(number, anchor_GBps):
    path = [p for p in LOGS if p.name.startswith(f"{number:02d}_")][0]
    assert peak(parse_log(path.read_text())) == pytest.approx(anchor_GBps, rel=0.01)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[:2])
def test_without_the_metadata_lines(path):
    """The leading '# key:' lines are not nccl-tests output: the reader must not need them."""
    m = meta(path)
    full = parse_log(path.read_text())
    bare = parse_log(strip_meta(path.read_text()))
    assert bare.rows == full.rows and bare.unreadable == []
    assert canonical(m["collective"]) in (bare.collective_candidates or (bare.collective,))
    has_rank_lines = re.search(r"^#\s+Rank\s+\d", path.read_text(), re.M) is not None
    assert bare.n_ranks == (int(m["nranks"]) if has_rank_lines else None)
    given = parse_log(strip_meta(path.read_text()), n_ranks=int(m["nranks"]), collective=m["collective"])
    assert given.busbw_mismatches == [] and given.n_ranks == int(m["nranks"])


def test_out_of_bounds_footer_of_fixture_19_is_read():
    log = parse_log(LOGS[18].read_text())
    assert log.out_of_bounds == 4  # "# Out of bounds values : 4 FAILED"; its bandwidth rows are still valid
    assert log.legacy_errors[-1] == (1.0, 1.0)


def test_a_wrong_rank_count_is_caught_by_the_busbw_check():
    log = parse_log(LOGS[6].read_text(), n_ranks=4)  # fixture 07 ran on 8 ranks
    assert log.n_ranks == 4
    assert log.busbw_mismatches and any("caller said 4" in n for n in log.notes)


def test_bad_arguments_raise_commlab_error():
    from commlab.errors import CommlabError

    with pytest.raises(CommlabError):
        parse_log(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(CommlabError):
        parse_log(LOGS[0].read_text(), n_ranks=0)
    with pytest.raises(CommlabError):
        parse_log(LOGS[0].read_text(), collective="allsum")
