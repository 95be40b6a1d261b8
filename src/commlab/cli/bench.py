"""``commlab bench OP [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-c CHECK] [--ranks N] ...``:
nccl-tests on torch.distributed, printing the same table.

OP is all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv. Sizes take nccl-tests'
suffixes (bare K/M/G are binary: -e 8M is 8388608 bytes). Defaults: -b 8 -e 8M -f 2 -n 20 -w 5 -c 1 -d float
-o sum -r 0, --ranks 2. Under torchrun the launched group is used (--ranks is ignored) and rank 0 prints.
"""
from __future__ import annotations

import argparse
import sys

from commlab.errors import CommlabError


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "bench", help="nccl-tests-style sweep of a collective over torch.distributed (gloo or NCCL)",
        description=__doc__.split("\n\n", 1)[1].replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("op", metavar="OP", help="all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                                            "alltoall or sendrecv")
    p.add_argument("-b", "--minbytes", default="8", metavar="MIN", help="first size (default 8)")
    p.add_argument("-e", "--maxbytes", default="8M", metavar="MAX", help="last size (default 8M)")
    p.add_argument("-f", "--stepfactor", default="2", metavar="FACTOR", help="size multiplier (default 2)")
    p.add_argument("-n", "--iters", default="20", metavar="ITERS", help="timed iterations (default 20)")
    p.add_argument("-w", "--warmup_iters", default="5", metavar="WARMUP", help="warm-up iterations (default 5)")
    p.add_argument("-c", "--check", default="1", metavar="CHECK", help="1: count wrong elements, 0: skip")
    p.add_argument("-d", "--datatype", default="float", metavar="TYPE", help="float, half, bfloat16, double")
    p.add_argument("-o", "--op", dest="redop", default="sum", metavar="REDOP", help="sum, prod, min, max")
    p.add_argument("-r", "--root", default="0", metavar="ROOT", help="root of broadcast and reduce (default 0)")
    p.add_argument("--ranks", default="2", metavar="N", help="ranks to start when not under torchrun (default 2)")
    p.add_argument("--backend", default="auto", metavar="NAME", help="auto, gloo or nccl (default auto)")
    p.add_argument("--timeout", default="600", metavar="SECONDS", help="limit for the whole sweep (default 600)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the rows as JSON to FILE")
    return p


def _whole(flag: str, text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise CommlabError(f"{flag} must be a whole number, got {text!r}") from None


def _seconds(flag: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise CommlabError(f"{flag} must be a number of seconds, got {text!r}") from None


def _config(args):
    from commlab.bench import BenchConfig
    from commlab.units import parse_nbytes

    check = _whole("-c", args.check)
    if check not in (0, 1):
        raise CommlabError(f"-c must be 0 or 1, got {args.check!r}")
    return BenchConfig(args.op, parse_nbytes(args.minbytes), parse_nbytes(args.maxbytes),
                       _whole("-f", args.stepfactor), _whole("-n", args.iters), _whole("-w", args.warmup_iters),
                       bool(check), args.datatype, args.redop, _whole("-r", args.root))


def _write_json(path: str, result) -> None:
    import json

    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(result.to_json(), fh, indent=2)
            fh.write("\n")
    except OSError as exc:
        raise CommlabError(f"cannot write --json {path!r}: {exc.strerror or exc}") from None


def _under_launcher(config, args):
    """torchrun: sweep in the launched group; only rank 0 gets a result back (others get None). A group the
    script had already initialised is left as it was; one initialised here is destroyed at the end."""
    import torch.distributed as dist

    from commlab.bench import sweep_in_group
    from commlab.launch import init_from_env

    owned = not dist.is_initialized()
    ctx = init_from_env(args.backend, _seconds("--timeout", args.timeout))
    bar = _terminal_bar(len(config.sizes_nbytes())) if ctx.is_main else None
    try:
        result = sweep_in_group(config, on_size=None if bar is None else (lambda done, total, row: bar.update()))
    finally:
        if bar is not None:
            bar.close()
        if owned:
            dist.destroy_process_group()
    return result if ctx.is_main else None


def _terminal_bar(total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="commlab bench", unit="size", file=sys.stderr, leave=False,
                disable=not sys.stderr.isatty())


def run(args) -> int:
    from commlab.launch import is_launched

    config = _config(args)
    if is_launched():
        result = _under_launcher(config, args)
        if result is None:
            return 0
    else:
        from commlab.bench.notebook import run_sweep
        from commlab.cli._common import ranks_arg
        from commlab.launch import LaunchConfig

        launch = LaunchConfig(ranks_arg(args.ranks), args.backend, _seconds("--timeout", args.timeout),
                              verbose=False)
        result = run_sweep(config, launch, progress=sys.stderr.isatty())
        print(f"commlab bench: {result.op} on {result.n_ranks} ranks, {result.backend}", file=sys.stderr)
    print(result.table(), end="")
    if args.json is not None:
        _write_json(args.json, result)
    return 0
