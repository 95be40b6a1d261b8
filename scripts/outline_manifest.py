"""Write (or rewrite) the outline manifest of a chapter: its headings and its "After this chapter you can" promises.

The manifests live in ``tests/data/outlines/<notebook stem>.json``; ``tests/notebooks/test_chapter_outlines.py``
holds every chapter to its manifest, so that a section a chapter promises cannot disappear unnoticed. After you
change a chapter's outline on purpose, regenerate its manifest and commit it with the chapter::

    python scripts/outline_manifest.py chapters/06_tree_allreduce.ipynb     # one chapter
    python scripts/outline_manifest.py --all                                # every chapter

A heading's anchor is the one Jupyter's HTML export gives it (nbconvert's ``add_anchor``: spaces become ``-``,
characters a URL fragment cannot hold are percent-encoded), which is also what JupyterLab links to and what
``commlab book build`` writes; an explicit ``<a id="..."></a>`` in a markdown cell is an anchor too.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from urllib.parse import quote

import nbformat

REPO = Path(__file__).resolve().parents[1]
OUTLINES = REPO / "tests" / "data" / "outlines"
PROMISE_HEAD = "After this chapter you can"

_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:id|name)\s*=\s*["']([^"']+)["']""")
_BULLET = re.compile(r"^\s*[-*]\s+(.*)$")


def heading_anchor(text: str) -> str:
    """The id nbconvert's HTML export gives a markdown heading (``nbconvert.filters.strings._convert_header_id``)."""
    return quote(text.replace(" ", "-"), safe="?/:@!$&'()*+,;=")


def _markdown_lines(nb) -> list[str]:
    """Every line of every markdown cell, outside fenced code blocks."""
    lines: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            if _FENCE.match(line.strip()):
                fenced = not fenced
                continue
            if not fenced:
                lines.append(line)
    return lines


def headings(nb) -> list[dict]:
    """The markdown headings in order: level, text and anchor."""
    found = []
    for line in _markdown_lines(nb):
        m = _HEADING.match(line)
        if m:
            text = m.group(2).strip()
            found.append({"level": len(m.group(1)), "text": text, "anchor": heading_anchor(text)})
    return found


def anchors(nb) -> set[str]:
    """Every anchor a link may point at: the headings' and the explicit ``<a id=...>`` ones."""
    out = {h["anchor"] for h in headings(nb)}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            out.update(_EXPLICIT_ANCHOR.findall(cell.source))
    return out


def promises(nb) -> list[str]:
    """The bullets under "After this chapter you can", each joined into one line ([] if the chapter has none)."""
    for cell in nb.cells:
        if cell.cell_type != "markdown" or PROMISE_HEAD not in cell.source:
            continue
        rest = cell.source.split(PROMISE_HEAD, 1)[1]
        inline = rest.split("\n\n", 1)[0].lstrip("*: ").strip()
        if inline:
            return [" ".join(inline.split())]               # a promise written as one sentence, not a list
        after = rest.splitlines()[1:]
        items: list[str] = []
        for line in after:
            bullet = _BULLET.match(line)
            if bullet:
                items.append(bullet.group(1).strip())
            elif items and line.startswith((" ", "\t")) and line.strip():
                items[-1] += " " + line.strip()
            elif items and not line.strip():
                break
        return items
    return []


def manifest(path: Path) -> dict:
    """The outline of one notebook, as the manifest stores it."""
    nb = nbformat.read(path, as_version=4)
    rel = path.resolve().relative_to(REPO).as_posix()
    return {"notebook": rel, "headings": headings(nb), "promises": promises(nb)}


def manifest_path(notebook: Path) -> Path:
    return OUTLINES / f"{notebook.stem}.json"


def write(notebook: Path) -> Path:
    out = manifest_path(notebook)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(manifest(notebook), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="chapter notebooks (chapters/*.ipynb)")
    parser.add_argument("--all", action="store_true", help="every notebook under chapters/")
    args = parser.parse_args(argv)
    notebooks = sorted((REPO / "chapters").glob("*.ipynb")) if args.all else args.notebooks
    if not notebooks:
        parser.error("name one or more chapter notebooks, or --all")
    for nb_path in notebooks:
        if nb_path.suffix != ".ipynb" or not nb_path.is_file():
            print(f"error: {nb_path} is not a notebook file (expected chapters/NN_name.ipynb)", file=sys.stderr)
            return 2
        print(f"wrote {write(nb_path).relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
