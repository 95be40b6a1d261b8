"""``sweep(...)``: an nccl-tests-style sweep from a notebook (or any Python), on ranks it starts itself.

Rank 0 reports each finished size as a line that the launcher consumes to move a progress bar
(``tqdm.auto``: a widget in a notebook, text on stderr in a terminal), so the bar lives in the notebook's own
process; a forked rank cannot draw widgets.
"""
from __future__ import annotations

import sys

from commlab.bench.config import DEFAULT_MAX_NBYTES, DEFAULT_MIN_NBYTES, BenchConfig
from commlab.bench.result import BenchResult

PROGRESS_MARK = "commlab-bench-progress"


def _rank_sweep(rank: int, n_ranks: int, config: BenchConfig, progress: bool) -> BenchResult:
    from commlab.bench.loop import sweep_in_group

    def report(done: int, total: int, row) -> None:
        if progress and rank == 0:
            print(f"{PROGRESS_MARK} {done} {total}", flush=True)

    return sweep_in_group(config, on_size=report)


def _progress_hook(total: int):
    """(on_line hook, close) moving a tqdm.auto bar from rank 0's progress lines."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="commlab bench", unit="size", file=sys.stderr, leave=False)

    def on_line(rank: int, line: str, to_stderr: bool) -> bool:
        if rank != 0 or not line.startswith(PROGRESS_MARK):
            return False
        bar.n = int(line.split()[1])
        bar.refresh()
        return True

    return on_line, bar.close


def sweep(op: str, min_nbytes: int | str = DEFAULT_MIN_NBYTES, max_nbytes: int | str = DEFAULT_MAX_NBYTES,
          factor: int = 2, iters: int = 20, warmup: int = 5, check: bool = True, n_ranks: int = 4,
          backend: str = "auto", dtype: str = "float", redop: str = "sum", root: int = 0,
          timeout_s: float = 300.0, progress: bool = True, verbose: bool = True) -> BenchResult:
    """Start ``n_ranks`` ranks (commlab.launch), sweep ``op`` from ``min_nbytes`` to ``max_nbytes`` and
    return the :class:`BenchResult` (``.rows``, ``.table()``, ``.to_json()``). Sizes may be strings such as
    ``"64M"``. Parameters mean what nccl-tests' flags mean (:class:`commlab.bench.BenchConfig`)."""
    from commlab.launch import LaunchConfig

    config = BenchConfig(op, min_nbytes, max_nbytes, factor, iters, warmup, check, dtype, redop, root)
    return run_sweep(config, LaunchConfig(n_ranks, backend, timeout_s, verbose=verbose), progress)


def run_sweep(config: BenchConfig, launch, progress: bool = True) -> BenchResult:
    """The sweep of ``config`` on ranks started with ``launch`` (a commlab.launch.LaunchConfig)."""
    from commlab.launch import run_with

    config.check_ranks(launch.n_ranks)
    on_line, close = _progress_hook(len(config.sizes_nbytes())) if progress else (None, None)
    try:
        return run_with(launch, _rank_sweep, (config, progress), on_line=on_line)[0]
    finally:
        if close is not None:
            close()
