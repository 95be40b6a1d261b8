"""Chapter 09's worked examples, corrected where the seed article was wrong, each recomputed by hand here."""
from __future__ import annotations

import pytest

from commlab.hardware import link
from commlab.parallelism import ModelConfig, ParallelConfig, gradient_sync, tp_all_reduce, traffic

GB = 1e9


def _ring_all_reduce_by_hand(nbytes, n, alpha_s, bw_Bps):
    return 2 * (n - 1) * (alpha_s + nbytes / (n * bw_Bps))


def test_7b_fp16_gradients_over_8_gpus():
    sync = gradient_sync(7 * 10**9, 8)
    assert sync.nbytes_per_call == 14 * 10**9                      # 7e9 params x 2 bytes
    assert sync.bytes_per_rank_per_step == pytest.approx(2 * 7 / 8 * 14 * GB)   # 24.5 GB, not ~28 GB
    assert sync.bytes_per_rank_per_step == pytest.approx(24.5 * GB)
    t = sync.time_s("nvlink4")
    assert t == pytest.approx(24.5 * GB / (450 * GB), rel=1e-3)   # about 54 ms, not 31 ms (= 14 GB / 450 GB/s)
    assert t == pytest.approx(0.054, abs=0.001)
    assert t == pytest.approx(_ring_all_reduce_by_hand(14 * GB, 8, link("nvlink4").latency_s, 450 * GB))


def test_70b_fp16_gradients_over_8_gpus_on_nvlink_and_across_nodes():
    sync = gradient_sync(70 * 10**9, 8)
    assert sync.bytes_per_rank_per_step == pytest.approx(245 * GB)
    assert sync.time_s("nvlink4") == pytest.approx(0.544, abs=0.001)
    assert sync.time_s("ib-ndr") == pytest.approx(245 * GB / (50 * GB), rel=1e-3)   # about 4.9 s, not 5.6 s
    assert sync.time_s("ib-ndr") == pytest.approx(4.9, abs=0.01)


def test_card_004_total_volume_is_2_n_minus_1_p():
    p_nbytes = 14 * 10**9
    for n in (2, 8, 64, 1024):
        sync = gradient_sync(7 * 10**9, n)
        assert sync.bytes_all_ranks_per_step == pytest.approx(2 * (n - 1) * p_nbytes)
        # "2 P N" is only the large-N limit
        assert sync.bytes_all_ranks_per_step / (2 * p_nbytes * n) == pytest.approx((n - 1) / n)


def test_tp_stays_in_the_nvlink_domain():
    # 80 layers, h = 8192, s = 4096, b = 1, FP16, TP = 8: each all-reduce carries 1*4096*8192*2 = 64 MiB,
    # 4 per layer (2 forward, 2 backward): 320 per micro-batch
    model = ModelConfig(n_params=70 * 10**9, hidden=8192, n_layers=80, seq_len=4096)
    tp = traffic(model, ParallelConfig(tp=8)).only("TP")
    s = 4096 * 8192 * 2
    assert s == 64 * 2**20
    assert sum(item.calls_per_step for item in tp) == 320
    nvl, ib = link("nvlink4"), link("ib-ndr")
    on_nvlink = 320 * _ring_all_reduce_by_hand(s, 8, nvl.latency_s, 450 * GB)
    on_ib = 320 * _ring_all_reduce_by_hand(s, 8, ib.latency_s, 50 * GB)
    assert tp.time_s("nvlink4") == pytest.approx(on_nvlink)
    assert tp.time_s("ib-ndr") == pytest.approx(on_ib)
    assert 0.08 < on_nvlink < 0.09 and 0.75 < on_ib < 0.76          # about 86 ms against 755 ms per micro-batch
    assert 8.5 < on_ib / on_nvlink < 9.0                            # close to 450/50 = 9
    one = tp_all_reduce(micro_batch=1, seq_len=4096, hidden=8192, tp=8)
    assert one.time_s("nvlink4") == pytest.approx(on_nvlink / 320)
