"""NCCL's tuner replayed on a described machine: which (algorithm, protocol) pair NCCL picks for a size, and how
long the machine takes to run it.

The modules, lowest first (each imports only those above it in this list):

* :mod:`~commlab.tuner.nccl_names`: NCCL's names and table indices;
* :mod:`~commlab.tuner.generation`: one generation of NCCL's tuner, read from its data file (the current one is
  the home of NCCL 2.30.7's tuning tables and chunk sizes);
* :mod:`~commlab.tuner.nccl_constants`: every constant of NCCL's tuner, each with its line of NCCL's source;
* :mod:`~commlab.tuner.settings`: NCCL_ALGO / NCCL_PROTO read as NCCL reads them, NCCL's names, the
  collectives its tuner models, ring step counts;
* :mod:`~commlab.tuner.networks`, :mod:`~commlab.tuner.nvlink_topology`: network kinds; NVLink layouts;
* :mod:`~commlab.tuner.machine`: :class:`~commlab.tuner.machine.Machine`, a described machine (``--machine``);
* :mod:`~commlab.tuner.graphs`: NCCL's channel search, simplified;
* :mod:`~commlab.tuner.shm`, :mod:`~commlab.tuner.launch`: the SHM transport (P2P off); nccl-tests' launch shape;
* :mod:`~commlab.tuner.table`: NCCL's tuning table for a machine;
* :mod:`~commlab.tuner.predict`: the predictive model, :func:`~commlab.tuner.predict.predict`;
* :mod:`~commlab.tuner.simplified`: the teaching version of chapter 06, a view over the same constants;
* :mod:`~commlab.tuner.generation_choice`, :mod:`~commlab.tuner.replay` (gathered in
  :mod:`~commlab.tuner.generations`): which generation a log gets, and its replay;
* :mod:`~commlab.tuner.calibrate`: calibration from a small run of the same cluster.

This ``__init__`` imports nothing: import the module you need (``from commlab.tuner.predict import predict``).
"""
