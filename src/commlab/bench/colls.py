"""Each benchmarked collective fills in one small interface (nccl-tests' ``testColl``): where its input and
output live, out of place and in place, and the torch.distributed call that runs it.

In place follows nccl-tests' offsets: all_gather's input is the rank's own slot of the output buffer,
reduce_scatter's output is the rank's own slot of the input buffer, the others use one buffer for both.
torch.distributed has no out-of-place all_reduce, broadcast or reduce: out of place copies the input into
the output buffer first (as part of the timed iteration; a memory copy is small next to a network step).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from commlab.bench.config import DTYPES
from commlab.compat import all_gather_single, reduce_scatter_single

if TYPE_CHECKING:          # for the annotations only: importing commlab.bench does not import torch
    import torch


def _run(op: str, inp, out, rank: int, n_ranks: int, root: int, redop, in_place: bool) -> None:
    import torch.distributed as dist

    if not in_place and (op in ("all_reduce", "reduce") or (op == "broadcast" and rank == root)):
        out.copy_(inp)
    if op == "all_reduce":
        dist.all_reduce(out, op=redop)
    elif op == "reduce":
        dist.reduce(out, dst=root, op=redop)
    elif op == "broadcast":
        dist.broadcast(out, src=root)
    elif op == "all_gather":
        all_gather_single(out, inp)
    elif op == "reduce_scatter":
        reduce_scatter_single(out, inp, op=redop)
    elif op == "all_to_all":
        dist.all_to_all_single(out, inp)
    else:  # sendrecv: to rank + 1, from rank - 1 (nccl-tests' sendrecv_perf)
        ops = [dist.P2POp(dist.isend, inp, (rank + 1) % n_ranks), dist.P2POp(dist.irecv, out, (rank - 1) % n_ranks)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()


def _reduce_op(redop: str):
    import torch.distributed as dist

    return {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
            "max": dist.ReduceOp.MAX}[redop]


@dataclass
class Case:
    """The buffers of one size on this rank; ``run(in_place)`` is one iteration of the collective."""

    op: str
    count: int
    """nccl-tests' ``count`` column (elements per rank of the per-rank message)."""
    rank: int
    n_ranks: int
    root: int
    redop: str
    n_in: int
    n_out: int
    send: torch.Tensor
    recv: torch.Tensor
    work: torch.Tensor
    """The single buffer of the in-place variant."""
    reduce_op: object = None
    """The torch.distributed.ReduceOp of ``redop``."""

    @classmethod
    def make(cls, spec, count: int, rank: int, n_ranks: int, root: int, redop: str, dtype: str, device):
        import torch

        torch_dtype = getattr(torch, DTYPES[dtype][0])
        n_in, n_out = spec.input_count(count, n_ranks), spec.output_count(count, n_ranks)
        send = torch.zeros(n_in, dtype=torch_dtype, device=device)
        recv = torch.zeros(n_out, dtype=torch_dtype, device=device)
        work = torch.zeros(max(n_in, n_out), dtype=torch_dtype, device=device)
        return cls(spec.name, count, rank, n_ranks, root, redop, n_in, n_out, send, recv, work, _reduce_op(redop))

    def views(self, in_place: bool):
        """(input, output) tensors of one variant."""
        if not in_place:
            return self.send, self.recv
        slot = slice(self.rank * self.count, (self.rank + 1) * self.count)
        if self.op == "all_gather":
            return self.work[slot], self.work
        if self.op == "reduce_scatter":
            return self.work, self.work[slot]
        return self.work, self.work

    def run(self, in_place: bool) -> None:
        inp, out = self.views(in_place)
        _run(self.op, inp, out, self.rank, self.n_ranks, self.root, self.reduce_op, in_place)
