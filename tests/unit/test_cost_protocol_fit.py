"""The protocol-aware fit: known regimes recovered, noise and outliers survived, unseen rows predicted, bad input
refused, and the goals held on every real log of 8 rows or more."""
from __future__ import annotations

import json

import numpy as np
import pytest

from commlab.cost.protocol_fit import (
    MAX_REGIMES, ProtocolFit, fit_protocol_model, max_regimes_for, relative_errors,
)
from commlab.errors import CommlabError
from commlab.nccl import nccl_tests_logs, parse_log

SIZES = 2.0 ** np.arange(3, 35)


def three_regimes(s):
    """LL up to 64 KiB, LL128 up to 8 MiB, Simple above: alpha in s, B in bytes/s, boundaries NCCL-like jumps."""
    ll = 6e-6 + s / 20e9
    ll128 = 14e-6 + s / 150e9
    simple = 40e-6 + s / 250e9
    return np.where(s < 2**16 + 1, ll, np.where(s < 2**23 + 1, ll128, simple))


def test_known_regimes_are_recovered_exactly():
    fit = fit_protocol_model(SIZES, three_regimes(SIZES))
    got = [(r.label, r.alpha_s * 1e6, r.bw_GBps) for r in fit.regimes]
    want = [("small", 6.0, 20.0), ("medium", 14.0, 150.0), ("large", 40.0, 250.0)]
    for (label, a, b), (wl, wa, wb) in zip(got, want):
        assert label == wl and a == pytest.approx(wa, rel=1e-9) and b == pytest.approx(wb, rel=1e-9)
    assert np.max(relative_errors(fit.time_s(SIZES), three_regimes(SIZES))) < 1e-12
    # the boundaries fall between the last row of one regime and the first of the next
    assert 2**16 <= fit.boundaries_nbytes[0] <= 2**17 and 2**23 <= fit.boundaries_nbytes[1] <= 2**24


def test_crossing_lines_put_the_boundary_at_the_crossing():
    t = np.minimum(5e-6 + SIZES / 20e9, 20e-6 + SIZES / 200e9)   # the fastest of two lines
    fit = fit_protocol_model(SIZES, t, max_regimes=2)
    cross = (20e-6 - 5e-6) / (1 / 20e9 - 1 / 200e9)             # 333333 bytes
    assert fit.boundaries_nbytes[0] == pytest.approx(cross, rel=1e-9)
    dense = np.geomspace(8, 2**34, 2000)                       # and between the rows it is the min of the two
    assert np.allclose(fit.time_s(dense), np.minimum(5e-6 + dense / 20e9, 20e-6 + dense / 200e9), rtol=1e-9)


def test_noise_and_outliers_leave_the_parameters_close():
    rng = np.random.default_rng(13)
    t = three_regimes(SIZES) * np.exp(rng.normal(0.0, 0.02, SIZES.size))    # 2% noise
    t[[2, 20]] *= 1.7                                                          # two wild rows
    fit = fit_protocol_model(SIZES, t)
    ll, ll128, simple = fit.regimes
    assert ll.alpha_s * 1e6 == pytest.approx(6.0, rel=0.08)
    assert simple.bw_GBps == pytest.approx(250.0, rel=0.05) and simple.alpha_s * 1e6 == pytest.approx(40.0, rel=0.5)
    assert ll128.bw_GBps == pytest.approx(150.0, rel=0.15)
    e = relative_errors(fit.time_s(SIZES), three_regimes(SIZES))              # against the truth, not the noise
    assert np.median(e) < 0.02


def test_at_most_eight_numbers_each_with_a_unit():
    fit = fit_protocol_model(SIZES, three_regimes(SIZES))
    assert len(fit.params) == 8 == 3 * 2 + 2
    # the JSON keys of `commlab nccl-tests` and `commlab scorecard` keep their published names
    assert set(fit.params) == {"alpha_LL_us", "alpha_LL128_us", "alpha_Simple_us", "bw_LL_GBps", "bw_LL128_GBps",
                               "bw_Simple_GBps", "switch_LL_LL128_bytes", "switch_LL128_Simple_bytes"}
    assert {p["unit"] for p in fit.params.values()} == {"us", "GB/s", "bytes"}
    json.dumps(fit.params, allow_nan=False)                                     # strict JSON
    assert max_regimes_for(8) == 2 and max_regimes_for(9) == MAX_REGIMES and max_regimes_for(4) == 1


def test_a_flat_regime_has_a_null_bandwidth():
    s = np.array([8.0, 16, 32, 64, 1e6, 2e6, 4e6, 8e6, 16e6])
    t = np.where(s < 1e3, 10e-6, 20e-6 + s / 100e9)
    fit = fit_protocol_model(s, t)
    assert fit.regimes[0].beta_s_per_byte == 0 and fit.params["bw_LL_GBps"]["value"] is None
    json.dumps(fit.params, allow_nan=False)


@pytest.mark.parametrize("sizes, times, words", [
    ([8, 16], [1e-5, 1e-5], "at least 3 rows"),
    ([1024, 1024, 1024], [1e-5, 1.1e-5, 1e-5], "different sizes"),
    ([8, 16, 32, 64], [0, 0, 0, 0], "all 4 times are zero"),
    ([0, 0, 0], [1e-6, 1e-6, 1e-6], "no size"),
])
def test_bad_input_names_what_is_missing(sizes, times, words):
    with pytest.raises(CommlabError, match=words):
        fit_protocol_model(sizes, times)


def _log_points(path):
    log = parse_log(path.read_text())
    s = np.array([r.size_bytes for r in log.rows], dtype=float)
    t = np.array([r.oop.time_us for r in log.rows], dtype=float) * 1e-6
    keep = s > 0
    return s[keep], t[keep]


REAL = [p for p in nccl_tests_logs() if len(_log_points(p)[0]) >= 8]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:2])
def test_goals_on_every_real_log_of_eight_rows_or_more(path):
    s, t = _log_points(path)
    fit = fit_protocol_model(s, t)
    e = relative_errors(fit.time_s(s), t)
    assert len(fit.params) <= 8
    assert np.median(e) <= 0.05 and np.percentile(e, 90) <= 0.12, (np.median(e), np.percentile(e, 90))


def test_sixteen_real_logs_are_held_to_the_goals():
    assert len(REAL) == 16


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:2])
def test_rows_it_has_not_seen(path):
    """Fit on every other row, predict the rows left out: the model interpolates, it does not memorise."""
    s, t = _log_points(path)
    held = np.zeros(len(s), dtype=bool)
    held[1:-1:2] = True
    fit = fit_protocol_model(s[~held], t[~held])
    e = relative_errors(fit.time_s(s[held]), t[held])
    assert np.median(e) <= 0.10, np.median(e)


def test_the_fit_is_a_protocol_fit_and_reports_its_error():
    s, t = _log_points(REAL[0])
    fit = fit_protocol_model(s, t)
    assert isinstance(fit, ProtocolFit) and fit.n_rows == len(s)
    assert fit.mean_abs_error == pytest.approx(np.mean(relative_errors(fit.time_s(s), t)))
    assert all(line.split()[0] in ("small", "medium", "large") for line in fit.describe())
