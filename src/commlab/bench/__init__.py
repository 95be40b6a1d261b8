"""nccl-tests on torch.distributed: sweep a collective over sizes, time it, check it, print the table
(live layer; chapter 08 and the bandwidth sweep lab; ``commlab bench`` on the command line).

>>> from commlab import bench
>>> result = bench.sweep("all_reduce", "1K", "1M", n_ranks=4)     # doctest: +SKIP
>>> print(result.table())                                          # doctest: +SKIP

Sizes, counts, algbw and busbw follow nccl-tests exactly (nccl-tests' doc/PERFORMANCE.md; commlab.collectives holds the
per-collective rules). Inside a group you started yourself (torchrun): ``bench.sweep_in_group(config)``.
Importing this package does not import torch.
"""
from commlab.bench.config import BENCH_OPS, DTYPES, BenchConfig
from commlab.bench.notebook import sweep
from commlab.bench.result import BenchResult
from commlab.bench.loop import count_for, sweep_in_group

__all__ = ["BENCH_OPS", "DTYPES", "BenchConfig", "BenchResult", "count_for", "sweep", "sweep_in_group"]
