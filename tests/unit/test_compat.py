"""The torch.distributed shims: on a torch without the 2.13 names the old ones do the work (checked on real
gloo ranks against numpy), and ``provide_new_names`` adds only what is missing."""
from __future__ import annotations

import numpy as np
import pytest

from commlab import compat
from commlab.launch import run


def _gather_and_scatter(rank, n_ranks, hide_new_names):
    import torch
    import torch.distributed as dist

    if hide_new_names:  # behave as torch 2.12 and older: only the old names exist
        del dist.all_gather_single, dist.reduce_scatter_single
        assert compat.provide_new_names() == ["all_gather_single", "reduce_scatter_single"]
    x = torch.arange(4, dtype=torch.float32) + 10 * rank
    gathered = torch.empty(4 * n_ranks)
    dist.all_gather_single(gathered, x)
    piece = torch.empty(4 // n_ranks)
    dist.reduce_scatter_single(piece, x)
    return gathered.tolist(), piece.tolist(), compat.provide_new_names()


@pytest.mark.parametrize("hide_new_names", [False, True])
def test_shims_match_numpy_with_and_without_the_new_names(hide_new_names):
    n = 2
    results = run(_gather_and_scatter, n, hide_new_names, backend="gloo", start_method="spawn", verbose=False,
                  timeout_s=120)
    inputs = [np.arange(4) + 10 * r for r in range(n)]
    for rank, (gathered, piece, added_again) in enumerate(results):
        assert gathered == np.concatenate(inputs).tolist()
        assert piece == np.array_split(np.sum(inputs, axis=0), n)[rank].tolist()
        assert added_again == []  # the second call finds both names
