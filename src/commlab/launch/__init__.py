"""Start ranks from a notebook or a script (live layer; chapter 03 "Running ranks", labs/scripts).

>>> from commlab import launch
>>> def hello(rank, n_ranks):
...     import torch, torch.distributed as dist
...     x = torch.tensor([float(rank)])
...     dist.all_reduce(x)
...     return x.item()
>>> launch.run(hello, 4, verbose=False)                      # doctest: +SKIP
[6.0, 6.0, 6.0, 6.0]

* :func:`run` starts n ranks on this machine (gloo on CPU, NCCL with a GPU per rank), streams what they
  print as ``[rank r] ...`` and returns their values; any failure raises :class:`RankError`.
* :func:`init_from_env`, :func:`is_launched` and :func:`main` serve scripts run under torchrun.

Importing this package does not import torch.
"""
from commlab.launch.config import LaunchConfig
from commlab.launch.env import Context, init_from_env, is_launched, main
from commlab.launch.failures import RankError, RankFailure
from commlab.launch.runner import run, run_with

__all__ = ["Context", "LaunchConfig", "RankError", "RankFailure", "init_from_env", "is_launched", "main", "run",
           "run_with"]
