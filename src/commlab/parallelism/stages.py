"""Pipeline stages that need not divide the layers evenly: lighter first and last stages (chapter 09).

The first stage also holds the input embedding and the last the output layer and the loss, so Llama 3 gives
each of them one transformer layer less ("we reduce one Transformer layer each from the first and the last
stages", arXiv 2407.21783, sec. 3.3.2: 126 layers on 16 stages are 7 + 14 x 8 + 7) and Megatron-LM offers
``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers`` and
``--account-for-embedding-in-pipeline-split`` for the same purpose. :func:`stage_layers` spreads L layers over p
stages as evenly as whole layers allow, giving the layers left over to the middle stages first.

>>> stage_layers(126, 16)[:3], stage_layers(126, 16)[-1], sum(stage_layers(126, 16))
((7, 8, 8), 7, 126)
>>> stage_layers(80, 4), stage_layers(105, 35)[:2]
((20, 20, 20, 20), (3, 3))
"""
from __future__ import annotations

from functools import lru_cache

from commlab.errors import CommlabError


@lru_cache(maxsize=4096)
def stage_layers(n_layers: int, pp: int) -> tuple[int, ...]:
    """Layers per stage, first to last: L // p each, the remainder to the middle stages, then the ends."""
    if pp > n_layers:
        raise CommlabError(f"PP {pp} needs at least one layer per stage; the model has {n_layers} layers")
    base, extra = divmod(n_layers, pp)
    counts = [base] * pp
    order = list(range(1, pp - 1)) + [0, pp - 1] if pp > 2 else list(range(pp))
    for i in order[:extra]:
        counts[i] += 1
    return tuple(counts)
