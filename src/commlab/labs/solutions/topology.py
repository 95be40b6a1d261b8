"""The topology lab (labs/topology.ipynb, labs/scripts/topology.py): the reference answer, the checks of a
reader's parallel groups against a machine's topology, and the live test of those groups as process groups.

The reader chooses the sizes (:func:`my_sizes`) and writes :func:`choose_groups`: given a machine and the
sizes of the tensor-parallel (TP), pipeline-parallel (PP) and data-parallel (DP) dimensions, which GPUs form
each group. With ``COMMLAB_LAB_SOLUTIONS=1`` the ones below replace theirs. :func:`check_groups` says what is
wrong with a choice, in words (chapters 01 and 09):

* ``tp * pp * dp`` must equal the number of GPUs, and every GPU sits in exactly one group of each kind;
* groups of different kinds share at most one GPU (each GPU is one point (t, d, p) of a tp x dp x pp grid);
* every pair of GPUs in a TP group is joined by NVLink (:func:`commlab.topology.nvlink_count` of their
  relation > 0): TP all-reduces activations in every layer, so it belongs inside an NVLink domain.
"""
from __future__ import annotations

import dataclasses
import itertools

from commlab.labs.checking import Outcome, run_checked

KINDS = ("tp", "pp", "dp")

# --- the reference answer ----------------------------------------------------------------------------------


def my_sizes():
    """TP 2: the A40 server's NVLink bridges join pairs only, so no larger TP group stays on NVLink there."""
    return {"tp": 2, "pp": 2, "dp": 2}


def choose_groups(topo, tp, pp, dp):
    """Megatron-LM's order: TP innermost, then DP, then PP, over the GPUs listed NVLink group by NVLink group.

    The GPU at position i = t + tp (d + dp p) of that list has TP index t, DP index d and PP index p, so a TP
    group is tp consecutive GPUs of one NVLink group whenever tp divides the NVLink groups' sizes.
    """
    from commlab.topology import nvlink_groups

    order = [gpu for group in nvlink_groups(topo) for gpu in group]
    at = {(t, d, p): order[t + tp * (d + dp * p)] for t in range(tp) for d in range(dp) for p in range(pp)}
    return {
        "tp": [[at[t, d, p] for t in range(tp)] for p in range(pp) for d in range(dp)],
        "dp": [[at[t, d, p] for d in range(dp)] for p in range(pp) for t in range(tp)],
        "pp": [[at[t, d, p] for p in range(pp)] for d in range(dp) for t in range(tp)],
    }


# --- the checks ---------------------------------------------------------------------------------------------


def shape_problems(groups, n_gpus: int, sizes: dict) -> list[str]:
    """Not a dict of the three kinds, not lists of whole GPU numbers, wrong sizes, not a partition."""
    if not isinstance(groups, dict) or set(groups) != set(KINDS):
        return [f"choose_groups must return a dict with the keys 'tp', 'pp' and 'dp', got {groups!r}"]
    problems = []
    for kind in KINDS:
        found = groups[kind]
        if not isinstance(found, (list, tuple)) or not all(isinstance(g, (list, tuple)) for g in found):
            problems.append(f"{kind}: expected a list of groups (lists of GPU numbers), got {found!r}")
            continue
        members = sorted(gpu for g in found for gpu in g)
        if members != list(range(n_gpus)):
            twice = sorted({gpu for gpu in members if members.count(gpu) > 1})
            missing = sorted(set(range(n_gpus)) - set(members))
            problems.append(f"{kind}: every GPU must be in exactly one {kind} group; "
                            f"twice: {twice or 'none'}, missing: {missing or 'none'}")
        wrong = [list(g) for g in found if len(g) != sizes[kind]]
        if wrong:
            problems.append(f"{kind}: every group must have {kind}={sizes[kind]} GPUs; {wrong[0]} has {len(wrong[0])}")
    return problems


def _grid_problems(groups) -> list[str]:
    """Two groups of different kinds that share two or more GPUs."""
    for a, b in itertools.combinations(KINDS, 2):
        for ga, gb in itertools.product(groups[a], groups[b]):
            shared = sorted(set(ga) & set(gb))
            if len(shared) > 1:
                return [f"{a} group {list(ga)} and {b} group {list(gb)} share GPUs {shared}: two GPUs that hold "
                        f"different shards ({a}) cannot also be replicas or stages of each other ({b})"]
    return []


def _tp_problems(topo, groups) -> list[str]:
    """TP groups with a pair of GPUs not joined by NVLink."""
    from commlab.topology import nvlink_count, nvlink_groups

    for group in groups["tp"]:
        for i, j in itertools.combinations(group, 2):
            relation = topo.relation(i, j)
            if not nvlink_count(relation):
                return [f"TP group {list(group)} is not on NVLink: GPU{i} and GPU{j} are joined by {relation}. "
                        f"TP all-reduces activations in every layer; keep each TP group inside one NVLink group: "
                        f"{[list(g) for g in nvlink_groups(topo)]}"]
    return []


def size_problems(n_gpus: int, tp: int, pp: int, dp: int) -> list[str]:
    """The sizes must be whole numbers >= 1 that multiply to the number of GPUs."""
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (tp, pp, dp)):
        return [f"tp, pp and dp must be whole numbers >= 1 (the lab's my_sizes() gives them), got {tp!r}, {pp!r}, "
                f"{dp!r}"]
    if tp * pp * dp != n_gpus:
        return [f"tp x pp x dp = {tp} x {pp} x {dp} = {tp * pp * dp}, but the machine has {n_gpus} GPUs: "
                "the three sizes must multiply to the number of GPUs"]
    return []


def check_groups(topo, groups, tp: int, pp: int, dp: int) -> list[str]:
    """What is wrong with ``groups`` (choose_groups' dict) for ``topo`` and these sizes, in words; [] when right."""
    sizes = {"tp": tp, "pp": pp, "dp": dp}
    if found := size_problems(topo.n_gpus, tp, pp, dp):
        return found
    problems = shape_problems(groups, topo.n_gpus, sizes)
    return problems or _grid_problems(groups) or _tp_problems(topo, groups)


def try_choose(fn, topo, tp: int, pp: int, dp: int) -> tuple[dict | None, list[str]]:
    """(groups, problems): run the reader's ``fn`` and check its answer; an exception becomes a problem."""
    if found := size_problems(topo.n_gpus, tp, pp, dp):
        return None, found
    try:
        groups = fn(topo, tp, pp, dp)
    except NotImplementedError as exc:
        return None, [f"choose_groups is not written yet ({exc}); fill in the cell marked 'your turn'"]
    except Exception as exc:  # noqa: BLE001 - the reader's mistake, reported in words
        return None, [f"choose_groups(topo, {tp}, {pp}, {dp}) raised {type(exc).__name__}: {exc}"]
    return groups, check_groups(topo, groups, tp, pp, dp)


def sub_topology(topo, gpus):
    """The topology of some of ``topo``'s GPUs, renumbered 0.. in the order given (NICs and P2P dropped)."""
    gpus = list(gpus)
    chosen = tuple(dataclasses.replace(topo.gpus[g], index=k) for k, g in enumerate(gpus))
    matrix = tuple(tuple(topo.matrix[i][j] for j in gpus) for i in gpus)
    return dataclasses.replace(topo, gpus=chosen, matrix=matrix, nics=(), p2p=None,
                               notes=topo.notes + (f"GPUs {gpus} of {topo.source or 'a larger machine'}",))


# --- the groups as process groups ----------------------------------------------------------------------------


def groups_in_group(rank, n_ranks, groups) -> dict:
    """Inside a rank: make every group a process group (every rank creates every group, in the same order),
    all-reduce each rank's number in its own groups, and return {kind: (sum, members)}."""
    import torch
    import torch.distributed as dist

    from commlab.labs.checking import device_and_sync

    device, _ = device_and_sync()
    found = {}
    for kind in KINDS:
        for members in groups[kind]:
            handle = dist.new_group(sorted(members))
            if rank in members:
                value = torch.tensor([float(rank)], device=device)
                dist.all_reduce(value, group=handle)
                found[kind] = (int(value.item()), sorted(members))
    return {"backend": dist.get_backend(), "sums": found}


def check_process_groups(groups, n_ranks: int, timeout_s: float = 60.0) -> Outcome:
    """Create ``groups`` as process groups on ``n_ranks`` ranks; each rank's all-reduce over its TP, PP and DP
    group must give the sum of that group's ranks."""
    outcome = run_checked(groups_in_group, n_ranks, groups, what=f"the groups on {n_ranks} ranks",
                          timeout_s=timeout_s)
    if not outcome.ok:
        return outcome
    for rank, value in enumerate(outcome.rank_values):
        for kind, (total, members) in value["sums"].items():
            if total != sum(members):
                return Outcome(problem=f"rank {rank}: all_reduce over its {kind} group {members} gave {total}, "
                                       f"not {sum(members)}", backend=outcome.backend)
    return Outcome(outcome.values, "", outcome.backend, {"sums": [v["sums"] for v in outcome.rank_values]})
