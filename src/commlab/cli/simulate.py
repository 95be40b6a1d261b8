"""``commlab simulate ALGO --ranks N [--nbytes SIZE] [--json]``: print a schedule step by step.

Text: one line per step listing its transfers, at most MAX_LISTED of them in all (a ring all-reduce has
2N(N-1): up to 256 ranks; PAT and halving-doubling also grow as N squared; the trees, naive and recursive
doubling stay far below it up to 4096 ranks).
``--json``: ``algorithm``, ``n_ranks``, ``steps`` (each a list of ``{"src", "dst", "chunk", "reduce"}``),
``bytes_sent_per_rank`` (for ``--nbytes``, default 1M) and ``correct`` (the schedule's result equals the numpy
reference on random data).
"""
from __future__ import annotations

import numpy as np

from commlab.cli._common import print_json
from commlab.errors import CommlabError, check_n_ranks

#: The short names a reader uses (the README's, the chapters' headings) for the schedules' own names. A name
#: that means two schedules (PAT is a reduce-scatter and an all-gather) has none.
ALIASES = {"ring": "ring-all-reduce", "tree": "tree-all-reduce", "double-tree": "double-tree-all-reduce",
           "naive": "naive-all-reduce", "recursive-doubling": "recursive-doubling-all-reduce",
           "halving-doubling": "halving-doubling-all-reduce", "rabenseifner": "halving-doubling-all-reduce"}
#: The most transfers ``commlab simulate`` lists (the listing is the product; it answers in seconds).
MAX_LISTED = 131_072
#: The largest --nbytes (1 PiB): bytes per rank stay exact in numpy's 64-bit integers.
MAX_NBYTES = 2**50


def algorithm_name(text: str) -> str:
    """The schedule's name for ``text``: itself, or the name :data:`ALIASES` gives a short one (any case);
    CommlabError listing both when it is neither.

    >>> algorithm_name("ring"), algorithm_name("Ring-All-Reduce")
    ('ring-all-reduce', 'ring-all-reduce')
    """
    from commlab.errors import check_choice
    from commlab.schedules import ALGORITHMS

    name = text.strip().lower() if isinstance(text, str) else text
    name = ALIASES.get(name, name)
    if name not in ALGORITHMS:
        check_choice("algorithm", text, tuple(ALGORITHMS) + tuple(f"{a} (= {n})" for a, n in ALIASES.items()))
    return name


def algorithms_help() -> str:
    from commlab.schedules import ALGORITHMS

    short = ", ".join(f"{alias} = {name}" for alias, name in ALIASES.items())
    return f"one of: {', '.join(ALGORITHMS)} (short names: {short})"


def add_parser(sub):
    p = sub.add_parser("simulate", help="print an algorithm's schedule of transfers, step by step",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("algorithm", metavar="ALGO", help=algorithms_help())
    p.add_argument("--ranks", required=True, help="number of ranks N (1 to 4096; rings up to 256: the listing "
                                                   "grows as N squared)")
    p.add_argument("--nbytes", default="1M", help="buffer size for bytes_sent_per_rank (default 1M = 1 MiB)")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    return p


def _correct(schedule) -> bool:
    from commlab.schedules import chunk_bounds, expected, run

    rng = np.random.default_rng(0)
    length = 3 * schedule.n_chunks + 1  # uneven chunks, and small: 4096 ranks of a tree stay in a few MB
    if schedule.collective == "all_gather":
        sizes = np.diff(chunk_bounds(length, schedule.n_ranks))
        inputs = [rng.normal(size=int(k)) for k in sizes]
    else:
        inputs = [rng.normal(size=length) for _ in range(schedule.n_ranks)]
    got = run(schedule, inputs, record=False).outputs
    return all(np.allclose(a, b) for a, b in zip(got, expected(schedule, inputs)))


def _checked(algorithm: str, n_ranks: int):
    """The schedule, or CommlabError when its listing would pass MAX_LISTED."""
    from commlab.schedules import MAX_RANKS, build, max_quadratic_ranks, quadratic_transfers

    check_n_ranks(n_ranks, 1, MAX_RANKS)
    count = quadratic_transfers(algorithm, n_ranks)
    if count is not None and count > MAX_LISTED:
        raise CommlabError(
            f"--ranks {n_ranks}: {algorithm} has {count:,} transfers on {n_ranks} ranks and commlab simulate lists "
            f"at most {MAX_LISTED:,}, so {algorithm} is simulated on up to "
            f"{max_quadratic_ranks(algorithm, MAX_LISTED)} ranks (cost at any N: commlab cost)")
    schedule = build(algorithm, n_ranks)
    listed = sum(len(step) for step in schedule.steps)
    if listed > MAX_LISTED:  # pragma: no cover - quadratic_transfers counts every algorithm that gets here
        raise CommlabError(f"--ranks {n_ranks}: {algorithm} has {listed:,} transfers; at most {MAX_LISTED:,} listed")
    return schedule


def run(args) -> int:
    from commlab.cli._common import nbytes_arg, ranks_arg
    from commlab.schedules import bytes_sent_per_rank, check_algorithm, describe_step

    algorithm = check_algorithm(algorithm_name(args.algorithm))
    n_ranks, nbytes = ranks_arg(args.ranks), nbytes_arg(args.nbytes)
    if nbytes > MAX_NBYTES:
        raise CommlabError(f"--nbytes must be at most 1 PiB ({MAX_NBYTES} bytes), got {args.nbytes!r}")
    schedule = _checked(algorithm, n_ranks)
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
