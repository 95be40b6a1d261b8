"""Running a schedule on numpy buffers, step by step, and what each rank holds after each step.

The buffers are kept as one padded array ``[n_ranks, n_chunks, longest chunk]`` so that a step is a few
vectorised numpy operations whatever N is (a ring all-reduce over 1024 ranks runs in seconds; see
benchmarks/schedules.py). ``record=True`` also keeps every intermediate state and the ``holds`` array the
animation colours chunks with; it costs memory proportional to steps x ranks x buffer, so the benchmark turns
it off.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commlab.collectives import spec
from commlab.errors import CommlabError
from commlab.schedules.model import Schedule, chunk_bounds


@dataclass
class Run:
    """The outcome of :func:`run`."""

    schedule: Schedule
    bounds: np.ndarray
    """Chunk offsets into the full buffer (n_chunks + 1)."""
    outputs: list[np.ndarray]
    """The collective's result per rank (reduce_scatter: rank r's chunk r; all_gather: the whole buffer)."""
    states: list[list[np.ndarray]] | None
    """states[k][rank]: the full buffer after k steps (k = 0 is the start); None unless recorded."""
    holds: np.ndarray | None
    """bool [n_steps + 1, n_ranks, n_chunks, n_ranks]: after k steps, does rank's chunk c contain source rank
    s's contribution? None unless recorded."""


def _layout(schedule: Schedule, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounds, the padded buffer array and the initial holds for the collective's input convention."""
    n, c = schedule.n_ranks, schedule.n_chunks
    arrays = [np.asarray(x, dtype=np.float64).ravel() for x in inputs]
    if schedule.collective == "all_gather":
        bounds = np.concatenate([[0], np.cumsum([len(a) for a in arrays])])
        full = [np.zeros(bounds[-1]) for _ in arrays]
        for r, a in enumerate(arrays):
            full[r][bounds[r]:bounds[r + 1]] = a
        holds0 = np.zeros((n, c, n), dtype=bool)
        holds0[np.arange(n), np.arange(n), np.arange(n)] = True
    else:
        lengths = {len(a) for a in arrays}
        if len(lengths) != 1:
            raise CommlabError(f"every rank needs a buffer of the same length, got lengths {sorted(lengths)}")
        bounds, full = chunk_bounds(lengths.pop(), c), arrays
        holds0 = np.zeros((n, c, n), dtype=bool)
        holds0[np.arange(n), :, np.arange(n)] = True
    width = int(np.diff(bounds).max()) if c else 0
    padded = np.zeros((n, c * width))
    padded[:, _flat_index(bounds)] = np.stack(full) if n else padded[:, :0]
    return bounds, padded.reshape(n, c, width), holds0


def _flat_index(bounds: np.ndarray) -> np.ndarray:
    """Where each element of the full buffer sits in the flattened [n_chunks, width] padded layout."""
    sizes = np.diff(bounds)
    width = int(sizes.max()) if len(sizes) else 0
    chunk_of = np.repeat(np.arange(len(sizes)), sizes)
    return chunk_of * width + (np.arange(int(bounds[-1])) - bounds[chunk_of])


def _unpad(padded: np.ndarray, bounds: np.ndarray) -> list[np.ndarray]:
    flat = padded.reshape(padded.shape[0], -1)[:, _flat_index(bounds)]
    return list(flat)


def _apply(step, buffers: np.ndarray, holds: np.ndarray | None) -> None:
    """All transfers of one step read the state before the step, then land."""
    table = np.array(step, dtype=np.int64)                       # [n_transfers, 5]: step src dst chunk reduce
    src, dst, chunk, add = table[:, 1], table[:, 2], table[:, 3], table[:, 4].astype(bool)
    data = buffers[src, chunk]                                  # [n_transfers, chunk_len], a copy
    copy = ~add
    buffers[dst[copy], chunk[copy]] = data[copy]
    np.add.at(buffers, (dst[add], chunk[add]), data[add])
    if holds is not None:
        held = holds[src, chunk]                                # [n_transfers, n_ranks], a copy
        holds[dst[copy], chunk[copy]] = held[copy]
        np.logical_or.at(holds, (dst[add], chunk[add]), held[add])


def _outputs(schedule: Schedule, full: list[np.ndarray], bounds: np.ndarray) -> list[np.ndarray]:
    if schedule.collective == "reduce_scatter":
        return [full[r][bounds[r]:bounds[r + 1]].copy() for r in range(schedule.n_ranks)]
    return full


def run(schedule: Schedule, inputs: list[np.ndarray], record: bool = True) -> Run:
    """Execute ``schedule`` on per-rank input buffers (the collective's own input convention).

    all_reduce and reduce_scatter take one equal-length buffer per rank; all_gather takes each rank's piece.
    """
    if len(inputs) != schedule.n_ranks:
        raise CommlabError(f"{schedule.algorithm} on {schedule.n_ranks} ranks needs {schedule.n_ranks} input "
                           f"buffers, got {len(inputs)}")
    bounds, buffers, holds0 = _layout(schedule, inputs)
    if not record:
        for step in schedule.steps:
            _apply(step, buffers, None)
        return Run(schedule, bounds, _outputs(schedule, _unpad(buffers, bounds), bounds), None, None)
    holds = holds0.copy()
    states = [_unpad(buffers, bounds)]
    all_holds = [holds0.copy()]
    for step in schedule.steps:
        _apply(step, buffers, holds)
        states.append(_unpad(buffers, bounds))
        all_holds.append(holds.copy())
    return Run(schedule, bounds, _outputs(schedule, states[-1], bounds), states, np.stack(all_holds))


def expected(schedule: Schedule, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The collective's numpy reference (commlab.collectives) for the same inputs."""
    arrays = [np.asarray(x, dtype=np.float64).ravel() for x in inputs]
    return spec(schedule.collective).reference(arrays)


def bytes_sent_per_rank(schedule: Schedule, nbytes: int | float) -> np.ndarray:
    """Bytes each rank sends when the full buffer is ``nbytes`` (chunks cut as np.array_split would)."""
    sizes = np.diff(chunk_bounds(int(nbytes), schedule.n_chunks))
    sent = np.zeros(schedule.n_ranks)
    for t in schedule.transfers():
        sent[t.src] += sizes[t.chunk]
    return sent
