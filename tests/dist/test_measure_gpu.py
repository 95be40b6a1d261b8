"""The live GPU measurements on a real CUDA machine (marked gpu; skipped without CUDA).

Checks what must hold on any healthy GPU: NVML and torch agree on the GPUs, copies move bytes at a positive
rate that does not exceed the PCIe slot by more than measurement noise, pinned host memory is at least as
fast as pageable, and NCCL's all-reduce runs across every GPU when there are two or more.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from commlab.measure import (CopySweep, Skipped, SweepConfig, d2d_sweep, h2d_sweep,  # noqa: E402
                             nccl_allreduce)
from commlab.topology import advice, read  # noqa: E402

CONFIG = SweepConfig(min_nbytes=1 << 20, max_nbytes=256 << 20, factor=16, repeats=5, warmup=2)


def test_nvml_sees_the_gpus_torch_sees():
    topo = read()
    assert topo.reason == "" and topo.n_gpus >= torch.cuda.device_count()
    names = {torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())}
    assert names <= set(topo.names())
    assert all(topo.relation(i, i) == "X" for i in range(topo.n_gpus))
    assert advice(topo).sentences


def test_pinned_h2d_is_positive_below_the_slot_and_not_slower_than_pageable():
    pinned, pageable = h2d_sweep(CONFIG, pinned=True), h2d_sweep(CONFIG, pinned=False)
    assert isinstance(pinned, CopySweep) and isinstance(pageable, CopySweep)
    assert pinned.peak_GBps > 0 and pageable.peak_GBps > 0
    if pinned.roof_GBps is not None:
        assert pinned.peak_GBps <= 1.1 * pinned.roof_GBps
        assert pinned.verdict() is not None
    assert pinned.peak_GBps >= 0.9 * pageable.peak_GBps


def test_device_to_device_copy_runs():
    sweep = d2d_sweep(CONFIG)
    assert isinstance(sweep, CopySweep) and sweep.peak_GBps > 0 and sweep.roof_GBps is None


def test_nccl_allreduce_across_all_gpus():
    if torch.cuda.device_count() < 2:
        pytest.skip("an all-reduce needs two GPUs")
    result = nccl_allreduce(nbytes=64 << 20, iters=10, warmup=3, timeout_s=120)
    assert not isinstance(result, Skipped)
    assert result.n_ranks == torch.cuda.device_count() and result.busbw_GBps > 0
