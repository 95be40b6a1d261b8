"""Peak, half-peak size, alpha-beta fit and the health verdict, on real fixtures whose numbers can be read
off the printed table by eye."""
from __future__ import annotations

import pytest

from commlab.errors import CommlabError
from commlab.nccl import parse_log
from commlab.nccl.examples import nccl_tests_log, nccl_tests_logs
from commlab.nccl.summary import (ABOVE_RATIO, HEALTHY_RATIO, half_peak_size_bytes, peak_busbw_GBps, summarize,
                                  verdict)


def summary_of(number: int):
    return summarize(parse_log(nccl_tests_log(number).read_text()))


def test_fixture_14_by_eye():
    """2x RTX 2080 Ti: busbw plateaus at 4.00 GB/s; the first row at or above 2.00 is 131072 B (2.30)."""
    s = summary_of(14)
    assert s.peak_busbw_GBps == 4.00
    assert s.half_peak_size_bytes == 131072
    assert s.peak_size_bytes == 33554432  # the first row printing 4.00 (in-place, 33554432 B)
    assert s.avg_busbw_GBps == 2.05774
    assert (s.collective, s.n_ranks, s.format, s.n_rows) == ("all_reduce", 2, "modern", 28)


def test_fixture_07_by_eye():
    """8x H100: peak 483.35 at 16 GiB; half of it (241.7) is first reached at 32 MiB (295.63)."""
    s = summary_of(7)
    assert s.peak_busbw_GBps == 483.35 and s.peak_size_bytes == 17179869184
    assert s.half_peak_size_bytes == 33554432


@pytest.mark.parametrize("number, algbw_GBps", [(14, 4.00), (3, 247.0), (1, 156.0)])
def test_alpha_beta_fit_tracks_the_algbw_plateau(number, algbw_GBps):
    """1/beta is the asymptotic algbw; the largest rows print algbw close to it, alpha is a few microseconds."""
    s = summary_of(number)
    assert 1.0 / s.beta_s_per_byte / 1e9 == pytest.approx(algbw_GBps, rel=0.1)
    assert 0.0 <= s.alpha_s < 1e-3


def test_alpha_beta_fit_of_a_curved_sweep():
    """Fixture 07's algbw keeps climbing (205 GB/s at 64 MiB, 276 at 16 GiB): one line through it gives a
    bandwidth inside that range, not the plateau."""
    s = summary_of(7)
    assert 205.0 <= 1.0 / s.beta_s_per_byte / 1e9 <= 276.2


def test_alpha_of_a_latency_bound_sweep():
    """Fixture 08 (2 nodes EFA): 8 B to 512 B all take about 161-165 us, so alpha is of that order."""
    s = summary_of(8)
    assert 100e-6 < s.alpha_s < 250e-6


@pytest.mark.parametrize("number, link, expected", [
    (7, "nvlink4", "above the link"),   # NVLS: 483 GB/s > 450 GB/s
    (3, "nvlink4", "healthy"),          # 371 / 450 = 82 %
    (1, "nvlink3", "healthy"),          # 235 / 300 = 78 %
    (14, "pcie3", "low"),               # 4 / 16 = 25 %, P2P not supported
    (14, "nvlink4", "low"),
    (2, "nvlink3", "low"),              # NCCL_P2P_DISABLE=1: 5.2 / 300
])
def test_verdicts_on_real_runs(number, link, expected):
    v = verdict(summary_of(number).peak_busbw_GBps, link)
    assert v.verdict == expected
    assert v.percent == pytest.approx(100 * summary_of(number).peak_busbw_GBps / v.unidir_GBps)


def test_verdict_thresholds():
    assert verdict(450 * HEALTHY_RATIO, "nvlink4").verdict == "healthy"
    assert verdict(450 * HEALTHY_RATIO * 0.999, "nvlink4").verdict == "low"
    assert verdict(450 * ABOVE_RATIO, "nvlink4").verdict == "healthy"
    assert verdict(450 * ABOVE_RATIO * 1.001, "nvlink4").verdict == "above the link"
    assert verdict(0.0, "pcie5").to_json()["percent"] == 0.0


def test_bad_input():
    with pytest.raises(CommlabError):
        verdict(100.0, "nvlink9")
    with pytest.raises(CommlabError):
        verdict(float("nan"), "nvlink4")
    with pytest.raises(CommlabError):
        peak_busbw_GBps([])
    with pytest.raises(CommlabError):
        summarize(parse_log("no table here"))


@pytest.mark.parametrize("path", nccl_tests_logs(), ids=lambda p: p.name[:2])
def test_every_fixture_summarises(path):
    log = parse_log(path.read_text())
    s = summarize(log)
    assert s.peak_busbw_GBps > 0
    assert half_peak_size_bytes(log.rows) <= s.peak_size_bytes
    assert s.alpha_s is not None and s.alpha_s >= 0 and s.beta_s_per_byte > 0
