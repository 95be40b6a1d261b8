"""Chapter 10, self-check: exercises that join several chapters (the mapping is in ``selfcheck.py``)."""
from __future__ import annotations

from commlab import collectives, cost, hardware, parallelism, units
from commlab.exercises.bank.common import (draw_round, duration, num, nvlink_figures, pick, rate, ratio_mistake,
                                          ring_link_Bps, ring_where, size)
from commlab.exercises.model import Exercise, Mistake, Worked
from commlab.parallelism import ModelConfig, ParallelConfig
from commlab.topology.model import Gpu, Topology, nvlink_count
from commlab.topology.render import format_matrix

_GPUS = (("nvlink3", "A100"), ("nvlink4", "H100"), ("nvlink2", "V100"))


def _matrix(rng, n_gpus: int, links_per_gpu: int) -> tuple[tuple[str, ...], ...]:
    """A symmetric nvidia-smi-style relation matrix: X on the diagonal, at least one NV# cell, and no GPU
    using more NVLinks than it has (each of the n-1 pairs gets at most links_per_gpu // (n-1))."""
    bonded = tuple(f"NV{k}" for k in sorted({1, 2, links_per_gpu // (n_gpus - 1)}))
    cells = [["X"] * n_gpus for _ in range(n_gpus)]
    for a in range(n_gpus):
        for b in range(a + 1, n_gpus):
            cells[a][b] = cells[b][a] = pick(rng, bonded + ("PHB", "SYS"))
    cells[0][n_gpus - 1] = cells[n_gpus - 1][0] = pick(rng, bonded)
    return tuple(tuple(row) for row in cells)


def _topo_bandwidth(rng) -> Worked:
    link_name, gpu = pick(rng, _GPUS)
    link = hardware.link(link_name)
    per_link, links_per_gpu = nvlink_figures(link)
    n_gpus = 4
    matrix = _matrix(rng, n_gpus, links_per_gpu)
    pairs = [(a, b) for a in range(n_gpus) for b in range(a + 1, n_gpus) if nvlink_count(matrix[a][b])]
    a, b = pick(rng, pairs)
    n_links = nvlink_count(matrix[a][b])
    bw_GBps = n_links * per_link / 2
    text = format_matrix(Topology(gpus=tuple(Gpu(i) for i in range(n_gpus)), matrix=matrix, source="exercise"))
    indented = "\n".join("    " + line for line in text.splitlines())
    question = (f"`nvidia-smi topo -m` on a machine with {gpu} GPUs ({link.title}: "
                f"{num(per_link)} GB/s per link, both directions added) prints:\n\n{indented}\n\n"
                "What bandwidth, one direction, in GB/s, "
                f"joins GPU{a} and GPU{b}?")
    plural = "NVLink" if n_links == 1 else "NVLinks"
    solution = (f"GPU{a}-GPU{b} reads {matrix[a][b]}: {n_links} bonded {plural}. {n_links} x "
                f"{num(per_link)} GB/s = {num(2 * bw_GBps)} GB/s both ways, {num(bw_GBps)} GB/s one "
                "way. PHB and SYS pairs go over PCIe (and the CPU): keep a TP group on NV-connected GPUs.")
    mistakes = (Mistake(2.0, "gave both directions", "per-link figures add both directions; halve for one"),)
    return Worked(question, bw_GBps, solution, mistakes, params={"cell": matrix[a][b], "link": link.name})


def _tp_cliff(rng) -> Worked:
    billions, hidden, n_layers = pick(rng, ((7, 4096, 32), (13, 5120, 40), (70, 8192, 80)))
    tp = int(pick(rng, (2, 4, 8)))
    fast = hardware.link(pick(rng, ("nvlink3", "nvlink4", "nvlink5")))
    slow = hardware.link(pick(rng, ("ib-ndr", "roce-400")))
    slow_Bps = ring_link_Bps(slow, tp)            # single-GPU servers: the card as the cluster model drives it
    model = ModelConfig(n_params=int(billions * 1e9), hidden=hidden, n_layers=n_layers, seq_len=4096)
    traffic = parallelism.tp_traffic(model, ParallelConfig(tp=tp))
    t_slow = sum(item.calls_per_step * float(cost.ring_all_reduce_time_s(item.nbytes_per_call, tp, slow.latency_s,
                                                                           slow_Bps)) for item in traffic)
    ratio = t_slow / traffic.time_s(fast)
    question = (f"Tensor parallelism over {tp} GPUs for a {billions}B model ({n_layers} layers, hidden {hidden}, "
                f"4096 tokens per micro-batch, BF16): how many times longer do its all-reduces take if the TP group "
                f"spans {ring_where(slow, tp)} (B = {rate(slow_Bps)} as NCCL drives the card, alpha "
                f"{num(slow.latency_s * 1e6)} us) instead of staying on {fast.title} ({rate(fast.unidir_Bps)}, alpha "
                f"{num(fast.latency_s * 1e6)} us)?")
    solution = (f"{len(traffic) * traffic.items[0].calls_per_step} all-reduces of "
                f"{size(model.activation_nbytes)} per step: {duration(traffic.time_s(fast))} on {fast.title}, "
                f"{duration(t_slow)} across the servers: {num(ratio)}x. That is why TP stays in the "
                "NVLink domain while PP (one activation send per micro-batch) can cross nodes.")
    mistakes = (ratio_mistake(1 / ratio, ratio, "ratio upside down", "divide the slow link's time by the fast one's"),
                ratio_mistake(2 * ratio, ratio, "one link counted both ways",
                              "compare both links in the same terms: one direction each"))
    return Worked(question, ratio, solution, mistakes, n_ranks=tp, params={"fast": fast.name, "slow": slow.name})


def _nccl_health(rng) -> Worked:
    machine, gpu = pick(rng, (("nvswitch3", "H100 SXM"), ("nvswitch2", "A100 SXM4")))
    link = hardware.link(machine)
    n = 8
    factor = collectives.busbw_factor("all_reduce", n)
    nbytes = 2 ** int(pick(rng, (30, 31, 32, 33)))
    busbw_target = draw_round(rng, 0.4, 1.05, 0.05) * link.unidir_GBps
    t_us = round(nbytes / (busbw_target / factor * units.GB) * 1e6, 1)
    algbw = round(float(cost.algbw_GBps(nbytes, t_us * 1e-6)), 2)
    busbw = float(cost.busbw_GBps("all_reduce", nbytes, nbytes / (algbw * units.GB), n))
    percent = 100 * busbw / link.unidir_GBps
    question = (f"all_reduce_perf on 8x {gpu} on NVSwitch ({rate(link.unidir_Bps)} per GPU one way) prints, at "
                f"its largest size {nbytes} B, algbw {algbw:.2f} GB/s. What percentage of the one-direction "
                "NVLink bandwidth does its busbw reach?")
    solution = (f"busbw = algbw x 2(N-1)/N = {algbw:.2f} x {num(factor)} = {num(busbw)} GB/s; "
                f"against {rate(link.unidir_Bps)} one way: {num(percent)}%. About 80% or more is healthy (NVLS can "
                "exceed 100%: the switch does the adding).")
    mistakes = (Mistake(1 / factor, "algbw used as busbw", "busbw = algbw x 2(N-1)/N"),
                Mistake(0.5, "held against both directions", "busbw compares with one direction"))
    return Worked(question, percent, solution, mistakes, n_ranks=n, params={"link": link.name})


def _ib_vs_roce(rng) -> Worked:
    """Both networks at NCCL's own per-hop latency: tuning.cc's hwLat has one NET row for InfiniBand and RoCE, and
    with one GPU per node (NCCL 2.23 on, "latencies are fully exposed") it charges every algorithm the tree's network
    hop, 5 us for LL; so only the port rates can differ. InfiniBand NDR against RoCE at 100 or 200 Gb/s: rates that
    differ, and that one GPU's PCIe link can drive (an 800 Gb/s XDR port would outrun an H100's PCIe 5.0 x16)."""
    from commlab.tuner import nccl_constants

    ib = hardware.link("ib-ndr")
    roce = hardware.link(pick(rng, ("roce-100", "roce-200")))
    n = int(pick(rng, (8, 16, 32, 64)))
    nbytes = float(pick(rng, (100_000, 1e6, 1e7)))                   # sizes where both terms count
    alpha_s = nccl_constants.HW_LAT_US[("net", "Tree", "LL")] * 1e-6    # one GPU per node: the tree's NET hop
    t_ib = float(cost.ring_all_reduce_time_s(nbytes, n, alpha_s, ib.unidir_Bps))
    t_roce = float(cost.ring_all_reduce_time_s(nbytes, n, alpha_s, roce.unidir_Bps))
    question = (f"A ring all-reduce of {size(nbytes)} across {n} nodes, one GPU and one port each: how many times "
                f"longer does it take on {roce.title} ({rate(roce.unidir_Bps)}) than on {ib.title} "
                f"({rate(ib.unidir_Bps)})? Take NCCL's per-hop network latency for both, alpha = "
                f"{num(alpha_s * 1e6)} us (with one GPU per node its tuner charges every algorithm the tree's "
                "network hop, the same for InfiniBand and RoCE).")
    solution = (f"t = 2(N-1)(alpha + S/(N B)): {duration(t_roce)} vs {duration(t_ib)}, ratio {num(t_roce / t_ib)}. "
                "With the same alpha only the port rates differ: a small all-reduce is latency-bound and takes "
                "about as long on both; a large one follows the bandwidth ratio. What separates the two networks "
                "is how they behave under congestion and loss, not this formula.")
    ratio = t_roce / t_ib
    mistakes = (ratio_mistake(1 / ratio, ratio, "ratio upside down", "divide the RoCE time by the InfiniBand time"),
                ratio_mistake(ib.unidir_GBps / roce.unidir_GBps, ratio, "bandwidth ratio only",
                              "the latency terms count too: the same 2(N-1) alpha on both networks"),
                ratio_mistake(1.0, ratio, "latency only", "the bandwidth terms count too: S/(N B) per step"))
    return Worked(question, ratio, solution, mistakes,
                  params={"ib": ib.name, "roce": roce.name, "n_ranks": n, "nbytes": nbytes})


EXERCISES = (
    Exercise("ch10.topo-bandwidth", "Read nvidia-smi topo -m", "GB/s", 0.02,
             "NV# is the number of bonded NVLinks; multiply by the per-link figure and halve for one direction "
             "(chapter 1, reading the topology).", _topo_bandwidth),
    Exercise("ch10.tp-cliff", "TP inside vs across nodes", "", 0.03,
             "Time the same TP all-reduces on both links with 2(t-1)(alpha + A/(t B)) (chapter 9).", _tp_cliff),
    Exercise("ch10.nccl-health", "Is this nccl-tests result healthy?", "%", 0.02,
             "busbw = algbw x 2(N-1)/N, then compare with one direction of the link (chapter 8).", _nccl_health),
    Exercise("ch10.ib-vs-roce", "InfiniBand vs RoCE for an all-reduce", "", 0.03,
             "Ring time 2(N-1)(alpha + S/(N B)) on each network, the same alpha on both (chapters 2 and 05).",
             _ib_vs_roce),
)
