"""The data a checked iteration runs on, and how many elements of its result are wrong (``#wrong``).

Like nccl-tests' ``verifiable`` inputs, the values are chosen so that the exact answer is representable in
every data type commlab benchmarks: small integers. Every rank can build every other rank's input, so each
rank computes its own expected output with the collective's numpy reference
(:meth:`commlab.collectives.CollectiveSpec.reference`) and counts the elements that differ. nccl-tests adds
the counts of all ranks (``Allreduce(..., sum)`` in ``src/common.cu``); so does :func:`count_wrong`'s caller.
"""
from __future__ import annotations

import numpy as np


#: collectives whose output element i depends only on the inputs' element i: checked slice by slice
ELEMENTWISE = ("all_reduce", "reduce", "broadcast", "sendrecv")
SLICE_ELEMS = 1 << 22


def rank_input(rank: int, n_elems: int, redop: str, reduces: bool, start: int = 0) -> np.ndarray:
    """Rank ``rank``'s input: integers whose reduction over up to 85 ranks is exact even in bfloat16.

    * sum: values 0..3 (a sum over N ranks is at most 3N <= 255, exact with bfloat16's 8-bit significand);
    * prod: values 1 or 2 (every product is a power of two, exact for N <= 15 in half, any N in float);
    * min / max and data movement: -128..127, different on every rank so a misplaced chunk shows.
    """
    i = np.arange(start, start + n_elems, dtype=np.int64)
    if reduces and redop == "sum":
        values = (i * 7 + rank * 3) % 4
    elif reduces and redop == "prod":
        values = 1 + (i + rank) % 2
    else:
        values = (i * 7 + rank * 31) % 256 - 128
    return values.astype(np.float64)


def expected_output(spec, rank: int, n_ranks: int, n_in: int, root: int, redop: str) -> np.ndarray:
    """What ``rank`` must hold after the collective, from the numpy reference on every rank's input."""
    inputs = [rank_input(r, n_in, redop, spec.reduces) for r in range(n_ranks)]
    return np.asarray(spec.reference(inputs, root=root, redop=redop)[rank], dtype=np.float64)


def count_wrong_for(spec, got, rank: int, n_ranks: int, n_in: int, root: int, redop: str) -> int:
    """``#wrong`` of this rank's output ``got``, checked in slices of SLICE_ELEMS elements where the collective
    is elementwise, so that a 1 GiB sweep on 8 ranks needs tens of MB per rank for checking, not every rank's
    whole input in float64 (N x 8 bytes per element)."""
    if spec.name not in ELEMENTWISE or n_in <= SLICE_ELEMS:
        return count_wrong(got, expected_output(spec, rank, n_ranks, n_in, root, redop))
    flat = got.reshape(-1)
    if flat.numel() != n_in:
        return int(max(flat.numel(), n_in))
    wrong = 0
    for start in range(0, n_in, SLICE_ELEMS):
        size = min(SLICE_ELEMS, n_in - start)
        inputs = [rank_input(r, size, redop, spec.reduces, start) for r in range(n_ranks)]
        want = np.asarray(spec.reference(inputs, root=root, redop=redop)[rank], dtype=np.float64)
        wrong += count_wrong(flat[start:start + size], want)
    return wrong


def count_wrong(got, expected: np.ndarray) -> int:
    """Elements of the tensor ``got`` that differ from ``expected`` (exact comparison: inputs are exact)."""
    values = got.detach().double().cpu().numpy()
    if values.shape != expected.shape:
        return int(max(values.size, expected.size))
    return int(np.count_nonzero(values != expected))
