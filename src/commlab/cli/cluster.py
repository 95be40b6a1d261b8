"""``commlab cluster list | show PRESET | cost OP | export``: GPU clusters and what collectives cost on them.

  commlab cluster list [--json]
  commlab cluster show PRESET [--json]
  commlab cluster cost OP --nbytes SIZE --preset PRESET --nodes N [--algo ALGO|all] [--calibrate-from SMALL_LOG]
                       [--json]
  commlab cluster export --format astra-sim PRESET [--out DIR] [--nodes N] [--algo ALGO]

``cost`` times OP (all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, scatter, gather) of
SIZE bytes (nccl-tests' size column) on N nodes of the preset with each algorithm (``ring``, ``tree``,
``nvls-tree``, ``nvls-ring``, ``collnet-direct``, ``collnet-chain``, ``nvls-sharp``, ``rabenseifner``, ``pat``,
``flat-ring``, ``direct``; ``all`` by default); ``--json`` gives per algorithm ``time_us``, ``busbw_GBps`` and
``bottleneck`` ("level: link"), or ``why`` it cannot run there. ``--calibrate-from SMALL_LOG`` (a 1- or 2-node
nccl-tests run on the same cluster) fits what its NICs deliver, its network hop and its launch floor and adds NCCL's
pick timed with them ("calibrated": the fitted quantities with their units, the time, the error band of its kind).
``export`` writes the network and system files
ASTRA-sim's analytical backend reads for the same cluster.
"""
from __future__ import annotations

import argparse

from commlab.cli._common import print_json


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("cluster", help="GPU cluster presets, collective cost per algorithm at scale, ASTRA-sim export",
                       description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    ls = verbs.add_parser("list", help="the cluster presets")
    ls.add_argument("--json", action="store_true", help="print JSON to stdout")
    show = verbs.add_parser("show", help="one preset: nodes, NICs, fabric, sources")
    show.add_argument("preset", metavar="PRESET")
    show.add_argument("--json", action="store_true", help="print JSON to stdout")
    cost = verbs.add_parser("cost", help="time, busbw and bottleneck of a collective per algorithm")
    cost.add_argument("op", metavar="OP", help="all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                                               "all_to_all, scatter, gather")
    cost.add_argument("--nbytes", required=True, metavar="SIZE", help="nccl-tests' size: 1G, 64M, 14GB, ...")
    cost.add_argument("--preset", required=True, metavar="PRESET", help="a cluster preset (commlab cluster list)")
    cost.add_argument("--nodes", required=True, metavar="N", help="number of nodes")
    cost.add_argument("--algo", default="all", metavar="ALGO", help="an algorithm, a comma list, or all (default)")
    cost.add_argument("--calibrate-from", default=None, metavar="SMALL_LOG", dest="calibrate_from",
                      help="calibrate NCCL's pick on a 1- or 2-node nccl-tests run of this cluster")
    cost.add_argument("--json", action="store_true", help="print JSON to stdout")
    export = verbs.add_parser("export", help="write the cluster as a simulator's input files")
    export.add_argument("preset", metavar="PRESET")
    export.add_argument("--format", required=True, metavar="FORMAT", help="astra-sim")
    export.add_argument("--out", default=None, metavar="DIR", help="folder to write (default ./<preset>-astra-sim)")
    export.add_argument("--nodes", default=None, metavar="N", help="number of nodes (default: the preset's)")
    export.add_argument("--algo", default="ring", metavar="ALGO",
                        help="all-reduce algorithm per dimension: ring, tree, rabenseifner, flat-ring")
    return p


def _list(args) -> int:
    from commlab.cluster import presets

    items = presets()
    if args.json:
        print_json({"presets": [c.to_json() for c in items]})
        return 0
    print(f"{'preset':<18s} {'GPUs/node':>9s} {'NICs/node':>14s} {'net':>6s} {'max nodes':>9s}  fabric")
    for c in items:
        nics = f"{c.nics_per_node} x {c.nic_Gbps:g}G"
        print(f"{c.name:<18s} {c.gpus_per_node:>9d} {nics:>14s} {c.net:>6s} {c.max_nodes:>9d}  {c.fabric.describe()}")
    return 0


def _show(args) -> int:
    from commlab.cluster import preset

    c = preset(args.preset)
    if args.json:
        print_json(c.to_json())
    else:
        print("\n".join(c.describe()))
    return 0


def _cost_json(result) -> dict:
    algos = []
    for name, a in result.algos.items():
        item = {"algo": name, "available": a.available, "why": a.why, "time_us": None, "algbw_GBps": None,
                "busbw_GBps": None, "bottleneck": None, "bottleneck_level": None}
        if a.available:
            item.update(time_us=float(a.time_s[0] * 1e6), algbw_GBps=float(a.algbw_GBps[0]),
                        busbw_GBps=float(a.busbw_GBps[0]), bottleneck=a.bottleneck[0],
                        bottleneck_level=a.bottleneck_levels()[0])
        algos.append(item)
    c = result.cluster
    return {"op": result.op, "nbytes": int(result.nbytes[0]), "preset": c.name, "nodes": result.nodes,
            "n_ranks": result.n_ranks, "machine": result.shape.machine.describe(),
            "nccl_pick": result.nccl_pick[0] if result.nccl_pick else None,
            "fastest": result.fastest()[0] if result.available() else None, "algos": algos}


def _cost(args) -> int:
    from commlab.cli._common import nbytes_arg
    from commlab.cluster import cluster_cost, preset
    from commlab.errors import CommlabError
    from commlab.units import format_nbytes, format_time

    nbytes = nbytes_arg(args.nbytes)
    if nbytes <= 0:
        raise CommlabError(f"--nbytes must be a size > 0, got {args.nbytes!r}")
    c = preset(args.preset)
    result = cluster_cost(args.op, [nbytes], c, c.check_nodes(args.nodes), args.algo)
    calibrated = _calibrated(args, result, nbytes) if getattr(args, "calibrate_from", None) else None
    if args.json:
        out = _cost_json(result)
        if calibrated is not None:
            out["calibrated"] = calibrated
        print_json(out)
        return 0
    shown = format_nbytes(nbytes, binary=nbytes % 1024 == 0)
    print(f"{result.op} of {shown} on {result.nodes} nodes of {c.name} ({result.n_ranks} GPUs)")
    print(f"  {'algorithm':<15s} {'time':>10s} {'busbw GB/s':>11s}  bottleneck")
    for name, a in result.algos.items():
        if (busbw_GBps := a.busbw_GBps) is not None:
            print(f"  {name:<15s} {format_time(float(a.ran_time_s[0])):>10s} {float(busbw_GBps[0]):>11.1f}  "
                  f"{a.ran_bottleneck[0]}")
        else:
            print(f"  {name:<15s} {'-':>10s} {'-':>11s}  cannot run: {a.why}")
    if result.nccl_pick:
        print(f"NCCL's default pick: {result.nccl_pick[0]}; fastest here: {result.fastest()[0]}")
    if calibrated is not None:
        fitted = ", ".join(f"{q['name']} = {q['value']:g} {q['unit']}" for q in calibrated["calibration"]["quantities"]
                           if q["fitted"]) or "nothing fitted"
        print(f"calibrated on {calibrated['calibration']['from']} ({fitted}): NCCL's pick {calibrated['pair']} "
              f"{format_time(calibrated['time_us'] * 1e-6)} on the preset's machine (the fabric above is not "
              f"calibrated)")
        for note in calibrated["notes"]:
            print(f"  note: {note}")
    return 0


def _calibrated(args, result, nbytes: float) -> dict:
    """NCCL's pick on the preset's machine at these nodes, calibrated on ``--calibrate-from``: its time, the fit,
    what differed and the error band of its kind (:mod:`commlab.scorecard.calibration`)."""
    from commlab.errors import CommlabError
    from commlab.scorecard.calibration import read_small_run
    from commlab.scorecard.error_bands import band_json
    from commlab.tuner.calibrate import check_pair, predict_calibrated
    from commlab.tuner.generations import generation_for
    from commlab.tuner.settings import TUNED_OPS

    if result.op not in TUNED_OPS:
        raise CommlabError(f"--calibrate-from calibrates NCCL's tuned collectives ({', '.join(TUNED_OPS)}); "
                           f"{result.op} is grouped send/recv")
    machine = result.shape.machine
    small = read_small_run(args.calibrate_from, machine)
    choice = generation_for(None)
    check = check_pair(small.fit.machine, small.fit.collective, small.choice, machine, result.op, choice)
    if not check.went_on:
        raise CommlabError(f"--calibrate-from {small.fit.source}: {check.note()}")
    p = predict_calibrated(result.op, [nbytes], machine, small.fit.calibration, 1, choice.generation)
    band = band_json(machine, choice.generation.name, [nbytes])
    return {"calibration": small.to_json(check), "pair": p.pairs()[0], "time_us": float(p.time_s[0] * 1e6),
            "error_band": band, "notes": ([check.note()] if check.note() else []) + band["outside_checked"]}


def _export(args) -> int:
    from pathlib import Path

    from commlab.cluster import Shape, preset
    from commlab.cluster.astra import export
    from commlab.errors import CommlabError

    if args.format.strip().lower() != "astra-sim":
        raise CommlabError(f"unknown --format {args.format!r}; the formats are: astra-sim")
    c = preset(args.preset)
    shape = Shape.of(c, c.default_nodes if args.nodes is None else args.nodes)
    out = Path(args.out) if args.out else Path(f"{c.name}-astra-sim")
    for path in export(shape, out, args.algo):
        print(f"wrote {path}")
    return 0


def run(args) -> int:
    verbs = {"list": _list, "show": _show, "cost": _cost, "export": _export}
    if getattr(args, "verb", None) not in verbs:
        from commlab.errors import CommlabError

        raise CommlabError("say what to do: commlab cluster list | show PRESET | cost OP ... | export ...")
    return verbs[args.verb](args)
