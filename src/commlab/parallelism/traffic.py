"""What a training step sends: one item per (strategy, primitive, when), and its time on a link (chapter 09).

``nbytes_per_call`` follows nccl-tests' ``size`` column and :mod:`commlab.cost`: all_reduce the tensor;
all_gather / reduce_scatter the whole gathered tensor; all_to_all each rank's whole send buffer; sendrecv the
message. What one rank puts on its link per call (ring and pairwise implementations):

| primitive | bytes sent per rank per call |
| --- | --- |
| all_reduce | 2 (N-1)/N * S (reduce-scatter then all-gather; Patarasuk and Yuan 2009) |
| all_gather, reduce_scatter, all_to_all | (N-1)/N * S |
| sendrecv | S |

Summed over the N ranks an all-reduce moves exactly 2(N-1) S; "2 S N" is its limit for large N.

>>> item = TrafficItem("DP", "all_reduce", "gradients", "once per step", nbytes_per_call=14 * 10**9,
...                    calls_per_step=1, n_ranks=8)
>>> item.bytes_per_rank_per_step / 1e9, item.bytes_all_ranks_per_step / 1e9     # 2 (7/8) S; 2 (N-1) S
(24.5, 196.0)
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from commlab.cost import collective_time_s
from commlab.errors import CommlabError, check_choice
from commlab.hardware import Link, link as find_link

PRIMITIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "sendrecv")


def sent_per_rank_factor(primitive: str, n_ranks: int) -> float:
    """Bytes one rank sends per call, as a multiple of the call's nbytes (table in the module docstring)."""
    check_choice("primitive", primitive, PRIMITIVES)
    if primitive == "sendrecv":
        return 1.0
    ring = (n_ranks - 1) / n_ranks
    return 2 * ring if primitive == "all_reduce" else ring


@dataclass(frozen=True)
class TrafficItem:
    """One kind of communication in a training step, seen from one rank."""

    strategy: str          # "DP", "ZeRO-1", "ZeRO-2", "ZeRO-3", "TP", "SP", "PP", "EP"
    primitive: str         # one of PRIMITIVES
    what: str              # "gradients", "parameters", "activations", "activation gradients", "tokens"
    when: str              # "once per step, after backward", "per layer, forward", ...
    nbytes_per_call: int   # the collective's buffer S (see the module docstring)
    calls_per_step: int
    n_ranks: int           # ranks in the group the collective runs over

    def __post_init__(self) -> None:
        check_choice("primitive", self.primitive, PRIMITIVES)
        for name in ("nbytes_per_call", "calls_per_step"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise CommlabError(f"TrafficItem.{name} must be a whole number >= 0, got {value!r}")
        if not isinstance(self.n_ranks, int) or self.n_ranks < 2:
            raise CommlabError(f"TrafficItem.n_ranks must be a whole number >= 2 (a group that talks), "
                               f"got {self.n_ranks!r}")

    @property
    def bytes_per_rank_per_call(self) -> float:
        return sent_per_rank_factor(self.primitive, self.n_ranks) * self.nbytes_per_call

    @property
    def bytes_per_rank_per_step(self) -> float:
        return self.bytes_per_rank_per_call * self.calls_per_step

    @property
    def bytes_all_ranks_per_step(self) -> float:
        """Summed over the group's ranks (sendrecv: the one sender of each pair)."""
        senders = 1 if self.primitive == "sendrecv" else self.n_ranks
        return self.bytes_per_rank_per_step * senders

    def time_per_call_s(self, link: Link | str) -> float:
        """Alpha-beta time of one call on ``link`` (ring for the collectives, one message for sendrecv)."""
        return float(collective_time_s(self.primitive, self.nbytes_per_call, self.n_ranks, find_link(link)))

    def time_s(self, link: Link | str) -> float:
        """Time of this item in one step if nothing overlaps it: calls_per_step x time per call."""
        return self.calls_per_step * self.time_per_call_s(link)


@dataclass(frozen=True)
class Traffic:
    """All the communication of one training step, item by item."""

    items: tuple[TrafficItem, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))

    def __iter__(self) -> Iterator[TrafficItem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(self.items + tuple(other))

    def only(self, strategy: str) -> Traffic:
        """The items of one strategy ("TP", "DP", ...)."""
        return Traffic(tuple(item for item in self.items if item.strategy == strategy))

    @property
    def bytes_per_rank_per_step(self) -> float:
        """Upper bound over ranks: each item counted for a rank that takes part in it."""
        return sum(item.bytes_per_rank_per_step for item in self.items)

    def time_s(self, link: Link | str) -> float:
        """Serial time of everything on one link: the cost if no communication overlapped compute."""
        return sum(item.time_s(link) for item in self.items)

    def rows(self, link: Link | str | None = None) -> list[dict[str, object]]:
        """One dict per item for a table; with ``link``, the time of the item on it."""
        rows = []
        for item in self.items:
            row = {"strategy": item.strategy, "primitive": item.primitive, "what": item.what, "when": item.when,
                   "nbytes_per_call": item.nbytes_per_call, "calls_per_step": item.calls_per_step,
                   "n_ranks": item.n_ranks, "bytes_per_rank_per_step": item.bytes_per_rank_per_step}
            if link is not None:
                row["time_s"] = item.time_s(link)
            rows.append(row)
        return rows
