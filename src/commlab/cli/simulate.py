"""``commlab simulate ALGO --ranks N [--nbytes SIZE] [--json]``: print a schedule step by step.

Text: one line per step listing its transfers. ``--json``: ``algorithm``, ``n_ranks``, ``steps`` (each a list
of ``{"src", "dst", "chunk", "reduce"}``), ``bytes_sent_per_rank`` (for ``--nbytes``, default 1M) and
``correct`` (the schedule's result equals the numpy reference on random data).
"""
from __future__ import annotations

import numpy as np

from commlab.cli._common import print_json


def add_parser(sub):
    from commlab.schedules import ALGORITHMS

    p = sub.add_parser("simulate", help="print an algorithm's schedule of transfers, step by step",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("algorithm", metavar="ALGO", help="one of: " + ", ".join(ALGORITHMS))
    p.add_argument("--ranks", required=True, help="number of ranks N (1 to 4096)")
    p.add_argument("--nbytes", default="1M", help="buffer size for bytes_sent_per_rank (default 1M = 1 MiB)")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    return p


def _correct(schedule) -> bool:
    from commlab.schedules import chunk_bounds, expected, run

    rng = np.random.default_rng(0)
    length = 3 * schedule.n_ranks + 1
    if schedule.collective == "all_gather":
        sizes = np.diff(chunk_bounds(length, schedule.n_ranks))
        inputs = [rng.normal(size=int(k)) for k in sizes]
    else:
        inputs = [rng.normal(size=length) for _ in range(schedule.n_ranks)]
    got = run(schedule, inputs, record=False).outputs
    return all(np.allclose(a, b) for a, b in zip(got, expected(schedule, inputs)))


def run(args) -> int:
    from commlab.cli._common import nbytes_arg, ranks_arg
    from commlab.schedules import build, bytes_sent_per_rank, check_algorithm, describe_step

    algorithm = check_algorithm(args.algorithm)
    n_ranks, nbytes = ranks_arg(args.ranks), nbytes_arg(args.nbytes)
    schedule = build(algorithm, n_ranks)
    sent = bytes_sent_per_rank(schedule, nbytes)
    correct = _correct(schedule)
    if args.json:
        print_json({
            "algorithm": algorithm, "n_ranks": n_ranks, "collective": schedule.collective,
            "steps": [[{"src": t.src, "dst": t.dst, "chunk": t.chunk, "reduce": t.reduce} for t in step]
                      for step in schedule.steps],
            "nbytes": nbytes, "bytes_sent_per_rank": [int(x) for x in sent], "correct": correct,
        })
        return 0
    print(f"{algorithm} on {n_ranks} ranks: {schedule.n_steps} steps, buffer cut into {schedule.n_chunks} chunks")
    for index in range(schedule.n_steps):
        print(f"step {index + 1}: {describe_step(schedule, index)}")
    print(f"bytes sent per rank for {nbytes} bytes: {', '.join(str(int(x)) for x in sent)}")
    print(f"result equals the numpy reference: {'yes' if correct else 'NO'}")
    return 0
