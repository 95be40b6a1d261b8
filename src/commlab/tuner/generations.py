"""NCCL's tuner by release, in three files of one idea each, their public names gathered here:

* :mod:`commlab.tuner.generation`: one generation's tables, rules and chunk sizes, read from its data file
  (:class:`Generation`, :func:`load_generation`, :func:`generations`, :func:`current`);
* :mod:`commlab.tuner.generation_choice`: which generation a log gets, or which it assumed
  (:class:`GenerationChoice`, :func:`generation_for`, :func:`generation_note`);
* :mod:`commlab.tuner.replay`: the replay of a generation (:func:`replay`, :func:`tuning_table`).

>>> generation_for((2, 8, 3)).generation.name, generation_for((2, 30, 7)).generation.name
('2.4-2.8', '2.24-2.30')
"""
from __future__ import annotations

from commlab.tuner.generation import (ARCH_ROWS, CHUNKING, GENERATION_NAMES, HWS, RULES, Generation, current,
                                      generations, load_generation)
from commlab.tuner.generation_choice import GenerationChoice, generation_for, generation_note
from commlab.tuner.nccl_names import NODE_INDEX
from commlab.tuner.replay import TREE_CORRECTION_BELOW, Entry, nvls_pick_us, replay, tuning_table

__all__ = ["ARCH_ROWS", "CHUNKING", "GENERATION_NAMES", "HWS", "NODE_INDEX", "RULES", "TREE_CORRECTION_BELOW", "Entry",
           "Generation", "GenerationChoice", "current", "generation_for", "generation_note", "generations",
           "load_generation", "nvls_pick_us", "replay", "tuning_table"]
