"""``commlab cost OP --nbytes SIZE --ranks N --link NAME [--algo ...] [--json]``: alpha-beta time of a collective.

``--json`` gives ``op``, ``algo``, ``n_ranks``, ``nbytes``, ``link``, ``time_s``, ``algbw_GBps``, ``busbw_GBps``.
"""
from __future__ import annotations

from commlab.cli._common import print_json

ALGOS = ("ring", "tree", "double-tree", "naive", "pipelined-tree", "recursive-doubling")


def add_parser(sub):
    p = sub.add_parser("cost", help="alpha-beta time, algbw and busbw of a collective on a link",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("op", metavar="OP", help="all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                                           "all_to_all, gather, scatter, sendrecv")
    p.add_argument("--nbytes", required=True, help="the nccl-tests `size`: 64M, 14GB, 1.5GiB, ...")
    p.add_argument("--ranks", required=True, help="number of ranks N")
    p.add_argument("--link", required=True, help="catalogue link: nvlink4, pcie5, ib-ndr, ...")
    p.add_argument("--algo", default="ring", help="all_reduce algorithm: " + ", ".join(ALGOS))
    p.add_argument("--json", action="store_true", help="print a JSON object")
    return p


def echo_nbytes(nbytes: int) -> str:
    """The size as the reader most likely wrote it, exactly: in binary units when it is a whole number of
    KiB/MiB/GiB/TiB (nccl-tests' and commlab's ``1G`` is 2**30 bytes), else in decimal ones, with the byte
    count when neither is exact.

    >>> echo_nbytes(2**30), echo_nbytes(14 * 10**9), echo_nbytes(1536), echo_nbytes(1000003)
    ('1 GiB', '14 GB', '1.5 KiB', '1 MB (1,000,003 bytes)')
    """
    from commlab.units import format_nbytes

    for binary in (True, False):
        base = 1024 if binary else 1000
        scale = next((base**power for power in (4, 3, 2, 1) if nbytes >= base**power), 0)
        if scale and (nbytes * 4) % scale == 0:  # whole or quarter units: 1 GiB, 1.5 KiB, 2.25 GB
            return format_nbytes(nbytes, binary=binary)
    return format_nbytes(nbytes) if nbytes < 1000 else f"{format_nbytes(nbytes)} ({nbytes:,} bytes)"


def run(args) -> int:
    from commlab import collectives, cost, hardware
    from commlab.cli._common import nbytes_arg, ranks_arg
    from commlab.errors import check_choice
    from commlab.units import format_bandwidth, format_time

    op = collectives.canonical(args.op)
    link = hardware.link(args.link)
    check_choice("algorithm", args.algo, ALGOS)
    n_ranks, nbytes = ranks_arg(args.ranks), nbytes_arg(args.nbytes)
    t_s = float(cost.collective_time_s(op, nbytes, n_ranks, link, algo=args.algo))
    algbw = float(cost.algbw_GBps(nbytes, t_s)) if t_s > 0 else 0.0
    busbw = algbw * collectives.busbw_factor(op, n_ranks)
    algo = args.algo if op == "all_reduce" else "ring/chain"
    if args.json:
        print_json({"op": op, "algo": algo, "n_ranks": n_ranks, "nbytes": nbytes, "link": link.name,
                    "time_s": t_s, "algbw_GBps": algbw, "busbw_GBps": busbw})
        return 0
    print(f"{op} ({algo}) of {echo_nbytes(nbytes)} over {n_ranks} ranks on {link.title} "
          f"(alpha {format_time(link.latency_s)}, {format_bandwidth(link.unidir_Bps)} one way)")
    print(f"  time  {format_time(t_s)}")
    print(f"  algbw {algbw:.2f} GB/s   busbw {busbw:.2f} GB/s   ({100 * busbw / link.unidir_GBps:.0f}% of the link)")
    return 0
