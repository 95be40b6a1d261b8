"""The bandwidth sweep lab as a script: an nccl-tests-style sweep over torch.distributed, busbw recomputed from
algbw by hand, an alpha-beta fit and the protocol-aware fit (regimes, each alpha and B, boundaries from the data),
and the comparison with a real 8x H100 nccl-tests run regime by regime, next to what NCCL's tuner picks there
(labs/bandwidth_sweep.ipynb). busbw, the line and the regimes' times use your bus_factor,
least_squares_alpha_beta and protocol_time_s from labs/mine/bandwidth_sweep.py (else the reference; the first
line says which, ``--reference`` forces it).

On one machine, without a launcher (the script starts the ranks itself; gloo on CPU, NCCL with a GPU per rank):

    python labs/scripts/bandwidth_sweep.py --ranks 4
    python labs/scripts/bandwidth_sweep.py --ranks 2 --op all_gather -b 1K -e 16M -f 2

Under torchrun, on one node or several (rank 0 prints):

    torchrun --nproc-per-node 4 labs/scripts/bandwidth_sweep.py
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
        labs/scripts/bandwidth_sweep.py -b 8 -e 1G -f 2 -n 20 --link nvlink4

Sizes take nccl-tests' suffixes (bare K/M/G are binary). The flags mean what nccl-tests' flags mean.
"""
from __future__ import annotations

import argparse
import sys

from commlab.labs import script

DEFAULT_RANKS = 4
COMPARE_FIXTURE = 7          # 07_all_reduce_H100-p5-NVSwitch_8r.txt: 8x H100 SXM, one node
COMPARE_LINK = "nvlink4"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", default="all_reduce", help="collective (commlab bench's names; default all_reduce)")
    p.add_argument("-b", "--minbytes", default="1K", help="first size (default 1K)")
    p.add_argument("-e", "--maxbytes", default="4M", help="last size (default 4M)")
    p.add_argument("-f", "--stepfactor", type=int, default=4, help="size multiplier (default 4)")
    p.add_argument("-n", "--iters", type=int, default=10, help="timed iterations per size (default 10)")
    p.add_argument("-w", "--warmup", type=int, default=2, help="warm-up iterations (default 2)")
    p.add_argument("--link", default=None, help="judge this run's peak busbw against a commlab.hardware link "
                                                "(nvlink4, pcie5, ib-ndr, ...)")
    script.add_launch_options(p, DEFAULT_RANKS, default_timeout_s=300.0)
    return p.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple:
    """The worker's arguments: the sweep's BenchConfig; ``--link`` checked before any rank starts."""
    from commlab.bench import BenchConfig

    config = BenchConfig(args.op, args.minbytes, args.maxbytes, args.stepfactor, args.iters, args.warmup)
    if args.link is not None:
        from commlab.hardware import link

        link(args.link)
    return (config,)


def worker(rank: int, n_ranks: int, code, config):
    """Every rank sweeps (a collective needs them all); rank 0 returns the result."""
    from commlab.bench import sweep_in_group

    result = sweep_in_group(config)
    return result if rank == 0 else None


def busbw_lines(result, code) -> list[str]:
    """busbw recomputed from algbw with ``code``'s bus_factor, against the table's busbw column."""
    factor = code.function("bus_factor")(result.op, result.n_ranks)
    worst = max(abs(row.oop.algbw_GBps * factor - row.oop.busbw_GBps) for row in result.rows)
    return [f"busbw = algbw x F(n), F({result.n_ranks}) = {factor:g} for {result.op}: "
            f"largest difference from the table's busbw column {worst:.3g} GB/s"]


def fit_lines(result, code) -> list[str]:
    """The alpha-beta fit of the out-of-place times, by hand (``code``'s) and by commlab.cost."""
    from commlab.cost import fit_alpha_beta
    from commlab.units import format_bandwidth, format_time

    nbytes = [row.size_bytes for row in result.rows]
    t_s = [row.oop.time_us * 1e-6 for row in result.rows]
    alpha_s, beta = code.function("least_squares_alpha_beta")(nbytes, t_s)
    ref = fit_alpha_beta(nbytes, t_s)
    bw = "infinite" if beta == 0 else format_bandwidth(1 / beta)
    return [f"alpha-beta fit of t = alpha + beta S (relative least squares): alpha = {format_time(alpha_s)}, "
            f"1/beta = {bw}",
            f"commlab.cost.fit_alpha_beta: alpha = {format_time(ref.alpha_s)}, 1/beta = "
            f"{'infinite' if ref.beta_s_per_byte == 0 else format_bandwidth(1 / ref.beta_s_per_byte)}, "
            f"R^2 = {ref.r2:.3f}"]


def _errors(t_s, model_t_s):
    """|model / measured - 1| per row."""
    import numpy as np

    return np.abs(np.asarray(model_t_s, dtype=float) / np.asarray(t_s, dtype=float) - 1)


def protocol_lines(result, code) -> list[str]:
    """The protocol-aware fit of the run: its parameters with units, its regimes, and its median error next to
    the line's (the regimes' times from ``code``'s protocol_time_s)."""
    import numpy as np

    from commlab.cost import fit_alpha_beta, fit_protocol_model

    nbytes = np.array([row.size_bytes for row in result.rows], dtype=float)
    t_s = np.array([row.oop.time_us for row in result.rows]) * 1e-6
    if len(nbytes) < 3:
        return [f"protocol-aware fit: needs at least 3 sizes, this sweep has {len(nbytes)}"]
    fit = fit_protocol_model(nbytes, t_s)
    params = ", ".join(f"{name} = {'inf' if p['value'] is None else format(p['value'], '.4g')} {p['unit']}"
                       for name, p in fit.params.items())
    line = _errors(t_s, fit_alpha_beta(nbytes, t_s).time_s(nbytes))
    regimes = _errors(t_s, code.function("protocol_time_s")(nbytes, fit.regimes))
    return ([f"protocol-aware fit ({len(fit.params)} numbers): {params}"] + ["  " + x for x in fit.describe()]
            + [f"|model / measured - 1|, median and mean: alpha-beta line {np.median(line):.1%} and "
               f"{line.mean():.1%}, protocol-aware {np.median(regimes):.1%} and {regimes.mean():.1%} (the mean is "
               f"what it minimises)"])


def fixture_lines(code) -> list[str]:
    """Fixture 07 regime by regime: the protocol-aware fit, and what NCCL's tuner picks on its machine."""
    import numpy as np

    from commlab import nccl
    from commlab.cost import fit_protocol_model
    from commlab.tuner.launch import LaunchShape
    from commlab.tuner.predict import predict
    from commlab.scorecard.fixture_machines import fixture_machine
    from commlab.units import format_nbytes

    log = nccl.parse_log(nccl.nccl_tests_log(COMPARE_FIXTURE).read_text())
    nbytes = np.array([row.size_bytes for row in log.rows], dtype=float)
    t_s = np.array([row.oop.time_us for row in log.rows]) * 1e-6
    fit = fit_protocol_model(nbytes, t_s)
    machine = fixture_machine(COMPARE_FIXTURE).machine
    pred = predict(log.collective, nbytes, machine, launch=LaunchShape.from_log(log))
    fitted = float(np.median(_errors(t_s, code.function("protocol_time_s")(nbytes, fit.regimes))))
    predicted = float(np.median(_errors(t_s, pred.time_s)))
    picks = "; ".join(f"{old} -> {new} at {format_nbytes(at, binary=True)}" for at, old, new in pred.switches())
    return ([f"8x H100 (fixture 07), protocol-aware fit (median error {fitted:.1%}):"]
            + ["  " + x for x in fit.describe()]
            + [f"  NCCL's tuner on {machine.describe()} (median error {predicted:.1%}) picks "
               f"{pred.pairs()[0]} first; {picks or 'no switch'}"])


def compare_lines(result, link: str | None) -> list[str]:
    """This run next to the real 8x H100 log, in the numbers commlab.nccl.summarize gives."""
    from commlab import nccl
    from commlab.units import format_nbytes

    mine = nccl.summarize(nccl.parse_log(result.table()))
    path = nccl.nccl_tests_log(COMPARE_FIXTURE)
    h100 = nccl.summarize(nccl.parse_log(path.read_text()))
    lines = [f"{'':22s}{'peak busbw':>14s}{'at size':>12s}{'half-peak size':>16s}"]
    for name, s in ((f"this run ({result.backend})", mine), ("8x H100 (fixture 07)", h100)):
        lines.append(f"{name:22s}{s.peak_busbw_GBps:>10.3g} GB/s{format_nbytes(s.peak_size_bytes, binary=True):>12s}"
                     f"{format_nbytes(s.half_peak_size_bytes, binary=True):>16s}")
    judged = nccl.verdict(h100.peak_busbw_GBps, COMPARE_LINK)
    lines.append(f"fixture 07 against {COMPARE_LINK}: {judged.verdict} ({judged.percent:.0f} %): {judged.explanation}")
    if link is not None:
        own = nccl.verdict(mine.peak_busbw_GBps, link)
        lines.append(f"this run against {link}: {own.verdict} ({own.percent:.1f} %): {own.explanation}")
    return lines


def report(result, code, link: str | None = None) -> str:
    """What rank 0 prints: the nccl-tests table, then the lab's results."""
    lines = [result.table().rstrip(), ""]
    lines += busbw_lines(result, code) + fit_lines(result, code) + protocol_lines(result, code) + [""]
    lines += compare_lines(result, link) + fixture_lines(code)
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    return script.run_script("bandwidth_sweep.py", args, worker, prepare, lab="bandwidth_sweep",
                             default_n_ranks=DEFAULT_RANKS, report=lambda result, code: report(result, code, args.link))


if __name__ == "__main__":
    sys.exit(main())
