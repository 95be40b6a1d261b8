"""Every chapter keeps the outline it promises, and every link inside the book lands on something.

Each chapter has a manifest, ``tests/data/outlines/<stem>.json``: its headings (level, text, anchor) and the
bullets of its "After this chapter you can" list. The test fails when a heading of the manifest is gone or
out of order, when a promise is gone or reworded, and when a markdown link in any chapter or lab points at a
notebook that does not exist or at an anchor (a heading, or an explicit ``<a id=...>``) that the target
notebook does not have, across chapters too.

Changed a chapter's outline on purpose? Regenerate its manifest (one command) and commit it with the chapter::

    python scripts/outline_manifest.py chapters/06_tree_allreduce.ipynb     # or --all for every chapter
"""
from __future__ import annotations

import copy
import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("outline_manifest", REPO / "scripts" / "outline_manifest.py")
outline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outline)

CHAPTERS = sorted((REPO / "chapters").glob("*.ipynb"))
BOOK = CHAPTERS + sorted((REPO / "labs").glob("*.ipynb"))
# a markdown link: [text](target); CommonMark lets a target hold balanced parentheses, as heading anchors do
_LINK = re.compile(r"\]\(((?:[^()\s]|\([^()\s]*\))+)\)")


def outline_problems(nb, wanted: dict) -> list[str]:
    """What the notebook lost against its manifest: headings (present, same level, same order) and promises."""
    problems = []
    have = [(h["level"], h["text"]) for h in outline.headings(nb)]
    position = -1
    for h in wanted["headings"]:
        key = (h["level"], h["text"])
        if key not in have:
            problems.append(f"heading {'#' * h['level']} {h['text']!r} is gone")
            continue
        at = have.index(key)
        if at < position:
            problems.append(f"heading {h['text']!r} moved before a heading it used to follow")
        position = max(position, at)
    kept = outline.promises(nb)
    for promise in wanted["promises"]:
        if promise not in kept:
            problems.append(f"promise {promise[:70]!r}... is gone or reworded")
    return problems


def link_problems(path: Path, nb=None) -> list[str]:
    """Links of one notebook's markdown that point at a missing notebook or a missing anchor."""
    nb = nb if nb is not None else nbformat.read(path, as_version=4)
    problems = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for target in _LINK.findall(cell.source):
            if "://" in target or target.startswith("mailto:"):
                continue
            file_part, _, fragment = target.partition("#")
            if file_part and not file_part.endswith(".ipynb"):
                continue                                   # links to scripts, data files: not this test's
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.is_file():
                problems.append(f"{target}: no notebook {file_part}")
                continue
            if fragment and fragment not in outline.anchors(nbformat.read(dest, as_version=4)):
                problems.append(f"{target}: {dest.name} has no heading or <a id> with anchor {fragment!r}")
    return problems


def test_every_chapter_has_a_manifest_and_every_manifest_a_chapter():
    have = {p.stem for p in CHAPTERS}
    manifests = {p.stem for p in outline.OUTLINES.glob("*.json")}
    assert have - manifests == set(), ("chapters without an outline manifest (run scripts/outline_manifest.py): "
                                       f"{sorted(have - manifests)}")
    assert manifests - have == set(), f"manifests of chapters that no longer exist: {sorted(manifests - have)}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_keeps_its_outline(path):
    wanted = json.loads(outline.manifest_path(path).read_text(encoding="utf-8"))
    assert wanted["notebook"] == path.relative_to(REPO).as_posix()
    problems = outline_problems(nbformat.read(path, as_version=4), wanted)
    assert not problems, (f"{path.name} departs from tests/data/outlines/{path.stem}.json (if on purpose, run "
                          f"'python scripts/outline_manifest.py {path.relative_to(REPO)}'):\n  "
                          + "\n  ".join(problems))


@pytest.mark.parametrize("path", BOOK, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_links_land_on_a_notebook_and_an_anchor(path):
    problems = link_problems(path)
    assert not problems, f"{path.relative_to(REPO)} has broken links:\n  " + "\n  ".join(problems)


def test_the_checks_catch_a_lost_section_a_lost_promise_and_a_dangling_link():
    path = REPO / "chapters" / "02_infiniband_roce.ipynb"
    nb = nbformat.read(path, as_version=4)
    wanted = outline.manifest(path)
    assert outline_problems(nb, wanted) == [] and wanted["headings"] and wanted["promises"]
    broken = copy.deepcopy(nb)
    lost = wanted["headings"][1]
    for cell in broken.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace(f"{'#' * lost['level']} {lost['text']}", "lost")
            if outline.PROMISE_HEAD in cell.source:                      # reword the first promise
                cell.source = re.sub(r"^- ", "- (reworded) ", cell.source, count=1, flags=re.M)
    problems = outline_problems(broken, wanted)
    assert any(lost["text"] in p for p in problems) and any("promise" in p for p in problems), problems
    dangling = copy.deepcopy(nb)
    dangling.cells[0].source += "\n\nSee [the fabric](01_nvlink_nvswitch.ipynb#No-such-section)."
    assert any("No-such-section" in p for p in link_problems(path, dangling))


def test_anchors_are_the_ones_nbconvert_writes():
    nbconvert_strings = pytest.importorskip("nbconvert.filters.strings")
    for text in ("6.5 Ring or tree? The crossover", "Gb/s or GB/s: two traps", "The alpha-beta model"):
        assert outline.heading_anchor(text) == nbconvert_strings._convert_header_id(text)


_NUMBERED = re.compile(r"^(\d+)\.(\d+)\s")


def numbering_gaps(nb, chapter: int) -> list[str]:
    """Numbered sections of chapter ``chapter`` ("## 9.4 ...") that skip a number or repeat one: a section that
    went missing leaves its number's gap even when its manifest was regenerated after it went."""
    numbers = [int(m.group(2)) for h in outline.headings(nb) if h["level"] == 2
               for m in [_NUMBERED.match(h["text"])] if m and int(m.group(1)) == chapter]
    return [f"section {chapter}.{want} is missing (found {chapter}.{got} where {chapter}.{want} belongs)"
            for want, got in enumerate(numbers, start=1) if got != want][:1]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_numbered_sections_run_without_a_gap(path):
    if not path.stem[:2].isdigit():
        pytest.skip(f"{path.name} has no chapter number")
    assert numbering_gaps(nbformat.read(path, as_version=4), int(path.stem[:2])) == []


def test_a_lost_section_leaves_a_gap_the_test_names():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"## 9.{k} Part {k}") for k in (1, 2, 3, 5)])
    assert numbering_gaps(nb, 9) == ["section 9.4 is missing (found 9.5 where 9.4 belongs)"]
