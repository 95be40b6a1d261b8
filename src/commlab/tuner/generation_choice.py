"""Which generation of NCCL's tuner a log is replayed with: the one of the NCCL version it names, or the era its
format implies, saying what was assumed.

>>> generation_for((2, 8, 3)).generation.name, generation_for((2, 30, 7)).generation.name
('2.4-2.8', '2.24-2.30')
>>> choice = generation_for(None)
>>> choice.assumed, choice.generation.name
(True, '2.24-2.30')
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.tuner.generation import Generation, generations


@dataclass(frozen=True)
class GenerationChoice:
    """The generation a log is replayed with, and why."""

    generation: Generation
    version: tuple[int, ...] | None
    assumed: bool
    """True where the log names no NCCL version (or one outside every generation) and the generation is a guess."""
    why: str

    def to_json(self) -> dict:
        return {"generation": self.generation.name, "tag": self.generation.tag,
                "nccl_version": None if self.version is None else ".".join(map(str, self.version)),
                "assumed": self.assumed, "why": self.why}


def generation_for(version: tuple[int, ...] | None, log_format: str | None = None) -> GenerationChoice:
    """The generation of NCCL ``version`` (``(2, 8, 3)``); without one, the era the log's format implies: the
    legacy table (an ``error`` column, nccl-tests before 2.0, 2019) the oldest generation, else the current one.
    Either way the choice says it was assumed."""
    gens = generations()
    if version is not None:
        shown = ".".join(map(str, version))
        for g in gens:
            if g.covers(version):
                return GenerationChoice(g, tuple(version), False, f"the log names NCCL {shown}")
        if tuple(version[:2]) < gens[0].first:
            return GenerationChoice(gens[0], tuple(version), True, f"NCCL {shown} predates every generation read "
                                    f"(the oldest is {gens[0].name}); assumed {gens[0].name}")
        return GenerationChoice(gens[-1], tuple(version), True, f"NCCL {shown} is newer than the generations read "
                                f"(the newest is {gens[-1].name}, {gens[-1].tag}); assumed {gens[-1].name}")
    if log_format == "legacy":
        return GenerationChoice(gens[0], None, True, f"the log names no NCCL version; its legacy table (an error "
                                f"column, nccl-tests before 2.0) implies an old NCCL: assumed {gens[0].name}")
    return GenerationChoice(gens[-1], None, True, f"the log names no NCCL version: assumed the current "
                            f"generation {gens[-1].name} ({gens[-1].tag})")


def generation_note(version: tuple[int, ...] | None) -> str:
    """A note when a named NCCL version is replayed with an older generation than the current one ("" otherwise:
    the current generation, or no version, which :class:`GenerationChoice` reports itself)."""
    if version is None:
        return ""
    choice = generation_for(version)
    if choice.generation.current and not choice.assumed:
        return ""
    return (f"{choice.why}: replayed with the tuner of NCCL {choice.generation.name} ({choice.generation.tag} "
            f"{choice.generation.source}), not today's")
