"""Write a topology back as ``nvidia-smi topo -m`` prints it: tab-separated, expanded to 8-column stops.

GPU rows carry their relation to every NIC as extra columns, then CPU and NUMA affinity where known; the NIC
legend follows when the NIC labels are not their device names. Writing and reading back gives the same
matrix (the tests check it on every shipped example).

>>> from commlab.topology.model import Gpu, Topology
>>> print(format_matrix(Topology(gpus=(Gpu(0), Gpu(1)), matrix=(("X", "PHB"), ("PHB", "X")))))
        GPU0    GPU1
GPU0     X      PHB
GPU1    PHB      X
"""
from __future__ import annotations

from commlab.topology.model import LEGEND, Topology, nvlink_count


def format_matrix(topo: Topology, legend: bool = False) -> str:
    """The matrix aligned like nvidia-smi's; ``legend=True`` appends what each relation in it means."""
    if topo.empty:
        return f"(no GPUs: {topo.reason or 'nothing to show'})"
    extras = _extra_columns(topo)
    header = [""] + [gpu.label for gpu in topo.gpus] + [nic.label for nic in topo.nics] + [n for n, _ in extras]
    lines = ["\t".join(header).rstrip()]
    for i, gpu in enumerate(topo.gpus):
        cells = [" X " if cell == "X" else cell for cell in topo.matrix[i]]
        cells += [nic.relations[i] for nic in topo.nics] + [values[i] for _, values in extras]
        lines.append("\t".join([gpu.label] + cells).rstrip())
    out = [line.expandtabs(8).rstrip() for line in lines]
    if legend:
        out += ["", "Legend:", ""] + [f"  {key:<4} = {text}" for key, text in _legend(topo)]
    if any(nic.name != nic.label for nic in topo.nics):
        out += ["", "NIC Legend:", ""] + [f"  {nic.label}: {nic.name}" for nic in topo.nics]
    return "\n".join(out)


def _extra_columns(topo: Topology) -> list[tuple[str, list[str]]]:
    columns = []
    affinity = [gpu.cpu_affinity or "N/A" for gpu in topo.gpus]
    numa = ["N/A" if gpu.numa_node is None else str(gpu.numa_node) for gpu in topo.gpus]
    if any(gpu.cpu_affinity for gpu in topo.gpus):
        columns.append(("CPU Affinity", affinity))
    if any(gpu.numa_node is not None for gpu in topo.gpus):
        columns.append(("NUMA Affinity", numa))
    return columns


def _legend(topo: Topology) -> list[tuple[str, str]]:
    present = {cell for row in topo.matrix for cell in row}
    present |= {cell for nic in topo.nics for cell in nic.relations}
    keys = [key for key in LEGEND if key in present or (key == "NV#" and any(map(nvlink_count, present)))]
    return [(key, LEGEND[key]) for key in keys]
