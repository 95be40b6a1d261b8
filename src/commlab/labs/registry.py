"""Every lab, its "your turn" tasks, and the check of each task (the same check the notebook, the lab's script
and ``commlab labs check`` run, so all three say the same sentence when something is wrong).

A task is what the learner hands in: one or more functions of ``labs/mine/<lab>.py`` and the check that
judges them, ``commlab.labs.checks.<lab>.check_<task>(*functions) -> Outcome`` (``Outcome.problem`` is "" when
right): a check is named for what it checks, never like the learner's function it is given. Importing this
module imports nothing heavy: the checks are named, and imported when run.

>>> [t.name for t in lab("ring_vs_tree").tasks]
['models', 'predict_crossover_nbytes', 'faster_algorithm']
>>> task_order("ring_vs_tree")
('ring_time_s', 'tree_time_s', 'predict_crossover_nbytes', 'faster_algorithm')
>>> lab("ring_vs_tree").tasks[1].check
'check_predict_crossover_nbytes'
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass

from commlab.errors import CommlabError


@dataclass(frozen=True)
class Task:
    """One graded piece of a lab."""

    name: str
    """How the task is named in a report (the function's name when there is one function)."""
    functions: tuple[str, ...]
    """The functions of the learner's module that the check is given, in this order."""
    check: str
    """The check's name in ``commlab.labs.checks.<lab>``."""
    ranks: int = 0
    """The most ranks the check starts (0: none, it runs in the calling process)."""
    points: float = 1.0
    """What the task is worth in a gradebook (``commlab labs check --csv``): all of it when its checks pass."""
    collectives: bool = True
    """False: the task is built from send and receive alone; when graded, the grader refuses collectives."""


@dataclass(frozen=True)
class Lab:
    name: str
    title: str
    tasks: tuple[Task, ...]
    answers: tuple[str, ...] = ()
    """The package's functions that compute this lab's answers (``"commlab.module:function"`` or
    ``"commlab.module:Class.method"``): a graded student's copy of the package has them refuse
    (:func:`commlab.labs.sandbox.package_copy`); the reference solutions and the checks are never in it."""
    not_graded: str = ""
    """Why ``commlab labs check`` cannot grade this lab in its sandbox ("" when it can): its tasks are then
    reported as skipped with this reason, and the lab is checked by its notebook and its torchrun script."""
    imports: tuple[str, ...] = ()
    """Modules this lab's code (the student's or its checks') imports on first use that are slow to import:
    ``torch._dynamo``, which a process's first torch optimizer or ``DistributedDataParallel`` imports
    (``torch/_compile.py``, about 1 s of CPU). When a class is graded, the fork server and each student's
    sandbox import them once, so that the lab's ranks, forked after, do not each import them again."""

    @property
    def max_ranks(self) -> int:
        return max((t.ranks for t in self.tasks), default=0)

    @property
    def notebook(self) -> str:
        return f"labs/{self.name}.ipynb"

    @property
    def script(self) -> str:
        return f"labs/scripts/{self.name}.py"


def _one(name: str, ranks: int = 0, **more) -> Task:
    return Task(name, (name,), f"check_{name}", ranks, **more)


LABS: tuple[Lab, ...] = (
    Lab("topology", "read a machine, place the parallel groups",
        (_one("my_sizes"), _one("choose_groups"))),
    Lab("p2p", "point to point: ping-pong, halo exchange, a deadlock",
        (_one("ping_pong", 2), _one("halo_exchange_nonblocking", 2), _one("ring_exchange", 4))),
    Lab("collectives", "the collectives, predicted and run",
        (_one("my_predictions"), _one("run_collective", 4), _one("all_reduce_by_halves", 4)),
        ("commlab.collectives:CollectiveSpec.bytes_sent_per_rank", "commlab.collectives:contributions")),
    Lab("build_your_own_ring", "build your own ring",
        (_one("reduce_scatter_steps", 8, collectives=False), _one("all_gather_steps", 8, collectives=False),
         _one("ring_all_reduce", 8, collectives=False)),
        tuple(f"commlab.p2p.ring:{name}" for name in ("ring_step", "reduce_scatter_steps", "all_gather_steps",
                                                      "ring_reduce_scatter", "ring_all_gather", "ring_all_reduce"))),
    Lab("ring_vs_tree", "ring or tree: the crossover",
        (Task("models", ("ring_time_s", "tree_time_s"), "check_models"), _one("predict_crossover_nbytes"),
         _one("faster_algorithm")),
        ("commlab.cost.alpha_beta:ring_all_reduce_time_s", "commlab.cost.alpha_beta:tree_all_reduce_time_s",
         "commlab.cost.alpha_beta:all_reduce_time_s", "commlab.cost.fit:crossover_nbytes")),
    Lab("ddp_overlap", "DDP's buckets",
        (_one("layers_from_model"), _one("ddp_buckets", 2)), imports=("torch._dynamo",)),
    Lab("ddp_zero", "DDP and ZeRO-1 by hand: overlap, buckets, accumulation, a sharded optimizer",
        (_one("allreduce_gradients", 3), _one("overlapped_ddp", 3), _one("bucketed_ddp", 3),
         _one("accumulate_gradients", 3), _one("zero1", 3)), imports=("torch._dynamo",)),
    Lab("bandwidth_sweep", "a bandwidth sweep and its fit",
        (_one("bus_factor"), _one("least_squares_alpha_beta"), _one("protocol_time_s")),
        ("commlab.collectives:busbw_factor", "commlab.collectives:CollectiveSpec.busbw_factor",
         "commlab.cost.fit:fit_alpha_beta", "commlab.cost.protocol_fit:ProtocolFit.time_s",
         "commlab.cost.protocol_fit:ProtocolFit.regime_index")),
    Lab("nccl_debug_multinode", "NCCL debug logs, variables and several nodes",
        (_one("answer_log_questions"), _one("env_for_goals"), _one("peak_busbw_GBps"), _one("classify_run")),
        ("commlab.nccl.summary:summarize", "commlab.nccl.summary:verdict")),
    Lab("find_the_hang", "find the hang",
        (_one("find_the_hang", 4),)),
)


def names() -> tuple[str, ...]:
    return tuple(entry.name for entry in LABS)


def lab(name: str) -> Lab:
    """The lab called ``name``, or a CommlabError listing the labs."""
    for entry in LABS:
        if entry.name == name:
            return entry
    raise CommlabError(f"unknown lab {name!r}; expected one of: {', '.join(names())}")


def task_order(name: str) -> tuple[str, ...]:
    """The functions of lab ``name`` in the order its notebook asks for them (() for an unknown lab)."""
    for entry in LABS:
        if entry.name == name:
            return tuple(f for task in entry.tasks for f in task.functions)
    return ()


@dataclass(frozen=True)
class Result:
    """One task judged: ``problem`` is the check's sentence ('' when it passed)."""

    lab: str
    task: str
    problem: str
    seconds: float

    @property
    def passed(self) -> bool:
        return not self.problem


def run_task(entry: Lab, task: Task, code) -> Result:
    """Run ``task``'s check on the functions of ``code`` (a :class:`commlab.labs.code.Code`)."""
    start = time.perf_counter()
    try:
        functions = [code.function(name) for name in task.functions]
        check = getattr(importlib.import_module(f"commlab.labs.checks.{entry.name}"), task.check)
        problem = check(*functions).problem
    except CommlabError as exc:        # the learner's module does not import, say
        problem = str(exc)
    except Exception as exc:  # noqa: BLE001 - a check is meant to catch the learner's errors; say so if one escaped
        problem = f"the check of {task.name} stopped: {type(exc).__name__}: {exc}"
    return Result(entry.name, task.name, problem, time.perf_counter() - start)
