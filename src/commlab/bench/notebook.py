"""``sweep(...)``: an nccl-tests-style sweep from a notebook (or any Python), on ranks it starts itself.

Rank 0 reports each finished size as a line that the launcher consumes: the row itself (so that a sweep that
stops early, by Ctrl-C, a failed rank or the timeout, still gives back the rows it measured) and, with
``progress``, a step of a progress bar (``tqdm.auto``: a widget in a notebook, text on stderr in a terminal).
The bar lives in the notebook's own process; a forked rank cannot draw widgets.
"""
from __future__ import annotations

import json
import sys

from commlab.bench.config import DEFAULT_MAX_NBYTES, DEFAULT_MIN_NBYTES, BenchConfig
from commlab.bench.result import BenchResult, version_line

ROW_MARK = "commlab-bench-row"


def _rank_sweep(rank: int, n_ranks: int, config: BenchConfig) -> BenchResult:
    import torch.distributed as dist

    from commlab.bench.loop import sweep_in_group

    def report(done: int, total: int, row) -> None:
        if rank == 0:
            message = {"done": done, "backend": str(dist.get_backend()), "row": row.to_json()}
            print(f"{ROW_MARK} {json.dumps(message)}", flush=True)

    return sweep_in_group(config, on_size=report)


class _Collector:
    """The launcher's side: rows from rank 0's lines, and a progress bar moved by them."""

    def __init__(self, total: int, progress: bool):
        from tqdm.auto import tqdm

        self.rows: list = []
        self.backend = ""
        self.bar = tqdm(total=total, desc="commlab bench", unit="size", file=sys.stderr, leave=False,
                        disable=not progress)

    def on_line(self, rank: int, line: str, to_stderr: bool) -> bool:
        from commlab.nccl.records import Row

        if rank != 0 or to_stderr or not line.startswith(ROW_MARK + " "):
            return False
        message = json.loads(line[len(ROW_MARK) + 1:])
        self.rows.append(Row.from_json(message["row"]))
        self.backend = message["backend"]
        self.bar.n = message["done"]
        self.bar.refresh()
        return True

    def partial(self, config: BenchConfig, launch, reason: str) -> BenchResult:
        backend = self.backend or launch.backend
        return BenchResult(config.op, launch.n_ranks, backend, config.dtype, tuple(self.rows), config, (),
                           version_line(backend), partial=reason)


def stop_reason(exc: BaseException, timeout_flag: str = "timeout_s") -> str:
    """Why a sweep stopped, in the words of its partial result."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    if getattr(exc, "timed_out", False):
        return f"the sweep did not finish within {timeout_flag}"
    failures = getattr(exc, "failures", None)
    if failures:
        return f"rank {failures[0].rank} failed ({failures[0].summary[:120]})"
    return f"{type(exc).__name__}: {exc}"


def sweep(op: str, min_nbytes: int | str = DEFAULT_MIN_NBYTES, max_nbytes: int | str = DEFAULT_MAX_NBYTES,
          factor: int = 2, iters: int = 20, warmup: int = 5, check: int | bool = True, n_ranks: int = 4,
          backend: str = "auto", dtype: str = "float", redop: str = "sum", root: int = 0,
          timeout_s: float = 300.0, progress: bool = True, verbose: bool = True,
          step_nbytes: int | str | None = None) -> BenchResult:
    """Start ``n_ranks`` ranks (commlab.launch), sweep ``op`` from ``min_nbytes`` to ``max_nbytes`` and
    return the :class:`BenchResult` (``.rows``, ``.table()``, ``.to_json()``). Sizes may be strings such as
    ``"64M"``. Parameters mean what nccl-tests' flags mean (:class:`commlab.bench.BenchConfig`).

    A sweep that stops early raises what stopped it (``RankError``, ``KeyboardInterrupt``) with the rows
    measured so far attached as ``exc.partial_result`` (a BenchResult marked partial)."""
    from commlab.launch import LaunchConfig

    # BenchConfig reads size strings ("64M") in __post_init__; its fields are typed as what they hold after it
    config = BenchConfig(op, min_nbytes, max_nbytes, factor, iters, warmup, check,  # type: ignore[arg-type]
                         dtype, redop, root, step_nbytes)  # type: ignore[arg-type]
    return run_sweep(config, LaunchConfig(n_ranks, backend, timeout_s, verbose=verbose), progress)


def run_sweep(config: BenchConfig, launch, progress: bool = True, timeout_flag: str = "timeout_s") -> BenchResult:
    """The sweep of ``config`` on ranks started with ``launch`` (a commlab.launch.LaunchConfig); see
    :func:`sweep` for a sweep that stops early (``timeout_flag`` names the limit in its reason)."""
    from commlab.launch import RankError, run_with

    config.check_ranks(launch.n_ranks)
    collector = _Collector(len(config.sizes_nbytes()), progress)
    try:
        return run_with(launch, _rank_sweep, (config,), on_line=collector.on_line)[0]
    except (RankError, KeyboardInterrupt) as exc:
        reason = stop_reason(exc, f"{timeout_flag} {launch.timeout_s:g} s")
        exc.partial_result = collector.partial(config, launch, reason)  # type: ignore[union-attr]  # see sweep()
        raise
    finally:
        collector.bar.close()
