"""This machine's GPUs and how they reach each other (chapter 01, the topology lab).

* :func:`parse_topo_text` reads the text of ``nvidia-smi topo -m``;
* :func:`read` asks NVML (package nvidia-ml-py) about this machine; it never raises for a missing driver or
  GPU, it returns an empty :class:`Topology` whose ``reason`` says why;
* :func:`examples` / :func:`example` are real machines shipped with commlab (8x H100, 8x A100, PCIe boxes);
* :func:`advice` says where a tensor-parallel group belongs and what a ring can reach.

Importing this package touches neither NVML nor torch.
"""
from commlab.topology.advice import Advice, advice, nvlink_groups, ring_order
from commlab.topology.examples import example, example_names, examples
from commlab.topology.model import Gpu, Nic, Topology, is_relation, nvlink_count
from commlab.topology.nvml import read
from commlab.topology.parse import parse_topo_text
from commlab.topology.render import format_matrix

__all__ = ["Advice", "Gpu", "Nic", "Topology", "advice", "example", "example_names", "examples",
           "format_matrix", "is_relation", "nvlink_count", "nvlink_groups", "parse_topo_text", "read",
           "ring_order"]
