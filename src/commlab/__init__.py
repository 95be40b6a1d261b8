"""commlab: the package behind the commlab book on GPU cluster communication.

Pure layer (numpy and matplotlib only): units, hardware, collectives, schedules, cost, overlap,
parallelism, exercises, nccl, viz, book. Live layer (torch.distributed, pynvml): launch, bench, p2p,
topology, measure. Importing the package imports nothing heavy; import the submodule you need.
"""

__version__ = "0.1.0"
