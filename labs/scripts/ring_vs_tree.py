"""The ring vs tree lab as a script: time commlab.p2p's ring and binary-tree all-reduce (isend/irecv) and
dist.all_reduce over a size sweep, check every result, fit this machine's alpha and B from the ring's times,
predict where ring and tree cross on these ranks, feed the fitted alpha and B into the models for 8 to 1024
ranks, and set beside it what NCCL's own tuner (commlab.tuner.predict) picks at each size on real machines: one DGX
H100 and 16 and 128 of them over NDR InfiniBand, with and without NVLS, or the machine ``--machine`` describes
(labs/ring_vs_tree.ipynb). The crossovers use your functions from labs/mine/ring_vs_tree.py (else the
reference; the first line says which, ``--reference`` forces it).

On one machine, without a launcher (gloo on CPU; NCCL with a GPU per rank):

    python labs/scripts/ring_vs_tree.py --ranks 8
    python labs/scripts/ring_vs_tree.py --ranks 8 --sizes 1K,16K,256K,1M,4M --repeats 10

Under torchrun; on GPUs, NCCL_ALGO chooses NCCL's own algorithm for the dist.all_reduce column (it must be set
before the process group is created, so set it on the command line; NCCL needs one GPU per rank):

    torchrun --nproc-per-node 8 labs/scripts/ring_vs_tree.py
    NCCL_ALGO=Ring torchrun --nproc-per-node 8 labs/scripts/ring_vs_tree.py --sizes 4K,64K,1M,16M,256M
    NCCL_ALGO=Tree torchrun --nproc-per-node 8 labs/scripts/ring_vs_tree.py --sizes 4K,64K,1M,16M,256M \\
        --machine gpu=h100,gpus_per_node=8
"""
from __future__ import annotations

import argparse
import math
import sys

from commlab.labs import script

DEFAULT_RANKS = 8
#: The rank counts the fitted alpha and B are fed into (the notebook's table).
SCALE_RANKS = (8, 16, 64, 128, 256, 1024)
#: The machines of the notebook's section 4: DGX H100 nodes (commlab.cluster's dgx-h100-ndr preset).
DGX_NODES = (1, 16, 128)
#: The sizes NCCL's picks are shown for: 1 KiB .. 16 GiB.
PICK_SIZES = tuple(2**k for k in range(10, 35))
DEFAULT_SIZES = "1K,16K,256K,1M,4M"
ALGOS = ("ring", "tree", "dist.all_reduce")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=DEFAULT_SIZES,
                   help=f"comma-separated sizes in bytes, K/M/G binary (default {DEFAULT_SIZES})")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per size and algorithm (default 5)")
    p.add_argument("--machine", default=None,
                   help="show what NCCL's tuner picks on this machine (commlab.tuner.machine.parse_machine's fields, "
                        "e.g. gpu=h100,gpus_per_node=8,nodes=4,nics_per_node=8,nic_Gbps=400); default: DGX H100 nodes")
    script.add_launch_options(p, DEFAULT_RANKS, default_timeout_s=300.0)
    return p.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple:
    """The worker's arguments (sizes, repeats), checked; ``--machine`` is checked here too, before any rank
    starts."""
    from commlab.tuner.machine import parse_machine
    from commlab.errors import CommlabError

    sizes = parse_sizes(args.sizes)
    if args.repeats < 1:
        raise CommlabError(f"--repeats must be at least 1, got {args.repeats}")
    if args.machine is not None:
        parse_machine(args.machine)
    return sizes, args.repeats


def parse_sizes(text: str) -> list[int]:
    """"1K,64K" -> [1024, 65536]; every size a positive multiple of 4 bytes (float32 elements)."""
    from commlab.errors import CommlabError
    from commlab.units import parse_nbytes

    sizes = [parse_nbytes(part.strip()) for part in text.split(",") if part.strip()]
    if not sizes or any(s <= 0 or s % 4 for s in sizes):
        raise CommlabError(f"--sizes must be positive multiples of 4 bytes (float32), got {text!r}")
    return sorted(set(sizes))


def _mean_time_s(call, repeats: int, device) -> float:
    import time

    import torch
    import torch.distributed as dist

    call()                                                  # warm-up
    if device.type == "cuda":
        dist.barrier(device_ids=[device.index])
    else:
        dist.barrier()
    start = time.perf_counter()
    for _ in range(repeats):
        call()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / repeats


def worker(rank: int, n_ranks: int, code, sizes: list[int], repeats: int):
    """Every rank: per size, check ring and tree against dist.all_reduce and time the three; rank 0 returns
    {"backend", "n_ranks", "nccl_algo", "n_gpus", "nccl_built", "local_ranks", "rows": [(nbytes, {algo: slowest
    rank's mean time})]}."""
    import os

    import torch
    import torch.distributed as dist

    from commlab import p2p

    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    rows = []
    for nbytes in sizes:
        gen = torch.Generator().manual_seed(rank * 7919 + nbytes)
        x = torch.randint(-100, 101, (nbytes // 4,), generator=gen).to(torch.float32).to(device)  # exact sums
        want = x.clone()
        dist.all_reduce(want)
        for name, got in (("ring", p2p.ring_all_reduce(x)), ("tree", p2p.tree_all_reduce(x))):
            if not torch.equal(got, want):
                raise RuntimeError(f"rank {rank}: {name} all-reduce of {nbytes} bytes differs from dist.all_reduce")
        calls = {"ring": lambda x=x: p2p.ring_all_reduce(x), "tree": lambda x=x: p2p.tree_all_reduce(x),
                 "dist.all_reduce": lambda x=x: dist.all_reduce(x.clone())}
        times = torch.tensor([_mean_time_s(calls[a], repeats, device) for a in ALGOS], dtype=torch.float64,
                             device=device)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)        # a collective ends when its slowest rank does
        rows.append((nbytes, dict(zip(ALGOS, times.tolist()))))
    if rank != 0:
        return None
    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return {"backend": str(dist.get_backend()), "n_ranks": n_ranks, "nccl_algo": os.environ.get("NCCL_ALGO"),
            "n_gpus": n_gpus, "nccl_built": dist.is_nccl_available(),
            "local_ranks": int(os.environ.get("LOCAL_WORLD_SIZE", n_ranks)), "rows": rows}


def fit_link(rows, n_ranks: int) -> tuple[float, float]:
    """(alpha_s, bw_Bps) per hop from the ring's times: t = 2(N-1) alpha + 2(N-1)/(N B) S is a line in S."""
    from commlab.cost import fit_alpha_beta

    fit = fit_alpha_beta([s for s, _ in rows], [t["ring"] for _, t in rows])
    steps = 2 * (n_ranks - 1)
    bw_Bps = math.inf if fit.beta_s_per_byte == 0 else steps / (n_ranks * fit.beta_s_per_byte)
    return fit.alpha_s / steps, bw_Bps


def measured_against_predicted(rows, predicted: float) -> str:
    """Whether the measured ring and tree times switch where the model predicts; never more than they show."""
    from commlab.units import format_nbytes

    sizes = [float(nbytes) for nbytes, _ in rows]
    ring_faster = [t["ring"] < t["tree"] for _, t in rows]
    switch = [i for i in range(1, len(rows)) if ring_faster[i] and not ring_faster[i - 1]]
    if not switch:
        winner = "the ring" if all(ring_faster) else "the tree" if not any(ring_faster) else "neither consistently"
        return (f"measured: {winner} faster at every size tried, no switch: the prediction is not borne out here "
                "(on CPU ranks sharing cores a step costs the wait for a process, not bytes on a link)")
    low, high = sizes[switch[0] - 1], sizes[switch[0]]
    inside = low <= predicted <= high
    return (f"measured: the ring takes over between {format_nbytes(low, binary=True)} and "
            f"{format_nbytes(high, binary=True)}; the predicted crossover lies "
            + ("inside that interval" if inside else "outside it: the model and this machine disagree"))


def crossover_lines(rows, n_ranks: int, code) -> list[str]:
    """This machine's alpha and B from the ring's times, and the crossover ``code``'s model predicts, here and
    for SCALE_RANKS ranks."""
    from commlab import cost
    from commlab.units import format_bandwidth, format_nbytes, format_time

    predict_crossover_nbytes = code.function("predict_crossover_nbytes")
    alpha_s, bw_Bps = fit_link(rows, n_ranks)
    bw_text = format_bandwidth(bw_Bps) if math.isfinite(bw_Bps) else "infinite"
    lines = [f"fitted from the ring's times: alpha = {format_time(alpha_s)} per step, B = {bw_text} per link"]
    if not (0 < alpha_s and math.isfinite(bw_Bps)):
        return lines + ["the fit found no latency or no bandwidth term (too few sizes, or times that barely grow "
                        "with the size, as on CPU ranks sharing cores): no crossover predicted"]
    predicted = predict_crossover_nbytes(n_ranks, alpha_s, bw_Bps)
    model = cost.crossover_nbytes("ring", "tree", n_ranks, alpha_s, bw_Bps)
    if math.isnan(predicted):
        return lines + [f"predicted: ring and tree never cross on {n_ranks} ranks (the ring is never slower; "
                        f"commlab.cost.crossover_nbytes gives {model})"]
    lines.append(f"predicted ring = tree at {format_nbytes(predicted)} (commlab.cost.crossover_nbytes: "
                 f"{format_nbytes(model)})")
    lines.append(measured_against_predicted(rows, predicted))
    at_scale = ", ".join(f"N={n}: {format_nbytes(predict_crossover_nbytes(n, alpha_s, bw_Bps))}" for n in SCALE_RANKS)
    return lines + [f"the same link for more ranks (the tree is faster below): {at_scale}"]


def machines(desc: str | None) -> list[tuple[str, object, object]]:
    """(label, Machine, the hardware link the plain model uses or None): ``desc``'s machine, else the DGX H100
    nodes of the notebook's section 4 with NVLS on and off."""
    import dataclasses

    from commlab import cluster, hardware
    from commlab.tuner.machine import parse_machine

    if desc is not None:
        machine = parse_machine(desc)
        return [(machine.describe(), machine, None)]
    dgx = cluster.preset("dgx-h100-ndr")
    out = []
    for nodes in DGX_NODES:
        for nvls in (True, False):
            machine = dataclasses.replace(dgx.machine(nodes), nvls=nvls)
            link = hardware.link("nvlink4" if nodes == 1 else "ib-ndr")
            out.append((f"DGX H100 x {nodes} ({machine.n_ranks} GPUs), NVLS {'on' if nvls else 'off'}", machine, link))
    return out


def nccl_lines(code, desc: str | None = None) -> list[str]:
    """What NCCL's tuner picks at each size (first pair, then each switch), and, on the DGX H100 machines, where
    ``code``'s plain ring/tree crossover falls with the numbers of the link the traffic crosses."""
    from commlab.tuner.predict import predict
    from commlab.units import format_nbytes

    predict_crossover_nbytes = code.function("predict_crossover_nbytes")
    first, last = (format_nbytes(PICK_SIZES[i], binary=True) for i in (0, -1))
    lines = [f"what NCCL's tuner picks (commlab.tuner.predict.predict), all-reduce from {first} to {last}:"]
    for label, machine, link in machines(desc):
        p = predict("all_reduce", PICK_SIZES, machine)
        switches = [f"{new} from {format_nbytes(at, binary=True)}" for at, _, new in p.switches()]
        steps = ", ".join([p.pairs()[0]] + switches)
        plain = ""
        if link is not None:
            s_star = predict_crossover_nbytes(machine.n_ranks, link.latency_s, link.unidir_Bps)
            plain = f" | plain ring = tree at {format_nbytes(s_star)} ({link.name})"
        lines.append(f"  NCCL's tuner on {label}: {steps}{plain}")
    return lines


def algo_note(out: dict) -> list[str]:
    """What NCCL_ALGO did: nothing on gloo (and why), else which algorithm the dist.all_reduce column used."""
    if not out["nccl_algo"]:
        return []
    if out["backend"] == "nccl":
        return [f"the dist.all_reduce column ran NCCL with NCCL_ALGO={out['nccl_algo']}"]
    local, gpus = out.get("local_ranks", out["n_ranks"]), out.get("n_gpus", 0)
    why = ("this machine has no CUDA GPU" if gpus == 0 else "this torch is built without NCCL"
           if not out.get("nccl_built", True) else
           f"{local} ranks on {gpus} GPU(s) here, and NCCL refuses two ranks on one GPU" if gpus < local else
           "gloo was asked for (--backend)")
    return [f"NCCL_ALGO={out['nccl_algo']} had no effect: the ranks ran on {out['backend']}, not NCCL, which needs "
            f"one GPU per rank ({why})"]


def report(out: dict, code, machine: str | None = None) -> str:
    """The table of measured times, the predicted crossover, and what NCCL's tuner would pick."""
    from commlab.units import format_nbytes, format_time

    label = out["backend"] + (f", NCCL_ALGO={out['nccl_algo']}" if out["nccl_algo"] else "")
    lines = [f"all-reduce on {out['n_ranks']} ranks ({label}), mean time of one call, slowest rank:",
             f"{'size':>10s}" + "".join(f"{a:>17s}" for a in ALGOS) + f"{'faster of ring/tree':>21s}"]
    for nbytes, t in out["rows"]:
        faster = "ring" if t["ring"] < t["tree"] else "tree"
        lines.append(f"{format_nbytes(nbytes, binary=True):>10s}" + "".join(f"{format_time(t[a]):>17s}" for a in ALGOS)
                     + f"{faster:>21s}")
    lines += algo_note(out) + [""] + crossover_lines(out["rows"], out["n_ranks"], code) + [""]
    return "\n".join(lines + nccl_lines(code, machine))


def main(argv=None) -> int:
    args = parse_args(argv)
    return script.run_script("ring_vs_tree.py", args, worker, prepare, lab="ring_vs_tree",
                             default_n_ranks=DEFAULT_RANKS, report=lambda out, code: report(out, code, args.machine))


if __name__ == "__main__":
    sys.exit(main())
