"""The lab's model, data and settings (a :class:`Case`), the ones the notebook uses and the ones drawn from a
seed when a class is graded (``commlab labs check --seed``)."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from commlab.labs.harness.ddp_zero import ModelSpec

#: The lab's model: linear layers of these widths with ReLUs between them (11,017 parameters: 2, 3 and 4 ranks
#: divide it unevenly, so ZeRO-1's shards need padding).
WIDTHS = (32, 64, 64, 64, 9)
BATCH = 8
STEPS = 3
LR = 0.1
ADAM_LR = 1e-2
#: Parameters agree with the reference when |mine - theirs| <= ATOL + RTOL |theirs| (torch.allclose's rule).
RTOL, ATOL = 1e-5, 1e-6
#: ZeRO-1's parameters agree with the unsharded Adam run within these: where the learner's code runs (its sandbox)
#: torch may use another number of threads, so a matrix product adds in another order and a gradient's last bits
#: differ; Adam divides each step by the gradient's own running size and passes that relative error on (the
#: wrong versions of the tests differ by about the learning rate, 1e-2).
ADAM_RTOL, ADAM_ATOL = 1e-4, 1e-5
#: Bucket caps the bucketed check uses, in bytes: a bucket per parameter or two, a few buckets, one bucket.
BUCKET_CAPS = (1024, 16 * 1024, 2**20)
MICRO_BATCHES = 4
#: Adam keeps two float32 tensors per parameter element (exp_avg, exp_avg_sq): torch/optim/adam.py.
ADAM_STATE_BYTES_PER_PARAM = 2 * 4
#: The gate's factors (harness.ddp_zero.attach_gate) are drawn from this range, afresh in every run.
GATE_FACTORS = (0.5, 2.0)


@dataclass(frozen=True)
class Case:
    """One run of a check: the model, the data, how many ranks, steps, bucket caps and micro-batches."""

    n_ranks: int
    widths: tuple[int, ...] = WIDTHS
    model_seed: int = 0
    """torch's seed for the model's initial weights (the same on every rank)."""
    data_seed: int = 0
    batch: int = BATCH
    steps: int = STEPS
    caps: tuple[int, ...] = BUCKET_CAPS
    micro_batches: int = MICRO_BATCHES

    def __post_init__(self):
        if not 1 <= self.n_ranks <= 1024:
            raise ValueError(f"n_ranks must be 1 to 1024, got {self.n_ranks!r}")
        if self.steps < 1 or self.batch < 1 or self.micro_batches < 2 or not self.caps:
            raise ValueError(f"steps, batch >= 1, micro_batches >= 2 and caps needed, got {self}")

    @property
    def spec(self) -> ModelSpec:
        return ModelSpec(tuple(self.widths), self.model_seed)

    def model(self):
        return self.spec.build()

    def batch_of(self, rank: int, step: int, n: int | None = None):
        """This rank's batch of one step: each rank its own data, as in data parallelism."""
        import torch

        gen = torch.Generator().manual_seed(1_000_003 * self.data_seed + 1000 * step + rank)
        n = self.batch if n is None else n
        return torch.randn(n, self.widths[0], generator=gen), torch.randint(0, self.widths[-1], (n,), generator=gen)

    def batches(self, rank: int) -> list:
        return [self.batch_of(rank, s) for s in range(self.steps)]


def lab_model():
    """The lab's model, the same initial weights on every rank (torch's seed 0)."""
    return Case(1).model()


def param_nbytes(model) -> list[int]:
    return [p.numel() * p.element_size() for p in model.parameters()]


def zero1_state_formula_bytes(n_params: int, n_ranks: int) -> int:
    """Adam's state on one rank under ZeRO-1: 2 float32 values for each of the ceil(P/N) elements of its shard."""
    return ADAM_STATE_BYTES_PER_PARAM * math.ceil(n_params / n_ranks)


def gate_factors(steps: int) -> tuple[float, ...]:
    """The gate's factor of each step, drawn from the system's randomness (never from a seed a learner could
    know: the verdict of right code does not depend on them)."""
    rng = random.SystemRandom()
    return tuple(rng.uniform(*GATE_FACTORS) for _ in range(steps))


def drawn_case(seed: int, task: str, max_ranks: int = 3) -> Case:
    """A case drawn from ``seed`` for ``task``: 3 to 5 layers of 3 to 40 units, 2 to ``max_ranks`` ranks, 2 or 3
    steps, batches of 4 to 12, two bucket caps between the smallest gradient and the whole model, 2 to 5
    micro-batches."""
    rng = random.Random(f"ddp_zero:{task}:{seed}")
    widths = tuple(rng.randint(3, 40) for _ in range(rng.randint(4, 6)))
    sizes = [4 * (a * b + b) for a, b in zip(widths[:-1], widths[1:])]
    low, high = math.log(min(sizes) // 2 + 4), math.log(sum(sizes) + 4)
    caps = tuple(sorted({int(math.exp(rng.uniform(low, high))) for _ in range(2)}))
    return Case(n_ranks=rng.randint(2, max_ranks), widths=widths, model_seed=rng.randrange(2**31),
                data_seed=rng.randrange(2**31), batch=rng.randint(4, 12), steps=rng.randint(2, 3), caps=caps,
                micro_batches=rng.randint(2, 5))
