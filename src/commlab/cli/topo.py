"""``commlab topo [--from-file FILE | --example NAME] [--json]``: a machine's GPU topology and what it means.

Without a source it reads this machine through NVML (pynvml); where there is no GPU it says why and names the
shipped examples. ``--from-file`` reads the saved output of ``nvidia-smi topo -m`` (``-`` for standard input).
Prints the matrix aligned like nvidia-smi, the NVLink groups, a ring order with its busbw bound, and advice.
"""
from __future__ import annotations

import argparse

from commlab.cli._common import read_input


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "topo", help="GPU topology (this machine, a saved `nvidia-smi topo -m`, or an example) and advice",
        description=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--from-file", metavar="FILE", default=None,
                        help="text of `nvidia-smi topo -m`, or - for standard input")
    source.add_argument("--example", metavar="NAME", default=None,
                        help="a shipped machine: a100-sxm-8, a40-pcie-8, h100-sxm-8, pcie-4gpu, v100-sxm2-8")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return p


def _load(args):
    from commlab import topology

    if args.example is not None:
        return topology.example(args.example)
    if args.from_file is not None:
        return topology.parse_topo_text(read_input(args.from_file, "FILE"))
    return topology.read()


def _as_json(topo, advice) -> dict:
    out = topo.to_json()
    out.update(nvlink_groups=[list(g) for g in advice.nvlink_groups], ring_order=list(advice.ring_order),
               ring_busbw_GBps=advice.ring_busbw_GBps, ring_rule=advice.ring_rule, tp_size=advice.tp_size,
               advice=list(advice.sentences), notes=list(topo.notes))
    return out


def _as_text(topo, advice) -> str:
    from commlab.topology import format_matrix

    if topo.empty:
        from commlab.topology import example_names

        return (f"No GPU topology from {topo.source}: {topo.reason}.\n"
                f"Try an example: commlab topo --example NAME (NAME: {', '.join(example_names())}),\n"
                "or save `nvidia-smi topo -m` on a GPU machine and run commlab topo --from-file FILE.")
    head = [f"source: {topo.source}"] + list(topo.notes)
    groups = " ".join("{" + ",".join(map(str, g)) + "}" for g in advice.nvlink_groups)
    body = [format_matrix(topo, legend=True), "", f"NVLink groups: {groups}",
            f"ring order:    {' '.join(map(str, advice.ring_order))}", "", advice.to_text()]
    return "\n".join(head + [""] + body)


def run(args) -> int:
    from commlab.topology import advice as make_advice

    topo = _load(args)
    advice = make_advice(topo)
    if args.json:
        from commlab.cli._common import print_json

        print_json(_as_json(topo, advice))
    else:
        print(_as_text(topo, advice))
    return 0
