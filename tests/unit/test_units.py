"""units: parsing against hand-computed values, round trips, refusals with clear messages."""
import math

import pytest
from hypothesis import given, strategies as st

from commlab import units
from commlab.errors import CommlabError


@pytest.mark.parametrize("text, nbytes", [
    ("64M", 64 * 2**20), ("1.5GiB", 3 * 2**29), ("14GB", 14 * 10**9), ("400Gb", 5 * 10**10), ("8", 8),
    ("1K", 1024), ("1KB", 1000), ("1 KiB", 1024), ("2 MB", 2 * 10**6), ("8b", 1), ("0", 0), (4096, 4096),
    ("1e3", 1000), ("128 bytes", 128),
])
def test_parse_nbytes(text, nbytes):
    assert units.parse_nbytes(text) == nbytes


@pytest.mark.parametrize("text, bps", [
    ("400Gb/s", 5e10), ("50 GB/s", 5e10), ("3.6 Tb/s", 4.5e11), ("450GBps", 4.5e11), ("1 GiB/s", 2**30), (50, 5e10),
])
def test_parse_bandwidth(text, bps):
    assert units.parse_bandwidth_Bps(text) == pytest.approx(bps)


@pytest.mark.parametrize("text, seconds", [
    ("54 ms", 0.054), ("0.054 s", 0.054), ("54.4ms", 0.0544), ("3us", 3e-6), ("3 µs", 3e-6), ("120ns", 1.2e-7),
    ("2", 2.0), ("1 min", 60.0),
])
def test_parse_time(text, seconds):
    assert units.parse_time_s(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "abc", "12 parsecs", "-5M", "1.5", "nan", "inf", None, True, [1], "1.5 b"])
def test_parse_nbytes_refuses_with_the_value_in_the_message(bad):
    with pytest.raises(CommlabError) as info:
        units.parse_nbytes(bad)
    assert repr(bad) in str(info.value) or str(bad) in str(info.value)


@pytest.mark.parametrize("text, dimension", [
    ("54 ms", "s"), ("450 GB/s", "bytes/s"), ("24.5 GB", "bytes"), ("3", "1"), ("12.5%", "1"), ("3.6 Tb/s", "bytes/s"),
])
def test_parse_quantity_dimensions(text, dimension):
    assert units.parse_quantity(text).dimension == dimension


def test_quantity_decimal_size_for_answers():
    # "GB" is decimal everywhere; in answers a bare "G" is also read as decimal.
    assert units.parse_quantity("24.5 GB").value == pytest.approx(24.5e9)


@given(st.integers(min_value=0, max_value=2**50))
def test_format_then_parse_round_trips_within_three_digits(nbytes):
    text = units.format_nbytes(nbytes)
    assert units.parse_quantity(text).value == pytest.approx(nbytes, rel=5e-3, abs=0.5)


@given(st.floats(min_value=1e-9, max_value=1e4, allow_nan=False))
def test_time_round_trip(t_s):
    assert units.parse_time_s(units.format_time(t_s)) == pytest.approx(t_s, rel=5e-3)


@given(st.floats(min_value=1.0, max_value=1e13))
def test_bandwidth_round_trip(bw):
    assert units.parse_bandwidth_Bps(units.format_bandwidth(bw)) == pytest.approx(bw, rel=5e-3)


@given(st.text(max_size=20))
def test_parsers_never_raise_anything_but_commlab_error(text):
    for parse in (units.parse_nbytes, units.parse_bandwidth_Bps, units.parse_time_s, units.parse_quantity):
        try:
            value = parse(text)
        except CommlabError:
            continue
        got = value.value if isinstance(value, units.Quantity) else value
        assert math.isfinite(got)


def test_gigabits_to_gigabytes():
    assert units.gbps_to_GBps(400) == 50
