"""The NCCL debug and multi-node lab's script: every rank says where it runs, the ranks check an all_reduce and
time a small one, and rank 0 prints the group; with --nccl-debug-dir, NCCL writes its NCCL_DEBUG=INFO log there
and rank 0 summarises it with commlab.nccl.read_debug_log and with your answer_log_questions
(labs/nccl_debug_multinode.ipynb). Your functions come from labs/mine/nccl_debug_multinode.py and are checked
first (else the reference; the first line says which, ``--reference`` forces it).

On one machine, without a launcher (gloo on CPU; NCCL with a GPU per rank):

    python labs/scripts/nccl_debug_multinode.py --ranks 2

Two "nodes" on one machine, as the lab runs it (static rendezvous: node 0 hosts it at the endpoint):

    torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 --rdzv-endpoint 127.0.0.1:29511 \\
        labs/scripts/nccl_debug_multinode.py &
    torchrun --nnodes 2 --node-rank 1 --nproc-per-node 1 --rdzv-endpoint 127.0.0.1:29511 \\
        labs/scripts/nccl_debug_multinode.py

A real cluster, the same command on every node (elastic c10d rendezvous on the first node):

    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-id JOB --rdzv-backend c10d --rdzv-endpoint NODE0:29500 \\
        labs/scripts/nccl_debug_multinode.py --nccl-debug-dir /shared/nccl-logs
"""
from __future__ import annotations

import argparse
import os
import sys

from commlab.labs import script

DEFAULT_RANKS = 2


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nccl-debug-dir", default=None, metavar="DIR",
                   help="set NCCL_DEBUG=INFO and write each process's NCCL log to DIR (read on NCCL only)")
    p.add_argument("--size", default="4M", help="bytes of the timed all_reduce, K/M binary (default 4M)")
    script.add_launch_options(p, DEFAULT_RANKS, default_timeout_s=120.0)
    return p.parse_args(argv)


def prepare(args: argparse.Namespace) -> tuple:
    """The worker's argument (the timed size, checked); NCCL's debug variables set before any group exists."""
    from commlab.errors import CommlabError
    from commlab.units import parse_nbytes

    nbytes = parse_nbytes(args.size)
    if nbytes < 4 or nbytes % 4:
        raise CommlabError(f"--size must be a positive multiple of 4 bytes, got {args.size!r}")
    if args.nccl_debug_dir is not None:
        os.makedirs(args.nccl_debug_dir, exist_ok=True)
        os.environ.update(debug_environment(args.nccl_debug_dir))
    return (nbytes,)


def debug_environment(directory: str) -> dict:
    """The variables that make NCCL write its INFO log to one file per process in ``directory``. NCCL reads them
    when it creates a communicator, so they must be set before the process group makes its first NCCL call."""
    return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,GRAPH,ENV,NET",
            "NCCL_DEBUG_FILE": os.path.join(os.path.abspath(directory), "nccl.%h.%p.log")}


def where_am_i(rank: int, n_ranks: int) -> dict:
    """This process's place: host, pid, global and local rank, node rank (torchrun's GROUP_RANK), backend."""
    import socket

    import torch.distributed as dist

    return {"rank": rank, "n_ranks": n_ranks, "host": socket.gethostname(), "pid": os.getpid(),
            "local_rank": int(os.environ.get("LOCAL_RANK", rank)), "node": int(os.environ.get("GROUP_RANK", 0)),
            "backend": str(dist.get_backend()),
            "master": f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"}


def worker(rank: int, n_ranks: int, code, nbytes: int):
    """Every rank: an all_reduce checked against the closed form, a timed one, the group's places gathered."""
    import time

    import torch
    import torch.distributed as dist

    on_gpu = dist.get_backend() == "nccl"
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
    x = torch.full((4,), float(rank + 1), device=device)
    dist.all_reduce(x)
    ok = bool(torch.all(x == n_ranks * (n_ranks + 1) / 2))    # 1 + 2 + ... + N, exact in float32
    big = torch.ones(nbytes // 4, device=device)
    dist.all_reduce(big)
    if on_gpu:
        dist.barrier(device_ids=[device.index])
    else:
        dist.barrier()
    start = time.perf_counter()
    dist.all_reduce(big)
    if on_gpu:
        torch.cuda.synchronize(device)
    t_s = time.perf_counter() - start
    me = {**where_am_i(rank, n_ranks), "all_reduce_ok": ok, "t_s": t_s}
    group: list = [None] * n_ranks
    dist.all_gather_object(group, me)
    print(f"rank {rank} of {n_ranks} (node {me['node']}, local rank {me['local_rank']}) on {me['host']} pid "
          f"{me['pid']}: all_reduce {'correct' if ok else 'WRONG'}", flush=True)
    if not all(g["all_reduce_ok"] for g in group):
        wrong = [g["rank"] for g in group if not g["all_reduce_ok"]]
        raise RuntimeError(f"all_reduce gave a wrong sum on ranks {wrong}")
    return group if rank == 0 else None


def group_lines(group: list[dict], nbytes: int) -> list[str]:
    from commlab.units import format_nbytes, format_time

    first = group[0]
    lines = [f"{first['n_ranks']} ranks on {len({g['host'] for g in group})} host(s), {first['backend']}, "
             f"rendezvous at {first['master']}",
             f"{'rank':>5s}{'node':>6s}{'local':>7s}  {'host':20s}{'pid':>8s}{'all_reduce':>12s}"]
    for g in group:
        lines.append(f"{g['rank']:>5d}{g['node']:>6d}{g['local_rank']:>7d}  {g['host'][:20]:20s}{g['pid']:>8d}"
                     f"{'correct' if g['all_reduce_ok'] else 'WRONG':>12s}")
    slowest = max(g["t_s"] for g in group)
    lines.append(f"all_reduce of {format_nbytes(nbytes, binary=True)}: {format_time(slowest)} (slowest rank, one call)")
    return lines


def debug_lines(directory: str | None, backend: str, code=None) -> list[str]:
    """What NCCL's logs in ``directory`` say, read with commlab.nccl.read_debug_log (and ``code``'s
    answer_log_questions)."""
    from pathlib import Path

    from commlab.nccl import read_debug_log

    if directory is None:
        return []
    if backend != "nccl":
        return [f"no NCCL log: this run used {backend}, and NCCL_DEBUG only concerns NCCL"]
    files = sorted(Path(directory).glob("nccl.*.log"))
    text = "\n".join(f.read_text(errors="replace") for f in files)
    log = read_debug_log(text)
    answers = [f"  your answer_log_questions: {code.function('answer_log_questions')(text)}"] if code else []
    links = sorted({f"{c.src}->{c.dst} via {c.transport}" for c in log.connections})
    return [f"NCCL logs: {len(files)} file(s) in {directory}; version {log.nccl_version}, {log.n_ranks} ranks, "
            f"{log.n_channels} channels, transports {log.transports or 'none (one rank per communicator?)'}",
            *[f"  {link}" for link in links[:8]], *[f"  WARN {w}" for w in log.warnings[:5]], *answers]


def report(group: list[dict], args: argparse.Namespace, code=None) -> str:
    """What rank 0 prints: the group's places and timing, then what NCCL's logs say."""
    from commlab.units import parse_nbytes

    nbytes = parse_nbytes(args.size)                       # checked by prepare
    return "\n".join(group_lines(group, nbytes) + debug_lines(args.nccl_debug_dir, group[0]["backend"], code))


def main(argv=None) -> int:
    args = parse_args(argv)
    return script.run_script("nccl_debug_multinode.py", args, worker, prepare, lab="nccl_debug_multinode",
                             default_n_ranks=DEFAULT_RANKS, report=lambda group, code: report(group, args, code))


if __name__ == "__main__":
    sys.exit(main())
