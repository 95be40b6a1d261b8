"""How much of the GEMM rate a matmul of a given shape reaches: wave and tile quantization (chapter 09).

A GPU computes a GEMM's output R x C in tiles, one thread block per tile, as many at once as it has SMs: a
"wave". The last wave runs with only part of the SMs busy, and a tile at the edge computes padding beyond R or
C, so a GEMM reaches ``R C / (waves x SMs x tile area)`` of the rate the same GPU reaches on a shape that
fills every wave (NVIDIA, "Matrix Multiplication Background User's Guide", sections "Tile Quantization" and
"Wave Quantization", :data:`QUANTIZATION_SOURCE`). cuBLAS picks the tile by heuristics among several sizes;
:func:`wave_efficiency` takes the best of 256 x 128, 128 x 256 and 128 x 128 (the guide's examples and
CUTLASS's Hopper defaults) and charges a smaller tile nothing for its lower data reuse, so it is the most a
shape can reach, never less. The GEMM rate it scales (``GpuSpec.gemm_TFLOPS``) is the measured maximum over
shapes (Bekman's MAMF), which fills its waves.

A transformer layer's GEMMs on one GPU (n tokens of the micro-batch on this rank, TP t): the forward's
outputs n x N of each weight K x N, the backward's data gradient n x K and weight gradient K x N, with
QKV (h x (h + 2 h_kv)/t), O (h/t x h), the MLP's up (h x f/t, twice when gated) and down (f/t x h).

>>> round(wave_efficiency(8192, 16384, 132), 3)         # 8192 tiles of 128 x 128 in 63 waves of 132 SMs
0.985
>>> round(wave_efficiency(1024, 2304, 132), 3)          # 144 tiles of 128 x 128: two waves, the second 12 of 132
0.545
"""
from __future__ import annotations

import math
from functools import lru_cache

QUANTIZATION_SOURCE = ("NVIDIA, 'Matrix Multiplication Background User's Guide' (Deep Learning Performance "
                       "documentation), sections 'Tile Quantization' and 'Wave Quantization': https://docs.nvidia.com/"
                       "deeplearning/performance/dl-performance-matrix-multiplication/index.html")
TILES = ((256, 128), (128, 256), (128, 128))


@lru_cache(maxsize=65536)
def wave_efficiency(rows: int, cols: int, sms: int) -> float:
    """The fraction of a full-wave GEMM's rate an output of ``rows`` x ``cols`` reaches on ``sms`` SMs."""
    if rows < 1 or cols < 1 or sms < 1:
        return 1.0
    best = 0.0
    for tr, tc in TILES:
        tiles = math.ceil(rows / tr) * math.ceil(cols / tc)
        waves = math.ceil(tiles / sms)
        best = max(best, rows * cols / (waves * sms * tr * tc))
    return best


@lru_cache(maxsize=4096)
def layer_gemm_s(tokens: int, hidden: int, kv_hidden: int, ffn: int, gated: bool, tp: int, sms: int,
                 rate_flops: float, hbm_Bps: float = 0.0, grad_nbytes: int = 4) -> tuple[float, float, float]:
    """(forward, data-gradient, weight-gradient) seconds of one layer's GEMMs on one GPU at ``rate_flops``,
    each matrix slowed by its shape's :func:`wave_efficiency` and, given ``hbm_Bps``, no faster than moving its
    operands: the roofline of each GEMM (NVIDIA's guide, section 'Math And Memory Bounds': 2 (M K + K N + M N)
    bytes in BF16), the weight gradient also reading and writing its ``grad_nbytes`` accumulator."""
    n, h = max(1, int(tokens)), hidden
    mats = ((h, (h + 2 * kv_hidden) // tp), (h // tp, h), (h, (2 if gated else 1) * ffn // tp), (ffn // tp, h))
    fwd = dgrad = wgrad = 0.0
    for k, c in mats:
        flops = 2.0 * n * k * c
        moved = 2.0 * (n * k + k * c + n * c) / hbm_Bps if hbm_Bps else 0.0
        accumulate = 2.0 * grad_nbytes * k * c / hbm_Bps if hbm_Bps else 0.0
        fwd += max(flops / (rate_flops * wave_efficiency(n, c, sms)), moved)
        dgrad += max(flops / (rate_flops * wave_efficiency(n, k, sms)), moved)
        wgrad += max(flops / (rate_flops * wave_efficiency(k, c, sms)), moved - 2.0 * k * c / hbm_Bps + accumulate
                     if hbm_Bps else 0.0)
    return fwd, dgrad, wgrad
