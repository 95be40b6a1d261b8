"""Collectives written with point-to-point ``isend``/``irecv`` that follow :mod:`commlab.schedules` step for
step, the tracer that records a reader's own sends, and the checker of the build-your-own-ring lab
(live layer; chapters 03, 05, 06).

Inside a rank (see :func:`commlab.launch.run`)::

    y = p2p.ring_all_reduce(x, tracer=tracer)      # equals dist.all_reduce on a copy of x
    trace = tracer.gather()                         # every rank's sends, one trace
    commlab.schedules.compare_trace(commlab.schedules.build("ring-all-reduce", n_ranks), trace)  # None

From the notebook: ``p2p.check_ring(my_ring_all_reduce, "all_reduce")``.
Importing this package does not import torch.
"""
from commlab.p2p.check import KINDS, check_ring, check_rings
from commlab.p2p.execute import execute, tree_all_reduce
from commlab.p2p.report import CaseResult, CheckReport
from commlab.p2p.ring import ring_all_gather, ring_all_reduce, ring_reduce_scatter
from commlab.p2p.tracer import Tracer

__all__ = ["KINDS", "CaseResult", "CheckReport", "Tracer", "check_ring", "check_rings", "execute", "ring_all_gather",
           "ring_all_reduce", "ring_reduce_scatter", "tree_all_reduce"]
