"""bench's checking: slice-by-slice #wrong equals the whole-buffer count, against numpy's own sum."""
import numpy as np
import pytest
import torch

from commlab import collectives
from commlab.bench import data


@pytest.mark.parametrize("op", ["all_reduce", "broadcast", "sendrecv"])
def test_sliced_check_equals_whole_check(op, monkeypatch):
    monkeypatch.setattr(data, "SLICE_ELEMS", 7)            # force many slices on a small buffer
    spec, n, n_in = collectives.spec(op), 3, 50
    inputs = [data.rank_input(r, n_in, "sum", spec.reduces) for r in range(n)]
    right = torch.tensor(spec.reference(inputs)[1])
    assert data.count_wrong_for(spec, right, 1, n, n_in, 0, "sum") == 0
    broken = right.clone()
    broken[[3, 20, 49]] += 1
    assert data.count_wrong_for(spec, broken, 1, n, n_in, 0, "sum") == 3


def test_inputs_by_slice_match_the_whole_input():
    whole = data.rank_input(2, 100, "sum", True)
    parts = np.concatenate([data.rank_input(2, 30, "sum", True, start) for start in (0, 30, 60)] +
                           [data.rank_input(2, 10, "sum", True, 90)])
    assert np.array_equal(whole, parts)
