"""Chapter 10: every item of the seed article's self-check list maps to exercises that exist."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from commlab import exercises as ex

#: the seed article's "Self-check list" section, quoted in the repository
SEED_FILE = Path(__file__).resolve().parents[1] / "data" / "seed_self_check.txt"


def _seed_items() -> list[str]:
    """The items between the seed's "Self-check list" heading and "References", one per "- Can ..."."""
    text = SEED_FILE.read_text(encoding="utf-8")
    start = text.rindex("Self-check list")
    end = text.index("References", start)
    section = "".join(c for c in text[start + len("Self-check list"):end] if unicodedata.category(c) != "So")
    body = " ".join(section.split())  # drops the emoji headings; items wrap across lines in the seed
    items = [item.strip(" -") for item in re.split(r"(?:^|\s)- (?=Can )", body) if item.strip(" -")]
    assert len(items) >= 10, items
    return items


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def test_every_seed_item_is_mapped_in_order_and_in_our_own_words():
    from commlab.exercises.selfcheck import SEED_KEYWORDS

    seed = _seed_items()
    assert len(ex.SELF_CHECK) == len(seed) == len(SEED_KEYWORDS)
    for (ours, _, _), theirs, word in zip(ex.SELF_CHECK, seed, SEED_KEYWORDS):
        assert word.casefold() in ours.casefold() and word.casefold() in theirs.casefold(), (ours, theirs)
        assert _squash(ours) != _squash(theirs), f"copied from the seed word for word: {ours}"


def test_mapped_exercises_exist_and_chapters_are_valid():
    known = set(ex.ids())
    for item, chapter, ids in ex.SELF_CHECK:
        assert chapter in ex.CHAPTERS and ids, item
        assert set(ids) <= known, (item, set(ids) - known)
    used = {i for _, _, ids in ex.SELF_CHECK for i in ids}
    assert set(ex.ids("10")) <= used
