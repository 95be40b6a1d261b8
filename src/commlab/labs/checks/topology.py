"""Checks of the topology lab (labs/topology.ipynb): the sizes (TP as large as NVLink allows on all three
machines) and ``choose_groups``, on every (tp, pp, dp) that fits each machine's NVLink groups, on the three
published servers and on machines the notebook never shows (the A40 server with its GPUs renumbered so that
NVLink pairs are not neighbours in GPU order, and half of each server).

``my_sizes`` has no drawn cases: it takes no input (its answer is the one layout of the notebook's three
machines), so there is nothing to draw.
"""
from __future__ import annotations

from commlab.labs.checking import Outcome
from commlab.labs.checks import call

MACHINES = ("h100-sxm-8", "v100-sxm2-8", "a40-pcie-8")


def _machines() -> dict:
    from commlab import topology
    from commlab.labs.solutions import topology as lab

    found = {name: topology.example(name) for name in MACHINES}
    a40 = found["a40-pcie-8"]
    found["a40-pcie-8, GPUs renumbered 0 2 4 6 1 3 5 7"] = lab.sub_topology(a40, (0, 2, 4, 6, 1, 3, 5, 7))
    found["v100-sxm2-8, GPUs 0-3"] = lab.sub_topology(found["v100-sxm2-8"], range(4))
    found["h100-sxm-8, GPUs 2-7"] = lab.sub_topology(found["h100-sxm-8"], range(2, 8))
    return found


def _layouts(n_gpus: int):
    """Every (tp, pp, dp) of whole numbers multiplying to ``n_gpus``."""
    return [(tp, pp, n_gpus // (tp * pp)) for tp in range(1, n_gpus + 1) for pp in range(1, n_gpus + 1)
            if n_gpus % (tp * pp) == 0]


def fitting_layouts(topo) -> list[tuple[int, int, int]]:
    """The layouts for which a valid grouping exists (the reference finds one)."""
    from commlab.labs.solutions import topology as lab

    return [sizes for sizes in _layouts(topo.n_gpus) if not lab.try_choose(lab.choose_groups, topo, *sizes)[1]]


def largest_tp() -> int:
    """The largest TP size that stays on NVLink on all three published machines."""
    machines = _machines()
    return min(max(tp for tp, _, _ in fitting_layouts(machines[name])) for name in MACHINES)


def check_my_sizes(fn) -> Outcome:
    """tp * pp * dp == 8, and tp the largest that fits all three machines."""
    from commlab.labs.solutions import topology as lab
    from commlab.topology import nvlink_groups

    got, failed = call("my_sizes", fn)
    if failed:
        return failed
    if not isinstance(got, dict) or set(got) != {"tp", "pp", "dp"}:
        return Outcome(problem=f"my_sizes must return a dict with the keys 'tp', 'pp' and 'dp', got {got!r}")
    found = lab.size_problems(8, got["tp"], got["pp"], got["dp"])
    if found:
        return Outcome(problem=found[0])
    best = largest_tp()
    machines = _machines()
    for name in MACHINES:
        if got["tp"] not in {tp for tp, _, _ in fitting_layouts(machines[name])}:
            groups = [list(g) for g in nvlink_groups(machines[name])]
            return Outcome(problem=f"tp={got['tp']} does not stay on NVLink on {name}, whose NVLink groups are "
                                   f"{groups}: TP must fit inside an NVLink group on all three machines")
    if got["tp"] < best:
        return Outcome(problem=f"tp={got['tp']} fits, but tp={best} stays on NVLink on all three machines too: "
                               "choose TP as large as possible")
    return Outcome(details={"sizes": got})


def check_choose_groups(fn, machines: dict | None = None) -> Outcome:
    """A valid grouping for every layout that fits, on every machine (try_choose's words for the first failure)."""
    from commlab.labs.solutions import topology as lab

    n_cases = 0
    for name, topo in (machines if machines is not None else _machines()).items():
        for tp, pp, dp in fitting_layouts(topo):
            groups, problems = lab.try_choose(fn, topo, tp, pp, dp)
            n_cases += 1
            if problems:
                return Outcome(problem=f"{name}, tp={tp} pp={pp} dp={dp}: {problems[0]}")
    return Outcome(details={"cases": n_cases})


def drawn_choose_groups(fn, seed: int) -> Outcome:
    """:func:`choose_groups` on the three servers with their GPUs renumbered by permutations drawn from ``seed``."""
    import numpy as np

    from commlab import topology
    from commlab.labs.solutions import topology as lab

    rng = np.random.default_rng(seed)
    machines = {}
    for name in MACHINES:
        order = tuple(int(i) for i in rng.permutation(8))
        renumbered = lab.sub_topology(topology.example(name), order)
        machines[f"{name}, GPUs renumbered {' '.join(map(str, order))}"] = renumbered
    return check_choose_groups(fn, machines)
