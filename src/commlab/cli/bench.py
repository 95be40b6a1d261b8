"""``commlab bench OP [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS] [-w WARMUP] [-c CHECKS] [--ranks N] ...``:
nccl-tests on torch.distributed, printing the same table.

OP is all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv. Sizes are read as
nccl-tests reads them: K, M, G in either case are binary (-e 8m is 8388608 bytes). Defaults: -b 8 -e 8M -f 2
-n 20 -w 5 -c 1 -d float -o sum -r 0, --ranks 2. Under torchrun the launched group is used (--ranks is
ignored) and rank 0 prints. Exit status 1 when a result is wrong (#wrong > 0) or, as nccl-tests, when the
average busbw is under 90 % of $NCCL_TESTS_MIN_BW (GB/s). A sweep stopped by Ctrl-C, a failed rank or
--timeout prints and saves the rows it measured, marked partial.
"""
from __future__ import annotations

import argparse
import os
import sys

from commlab.errors import CommlabError

#: nccl-tests' flags for GPUs and threads per process; commlab runs one rank per process.
ONE_PER_PROCESS = ("-g", "-t")


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "bench", help="nccl-tests-style sweep of a collective over torch.distributed (gloo or NCCL)",
        description=__doc__.split("\n\n", 1)[1].replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("op", metavar="OP", help="all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                                            "alltoall or sendrecv")
    p.add_argument("-b", "--minbytes", default="8", metavar="MIN", help="first size (default 8)")
    p.add_argument("-e", "--maxbytes", default="8M", metavar="MAX", help="last size (default 8M)")
    p.add_argument("-f", "--stepfactor", default=None, metavar="FACTOR", help="size multiplier (default 2)")
    p.add_argument("-i", "--stepbytes", default=None, metavar="STEP", help="size increment instead of -f")
    p.add_argument("-n", "--iters", default="20", metavar="ITERS", help="timed iterations (default 20)")
    p.add_argument("-w", "--warmup_iters", default="5", metavar="WARMUP", help="warm-up iterations (default 5)")
    p.add_argument("-c", "--check", default="1", metavar="CHECKS",
                   help="checked iterations per size (default 1; 0: no check, #wrong is N/A)")
    p.add_argument("-d", "--datatype", default="float", metavar="TYPE", help="float, half, bfloat16, double")
    p.add_argument("-o", "--op", dest="redop", default="sum", metavar="REDOP", help="sum, prod, min, max")
    p.add_argument("-r", "--root", default="0", metavar="ROOT", help="root of broadcast and reduce (default 0)")
    p.add_argument("-g", "--ngpus", default="1", metavar="1", help="nccl-tests' GPUs per process: always 1 here")
    p.add_argument("-t", "--nthreads", default="1", metavar="1", help="nccl-tests' threads: always 1 here")
    p.add_argument("--ranks", default="2", metavar="N", help="ranks to start when not under torchrun (default 2)")
    p.add_argument("--backend", default="auto", metavar="NAME", help="auto, gloo or nccl (default auto)")
    p.add_argument("--timeout", default="600", metavar="SECONDS", help="limit for the whole sweep (default 600)")
    p.add_argument("--json", action="store_true", help="print commlab's JSON to stdout instead of the table")
    p.add_argument("--json-out", default=None, metavar="FILE", help="also write commlab's JSON to FILE")
    p.add_argument("-J", "--output_file", dest="nccl_json", default=None, metavar="FILE.json",
                   help="also write nccl-tests' JSON (its -J schema) to FILE.json, never overwriting")
    p.add_argument("--csv", default=None, metavar="FILE", help="also write the rows as CSV to FILE")
    p.add_argument("--plot", default=None, metavar="FILE", help="also draw busbw and time against size (png, "
                                                                 "pdf, svg)")
    p.add_argument("--link", default=None, metavar="NAME", help="with --plot: draw this link's one-way "
                                                                "bandwidth as the roof (nvlink4, pcie5, ...)")
    return p


def _whole(flag: str, text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise CommlabError(f"{flag} must be a whole number, got {text!r}") from None


def _seconds(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < float("inf")):
        raise CommlabError(f"{flag} must be a number of seconds > 0, got {text!r}")
    return value


def _config(args):
    from commlab.bench import BenchConfig
    from commlab.bench.config import parse_size

    for flag, text in zip(ONE_PER_PROCESS, (args.ngpus, args.nthreads)):
        if text.strip() != "1":
            raise CommlabError(f"{flag} {text}: commlab bench runs one rank per process, each with one GPU (or "
                               "CPU); start N ranks with --ranks N, or torchrun --nproc-per-node N -m commlab bench")
    if args.stepfactor is not None and args.stepbytes is not None:
        raise CommlabError(f"-f {args.stepfactor} and -i {args.stepbytes}: give one of them (a factor or a "
                           "step in bytes), as nccl-tests documents")
    step = None if args.stepbytes is None else parse_size(args.stepbytes, "-i")
    return BenchConfig(args.op, parse_size(args.minbytes, "-b"), parse_size(args.maxbytes, "-e"),
                       _whole("-f", args.stepfactor or "2"), _whole("-n", args.iters), _whole("-w", args.warmup_iters),
                       _whole("-c", args.check), args.datatype, args.redop, _whole("-r", args.root), step)


def _min_bw() -> float | None:
    """$NCCL_TESTS_MIN_BW in GB/s (nccl-tests reads it with atof), or None when unset."""
    text = os.environ.get("NCCL_TESTS_MIN_BW")
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 and value != float("inf")):
        raise CommlabError(f"NCCL_TESTS_MIN_BW must be a bandwidth in GB/s, got {text!r}")
    return value


def _check_outputs(args):
    """Every output path and the link, checked before any rank starts; returns the Link or None."""
    from commlab.bench.outputs import check_writable, plot_suffixes

    for flag, path in (("--json-out", args.json_out), ("--csv", args.csv)):
        if path is not None:
            check_writable(flag, path)
    if args.nccl_json is not None:
        check_writable("-J", args.nccl_json, (".json",))
    if args.plot is not None:
        check_writable("--plot", args.plot, plot_suffixes())
    if args.link is None:
        return None
    if args.plot is None:
        raise CommlabError(f"--link {args.link} draws the roof of --plot: give --plot FILE too")
    from commlab.hardware import link

    return link(args.link)


def _emit(result, args, link, min_bw, start_time: str) -> None:
    """Print the table (or the JSON) and write every file asked for."""
    from commlab.bench import nccl_json
    from commlab.bench.outputs import csv_text, json_text, write_plot, write_text

    print(json_text(result.to_json()) if args.json else result.table(min_bw), end="", flush=True)
    from commlab.cli._common import say_wrote

    if args.json_out is not None:
        write_text("--json-out", args.json_out, json_text(result.to_json()))
        say_wrote(args.json_out, args.json)
    if args.nccl_json is not None:
        path = nccl_json.free_path(args.nccl_json)
        print(f"# Writing JSON output to {path}", file=sys.stderr)
        write_text("-J", path, json_text(nccl_json.document(result, sys.argv, start_time, min_bw)))
        say_wrote(path, args.json)
    if args.csv is not None:
        write_text("--csv", args.csv, csv_text(result))
        say_wrote(args.csv, args.json)
    if args.plot is not None:
        write_plot(args.plot, result, link)
        say_wrote(args.plot, args.json)


def _under_launcher(config, args):
    """torchrun: sweep in the launched group; every rank gets the result, rank 0 prints. A group the script
    had already initialised is left as it was; one initialised here is destroyed at the end."""
    import torch.distributed as dist

    from commlab.bench import BenchResult, sweep_in_group
    from commlab.bench.notebook import stop_reason
    from commlab.bench.result import version_line
    from commlab.launch import init_from_env

    owned = not dist.is_initialized()
    ctx = init_from_env(args.backend, _seconds("--timeout", args.timeout))
    bar = _terminal_bar(len(config.sizes_nbytes())) if ctx.is_main else None
    rows: list = []

    def on_size(done, total, row):
        rows.append(row)
        if bar is not None:
            bar.update()

    try:
        return sweep_in_group(config, on_size=on_size), ctx.is_main
    except BaseException as exc:
        if ctx.is_main:
            partial = BenchResult(config.op, ctx.n_ranks, ctx.backend, config.dtype, tuple(rows), config, (),
                                  version_line(ctx.backend), stop_reason(exc, "--timeout"))
            exc.partial_result = partial  # type: ignore[attr-defined]  # the rows so far ride on the error
        raise
    finally:
        if bar is not None:
            bar.close()
        if owned and dist.is_initialized():
            dist.destroy_process_group()


def _terminal_bar(total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="commlab bench", unit="size", file=sys.stderr, leave=False,
                disable=not sys.stderr.isatty())


def _sweep(config, args):
    """(result, prints): the sweep under torchrun or on ranks started here."""
    from commlab.launch import is_launched

    if is_launched():
        return _under_launcher(config, args)
    from commlab.bench.notebook import run_sweep
    from commlab.cli._common import ranks_arg
    from commlab.launch import LaunchConfig

    launch = LaunchConfig(ranks_arg(args.ranks), args.backend, _seconds("--timeout", args.timeout), verbose=False)
    result = run_sweep(config, launch, progress=sys.stderr.isatty(), timeout_flag="--timeout")
    print(f"commlab bench: {result.op} on {result.n_ranks} ranks, {result.backend}", file=sys.stderr)
    return result, True


def _status(result, min_bw) -> int:
    """nccl-tests' exit rule: wrong results or an average busbw under 90 % of NCCL_TESTS_MIN_BW fail."""
    status = 0
    if result.wrong:
        print(f"commlab bench: {result.wrong} measurement(s) with wrong elements (#wrong > 0)", file=sys.stderr)
        status = 1
    if result.below_min_bw(min_bw):
        print(f"commlab bench: average busbw {result.avg_busbw_GBps:g} GB/s is under 90 % of NCCL_TESTS_MIN_BW="
              f"{min_bw:g} GB/s", file=sys.stderr)
        status = 1
    return status


def run(args) -> int:
    from commlab.bench import nccl_json

    config = _config(args)
    link, min_bw, start_time = _check_outputs(args), _min_bw(), nccl_json.now_text()
    try:
        result, prints = _sweep(config, args)
    except BaseException as exc:  # a failed rank, Ctrl-C, the timeout: keep what was measured, then report
        partial = getattr(exc, "partial_result", None)
        if partial is None:
            raise
        _emit(partial, args, link, min_bw, start_time)
        if getattr(exc, "timed_out", False):
            done = len(partial.rows) if partial is not None else 0
            print(f"commlab bench: the sweep needed longer than --timeout {_seconds('--timeout', args.timeout):g} s "
                  f"({done} of {len(config.sizes_nbytes())} sizes measured, printed above and marked partial): give "
                  "it more time with --timeout SECONDS, or fewer or smaller sizes (-e, -n)", file=sys.stderr)
            return 1
        raise
    if prints:
        _emit(result, args, link, min_bw, start_time)
    return _status(result, min_bw)
