"""One spec per collective, like nccl-tests' ``testColl``: reference result, sizes, bytes moved, bus factor.

Chapter 04 draws its before/after pictures from :meth:`CollectiveSpec.reference` and its table of bytes per
rank from :meth:`CollectiveSpec.bytes_sent_per_rank`; the benchmark checks every result against the reference.

Semantics follow torch.distributed: ``reduce_scatter`` gives rank r the r-th piece (``np.array_split`` order)
of the reduction; ``all_gather`` concatenates in rank order; ``all_to_all`` sends piece j of rank i to rank j,
whose output concatenates the pieces it got in rank order; ``sendrecv`` sends to rank r+1 and receives from
rank r-1 (mod N), as nccl-tests' sendrecv_perf does. For reduce and gather only the root's result is defined:
the references leave the other ranks' buffers as they were, but a backend may use them as scratch (gloo's
reduce leaves partial sums there), so checks compare the root only.

Sizes follow nccl-tests (``count`` is its `count` column, ``size_nbytes`` its `size` column, the numerator of
algbw): for all_reduce, broadcast, reduce and sendrecv ``size = count * itemsize``; for all_gather,
reduce_scatter, all_to_all, gather and scatter ``size = count * itemsize * N`` (the whole buffer).

Bus bandwidth factor F(N), ``busbw = algbw * F(N)`` (nccl-tests ``doc/PERFORMANCE.md``): all_reduce 2(N-1)/N;
broadcast and reduce 1; all_gather, reduce_scatter, all_to_all, gather, scatter (N-1)/N; sendrecv 1.

>>> busbw_factor("all_reduce", 8)
1.75
>>> spec("alltoall").name
'all_to_all'
>>> [float(x) for x in spec("all_reduce").bytes_sent_per_rank(1000, 4)]
[1500.0, 1500.0, 1500.0, 1500.0]
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from commlab.errors import CommlabError, check_n_ranks

OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter",
       "sendrecv")
REDOPS = ("sum", "prod", "min", "max")
_ALIASES = {"alltoall": "all_to_all", "allreduce": "all_reduce", "allgather": "all_gather",
            "reducescatter": "reduce_scatter", "send_recv": "sendrecv", "bcast": "broadcast"}
_REDUCERS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def canonical(op: str) -> str:
    """The canonical name of a collective; nccl-tests' spellings are accepted.

    >>> canonical("AllReduce"), canonical("alltoall"), canonical("all_gather_perf")
    ('all_reduce', 'all_to_all', 'all_gather')
    """
    key = str(op).strip().lower().replace("-", "_")
    key = key.removesuffix("_perf")
    key = _ALIASES.get(key.replace("_", ""), key) if key not in OPS else key
    if key not in OPS:
        raise CommlabError(f"unknown collective {op!r}; expected one of: {', '.join(OPS)}")
    return key


def _reduce(inputs: list[np.ndarray], redop: str) -> np.ndarray:
    if redop not in _REDUCERS:
        raise CommlabError(f"unknown reduction {redop!r}; expected one of: {', '.join(REDOPS)}")
    return _REDUCERS[redop].reduce(np.stack([np.asarray(x) for x in inputs]), axis=0)


def _pieces(buffer: np.ndarray, n_ranks: int) -> list[np.ndarray]:
    return np.array_split(np.asarray(buffer), n_ranks)


def _ref_broadcast(inputs, root, redop):
    return [np.array(inputs[root]) for _ in inputs]


def _ref_reduce(inputs, root, redop):
    total = _reduce(inputs, redop)
    return [total if r == root else np.array(x) for r, x in enumerate(inputs)]


def _ref_all_reduce(inputs, root, redop):
    total = _reduce(inputs, redop)
    return [total.copy() for _ in inputs]


def _ref_all_gather(inputs, root, redop):
    whole = np.concatenate([np.asarray(x) for x in inputs])
    return [whole.copy() for _ in inputs]


def _ref_reduce_scatter(inputs, root, redop):
    return [np.array(piece) for piece in _pieces(_reduce(inputs, redop), len(inputs))]


def _ref_all_to_all(inputs, root, redop):
    n = len(inputs)
    split = [_pieces(x, n) for x in inputs]
    return [np.concatenate([split[i][j] for i in range(n)]) for j in range(n)]


def _ref_gather(inputs, root, redop):
    whole = np.concatenate([np.asarray(x) for x in inputs])
    return [whole if r == root else np.array(x) for r, x in enumerate(inputs)]


def _ref_scatter(inputs, root, redop):
    return [np.array(piece) for piece in _pieces(inputs[root], len(inputs))]


def _ref_sendrecv(inputs, root, redop):
    n = len(inputs)
    return [np.array(inputs[(r - 1) % n]) for r in range(n)]


def _ring_all_reduce_sent(nbytes, n, root):
    """Ring all-reduce: N-1 reduce-scatter steps and N-1 all-gather steps of S/N each: 2(N-1)/N * S."""
    return np.full(n, 2 * (n - 1) / n * nbytes)


def _ring_share_sent(nbytes, n, root):
    """Ring all-gather / reduce-scatter / pairwise all-to-all: (N-1)/N of the whole buffer S per rank."""
    return np.full(n, (n - 1) / n * nbytes)


def _chain_from_root_sent(nbytes, n, root):
    """Pipelined broadcast along the ring from the root: every rank but the last in the chain sends S."""
    sent = np.full(n, float(nbytes))
    if n > 1:
        sent[(root - 1) % n] = 0.0
    else:
        sent[:] = 0.0
    return sent


def _chain_to_root_sent(nbytes, n, root):
    """Pipelined reduce along the ring towards the root: every rank but the root sends S."""
    sent = np.full(n, float(nbytes))
    sent[root] = 0.0
    return sent


def _chain_to_root_received(nbytes, n, root):
    """Reduce: the chain starts at root+1, which receives nothing; every other rank receives S."""
    received = np.full(n, float(nbytes))
    received[(root + 1) % n] = 0.0
    if n == 1:
        received[:] = 0.0
    return received


def _from_root_received(nbytes, n, root):
    received = np.full(n, float(nbytes))
    received[root] = 0.0
    return received


def _gather_sent(nbytes, n, root):
    """Gather: each non-root rank sends its S/N piece straight to the root."""
    sent = np.full(n, nbytes / n)
    sent[root] = 0.0
    return sent


def _gather_received(nbytes, n, root):
    received = np.zeros(n)
    received[root] = (n - 1) / n * nbytes
    return received


def _sendrecv_moved(nbytes, n, root):
    return np.full(n, float(nbytes) if n > 1 else 0.0)


def _times_n(count: int, n: int) -> int:
    return count * n


def _same(count: int, n: int) -> int:
    return count


@dataclass(frozen=True)
class CollectiveSpec:
    """What one collective is; the shared loops (benchmark, checks, tables) are written once elsewhere."""

    name: str
    rooted: bool
    reduces: bool
    has_in_place: bool
    whole_buffer_size: bool
    """True where nccl-tests' `size` column is the whole buffer (count * itemsize * N)."""
    factor: Callable[[int], float]
    _reference: Callable
    _sent: Callable
    _received: Callable
    _input_count: Callable[[int, int], int]
    _output_count: Callable[[int, int], int]
    formula: str
    """The per-rank traffic in words, with the formula, for tables and docs."""

    def busbw_factor(self, n_ranks: int) -> float:
        """nccl-tests' F(N): busbw = algbw * F(N)."""
        return float(self.factor(check_n_ranks(n_ranks)))

    def reference(self, inputs: list[np.ndarray], root: int = 0, redop: str = "sum") -> list[np.ndarray]:
        """Per-rank outputs of the collective, computed with numpy (the independent reference)."""
        n = check_n_ranks(len(inputs))
        self._check_root(root, n)
        return self._reference(list(inputs), root, redop)

    def input_count(self, count: int, n_ranks: int) -> int:
        """Elements in each rank's input buffer for nccl-tests' `count` (the root's, for scatter)."""
        return self._input_count(count, check_n_ranks(n_ranks))

    def output_count(self, count: int, n_ranks: int) -> int:
        """Elements in each rank's output buffer for nccl-tests' `count` (the root's, for gather)."""
        return self._output_count(count, check_n_ranks(n_ranks))

    def size_nbytes(self, count: int, itemsize: int, n_ranks: int) -> int:
        """nccl-tests' `size` column: what algbw divides by the time."""
        return count * itemsize * (check_n_ranks(n_ranks) if self.whole_buffer_size else 1)

    def bytes_sent_per_rank(self, nbytes: float, n_ranks: int, root: int = 0) -> np.ndarray:
        """Bytes each rank sends under the ring / pipelined-chain implementation; nbytes is the `size`."""
        n = check_n_ranks(n_ranks)
        self._check_root(root, n)
        return self._sent(nbytes, n, root)

    def bytes_received_per_rank(self, nbytes: float, n_ranks: int, root: int = 0) -> np.ndarray:
        """Bytes each rank receives under the same implementation."""
        n = check_n_ranks(n_ranks)
        self._check_root(root, n)
        return self._received(nbytes, n, root)

    def _check_root(self, root: int, n: int) -> None:
        if not isinstance(root, (int, np.integer)) or not 0 <= root < n:
            raise CommlabError(f"root must be a rank from 0 to {n - 1}, got {root!r}")


def _specs() -> dict[str, CollectiveSpec]:
    ring2 = lambda n: 2 * (n - 1) / n  # noqa: E731
    share = lambda n: (n - 1) / n  # noqa: E731
    one = lambda n: 1.0  # noqa: E731
    table = (
        ("broadcast", True, False, True, False, one, _ref_broadcast, _chain_from_root_sent, _from_root_received,
         _same, _same, "every rank but the last in the chain sends S; every rank but the root receives S "
         "(pipelined chain from the root)"),
        ("reduce", True, True, True, False, one, _ref_reduce, _chain_to_root_sent, _chain_to_root_received,
         _same, _same, "every rank but the root sends S; every rank but the first in the chain (root+1) receives S "
         "(pipelined chain towards the root)"),
        ("all_reduce", False, True, True, False, ring2, _ref_all_reduce, _ring_all_reduce_sent,
         _ring_all_reduce_sent, _same, _same, "each rank sends and receives 2(N-1)/N * S (ring)"),
        ("all_gather", False, False, True, True, share, _ref_all_gather, _ring_share_sent, _ring_share_sent,
         _same, _times_n, "each rank sends and receives (N-1)/N * S, S the gathered buffer (ring)"),
        ("reduce_scatter", False, True, True, True, share, _ref_reduce_scatter, _ring_share_sent,
         _ring_share_sent, _times_n, _same, "each rank sends and receives (N-1)/N * S, S the input buffer (ring)"),
        ("all_to_all", False, False, False, True, share, _ref_all_to_all, _ring_share_sent, _ring_share_sent,
         _times_n, _times_n, "each rank sends (N-1)/N * S and receives as much (pairwise)"),
        ("gather", True, False, False, True, share, _ref_gather, _gather_sent, _gather_received,
         _same, _times_n, "each non-root rank sends S/N; the root receives (N-1)/N * S"),
        ("scatter", True, False, False, True, share, _ref_scatter, _gather_received, _gather_sent,
         _times_n, _same, "the root sends (N-1)/N * S; each other rank receives S/N"),
        ("sendrecv", False, False, False, False, one, _ref_sendrecv, _sendrecv_moved, _sendrecv_moved,
         _same, _same, "each rank sends S to rank r+1 and receives S from rank r-1"),
    )
    return {row[0]: CollectiveSpec(*row) for row in table}


def spec(op: str) -> CollectiveSpec:
    """The spec of a collective by name (nccl-tests spellings accepted)."""
    return _specs()[canonical(op)]


def specs() -> tuple[CollectiveSpec, ...]:
    """All specs in the book's order."""
    table = _specs()
    return tuple(table[name] for name in OPS)


def busbw_factor(op: str, n_ranks: int) -> float:
    """nccl-tests' bus bandwidth factor F(N) for a collective (see the module docstring).

    >>> busbw_factor("reduce_scatter", 4), busbw_factor("broadcast", 4)
    (0.75, 1.0)
    """
    return spec(op).busbw_factor(n_ranks)


def contributions(op: str, n_ranks: int, length: int, root: int = 0) -> np.ndarray:
    """Which source ranks' data reach each output element: bool ``[n_ranks (output rank), length_out, n_ranks
    (source rank)]``.

    Computed from :meth:`CollectiveSpec.reference` alone, on indicator inputs: for each source rank s, rank s
    holds ``length`` ones and every other rank zeros (e_s); then ``contributions[q, j, s]`` is
    ``reference(e_s, root)[q][j] != 0``. Every collective here copies or sums its inputs with coefficient 1, so
    a sum of indicators is non-zero exactly where s's data arrives. ``length`` is each rank's input length;
    ``length_out`` is the longest output, and shorter outputs (for example the non-root ranks of ``gather``,
    which keep their input) are padded with False: ``len(reference(...)[q])`` is rank q's real length. For
    ``reduce`` and ``gather`` only the root's row is the collective's result (see the module docstring).

    >>> contributions("all_to_all", 2, 4)[0].astype(int).tolist()
    [[1, 0], [1, 0], [0, 1], [0, 1]]
    """
    n = check_n_ranks(n_ranks)
    if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 1:
        raise CommlabError(f"length must be a whole number of elements >= 1, got {length!r}")
    reference = spec(op).reference
    per_source = [reference([np.full(int(length), float(rank == s)) for rank in range(n)], root=root)
                  for s in range(n)]
    width = max(len(out) for outputs in per_source for out in outputs)
    reached = np.zeros((n, width, n), dtype=bool)
    for s, outputs in enumerate(per_source):
        for q, out in enumerate(outputs):
            reached[q, :len(out), s] = np.asarray(out) != 0
    return reached
