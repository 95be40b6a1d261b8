"""One layout's result and a whole plan's ranked and refused layouts (chapter 09, ``commlab plan``)."""
from __future__ import annotations

from dataclasses import dataclass, field

from commlab.errors import CommlabError
from commlab.parallelism.estimate import Placed
from commlab.parallelism.memory import MemoryBreakdown
from commlab.parallelism.plan_config import PlanConfig


@dataclass(frozen=True)
class Layout:
    """One layout with its memory and, when it runs, its step estimate (``reason`` says why it does not)."""

    tp: int
    cp: int
    pp: int
    dp: int
    zero: int
    memory: MemoryBreakdown
    reason: str | None = None
    step_s: float = 0.0
    tokens_per_s: float = 0.0
    mfu: float = 0.0
    exposed_comm_s: float = 0.0
    placed: tuple[Placed, ...] = field(default=(), repr=False)
    vp: int = 1
    micro_batch: int = 1
    micro_batches: int = 1
    global_batch_tokens: int = 0
    tflops_per_gpu: float = 0.0
    hardware_tflops_per_gpu: float = 0.0
    """TFLOPs per GPU counting recomputation (Megatron-LM's and MT-NLG's convention)."""
    cp_kind: str = "ring"
    terms_s: dict = field(default_factory=dict, repr=False)
    """Seconds per step: "compute", "bubble" and each exposed communication term."""

    @property
    def comm_s(self) -> float:
        """Every collective's time per step, before any overlap."""
        return sum(p.time_s for p in self.placed)

    def comm_by_collective_s(self) -> dict[str, float]:
        """Seconds per step, before overlap, per collective: keys "<strategy> <primitive>"."""
        out: dict[str, float] = {}
        for p in self.placed:
            key = f"{p.strategy} {p.primitive}"
            out[key] = out.get(key, 0.0) + p.time_s
        return out

    @property
    def key(self) -> tuple:
        return (self.tp, self.cp, self.pp, self.dp, self.zero, self.vp, self.cp_kind)

    @property
    def name(self) -> str:
        cp = f" x CP {self.cp}{' Ulysses' if self.cp_kind == 'ulysses' else ''}" if self.cp > 1 else ""
        vp = f" (v {self.vp})" if self.vp > 1 else ""
        return f"TP {self.tp}{cp} x PP {self.pp}{vp} x DP {self.dp}, ZeRO-{self.zero}"

    def deciding_term(self) -> str:
        """The largest of bubble and exposed communication terms, in words."""
        if not self.terms_s:
            return "none"
        losses = {k: v for k, v in self.terms_s.items() if k != "compute"}
        name = max(losses, key=lambda k: losses[k])
        words = {"bubble": "bubble", "optimizer": "optimizer step",
                 "NCCL SMs": "the SMs overlapped collectives take from compute"}
        return words.get(name, f"exposed {name}")


@dataclass(frozen=True)
class Plan:
    config: PlanConfig
    ranked: tuple[Layout, ...]
    rejected: tuple[Layout, ...]

    @property
    def best(self) -> Layout:
        if not self.ranked:
            raise CommlabError(no_fit_message(self))
        return self.ranked[0]

    def rank_of(self, layout: Layout) -> int | None:
        """1-based rank of a layout with ``layout``'s degrees, None when it is not ranked."""
        for i, x in enumerate(self.ranked, start=1):
            if x.key == layout.key:
                return i
        return None


def no_fit_message(result: Plan) -> str:
    c = result.config
    head = f"{c.model.name} does not fit on {c.n_gpus} {c.gpu.name} GPUs at seq {c.seq_len}"
    over = [x for x in result.rejected if x.reason and x.reason.startswith("needs")]
    if not over:
        reasons = sorted({x.reason for x in result.rejected if x.reason})
        return f"{head} with any layout: {reasons[0] if reasons else 'no layout'}"
    closest = min(over, key=lambda x: x.memory.total)
    parts = {k: v for k, v in closest.memory.as_GB().items() if k != "total"}
    term = max(parts, key=lambda k: parts[k])
    return (f"{head} with any layout: the closest, {closest.name}, needs {closest.memory.total / 1e9:.1f} GB, "
            f"{(closest.memory.total - c.usable_bytes) / 1e9:.1f} GB over the {c.usable_bytes / 1e9:.1f} GB usable; "
            f"its largest term is {term.replace('_', ' ')} ({parts[term]:.1f} GB): add GPUs, use full "
            f"recomputation, or shorten the sequence")
