"""Real machines shipped with commlab, for readers without GPUs (chapter 01, the topology lab).

Each example is the published text of ``nvidia-smi topo -m`` in ``commlab/data/topology/<name>.txt``. Comment
lines before it say where it was published (``# source:``), what the machine is (``# title:``), and what the
text itself cannot say: the GPU model (``# gpu_name:``) and its PCIe generation (``# pcie_gen:``).

>>> sorted(examples())
['a100-sxm-8', 'a40-pcie-8', 'h100-sxm-8', 'pcie-4gpu', 'v100-sxm2-8']
>>> example("h100-sxm-8").relation(0, 7)
'NV18'
"""
from __future__ import annotations

import dataclasses
import re
from importlib import resources

from commlab.errors import CommlabError
from commlab.topology.model import Topology
from commlab.topology.parse import parse_topo_text

_META_RE = re.compile(r"^#\s*(source|title|gpu_name|pcie_gen):\s*(.*?)\s*$")


def _folder():
    return resources.files("commlab").joinpath("data").joinpath("topology")


def example_names() -> tuple[str, ...]:
    """The shipped examples, sorted."""
    return tuple(sorted(p.name[:-4] for p in _folder().iterdir() if p.name.endswith(".txt")))


def example(name: str) -> Topology:
    """One shipped example; an unknown name lists the known ones."""
    names = example_names()
    if name not in names:
        raise CommlabError(f"unknown example topology {name!r}; known examples: {', '.join(names)}")
    text = _folder().joinpath(f"{name}.txt").read_text(encoding="utf-8")
    return _with_metadata(parse_topo_text(text), _metadata(text), name)


def examples() -> dict[str, Topology]:
    """Every shipped example by name."""
    return {name: example(name) for name in example_names()}


def _metadata(text: str) -> dict[str, str]:
    found = (_META_RE.match(line) for line in text.splitlines() if line.startswith("#"))
    return {m.group(1): m.group(2) for m in found if m}


def _with_metadata(topo: Topology, meta: dict[str, str], name: str) -> Topology:
    gen = int(meta["pcie_gen"]) if meta.get("pcie_gen", "").isdigit() else None
    gpus = tuple(dataclasses.replace(gpu, name=meta.get("gpu_name"), pcie_gen_max=gen) for gpu in topo.gpus)
    notes = tuple(f"{key}: {meta[key]}" for key in ("title", "source") if key in meta)
    return dataclasses.replace(topo, gpus=gpus, source=f"example: {name}", notes=notes)
