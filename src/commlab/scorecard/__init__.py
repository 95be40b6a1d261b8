"""Both cost models held against real nccl-tests logs (``commlab scorecard``, ``commlab nccl-tests``).

Above :mod:`commlab.cost`, :mod:`commlab.tuner`, :mod:`commlab.nccl` and :mod:`commlab.cluster`:

* :mod:`~commlab.scorecard.fixture_machines`: the described machine of each shipped log, and what stays outside
  the model;
* :mod:`~commlab.scorecard.cluster_column`: the cluster model's column, each multi-node log's preset and nodes;
* :mod:`~commlab.scorecard.log_model`: both models applied to one parsed log, row by row;
* :mod:`~commlab.scorecard.scorecard`: every log scored, the goals, the calibration of the TCPXO hop.

This ``__init__`` imports nothing: import the module you need.
"""
