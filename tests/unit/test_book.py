"""book.toml: loading and validation, the repository check, the table of contents, ``commlab book``.

The repository's own manifest is checked first: every notebook under chapters/ and labs/ listed exactly
once, every listed notebook present. The rest runs on small synthetic books under tmp_path.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from commlab.book import Book, Part, check, find_root, load, loads, notebook_title
from commlab.cli import main
from commlab.errors import CommlabError

REPO = Path(__file__).resolve().parents[2]

GOOD = """
[book]
title = "Tiny"
authors = ["A", "B"]
language = "en"

[[part]]
title = "One"
chapters = ["chapters/00_welcome.ipynb", "chapters/01_wires.ipynb"]
labs = ["labs/p2p.ipynb"]

[[part]]
title = "Two"
chapters = ["chapters/02_ring.ipynb"]
"""


def write_notebook(path: Path, heading: str | None = None) -> Path:
    """A minimal nbformat-4 notebook file, with a Markdown heading when given."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": [f"# {heading}\n", "Some text."]}] if heading else []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def make_book(root: Path, manifest: str = GOOD, notebooks: tuple[str, ...] | None = None) -> Path:
    """Write ``manifest`` and the notebooks it lists (or ``notebooks``) under ``root``."""
    (root / "book.toml").write_text(manifest)
    listed = re.findall(r'"((?:chapters|labs)/[^"]+)"', manifest) if notebooks is None else notebooks
    for nb in listed:
        write_notebook(root / nb, heading=f"Title of {Path(nb).stem}")
    return root


# --- the repository ------------------------------------------------------------------------------------

def test_repository_book_lists_every_notebook_once_and_nothing_missing():
    problems = check(REPO)
    assert problems == [], "book.toml and the notebooks disagree:\n" + "\n".join(problems)


def test_repository_book_loads_with_a_first_part():
    book = load(REPO / "book.toml")
    assert book.title.strip() and book.parts[0].title == "Getting started"
    assert book.notebooks()[0] == "chapters/00_welcome.ipynb"


# --- loading -------------------------------------------------------------------------------------------

def test_loads_keeps_reading_order_part_by_part_chapters_before_labs():
    book = loads(GOOD)
    assert book.notebooks() == ("chapters/00_welcome.ipynb", "chapters/01_wires.ipynb", "labs/p2p.ipynb",
                                "chapters/02_ring.ipynb")
    assert book.authors == ("A", "B") and book.language == "en"
    assert [p.title for p in book.parts] == ["One", "Two"] and book.parts[1].labs == ()


@pytest.mark.parametrize("manifest, message", [
    ('[[part]]\ntitle = "x"\nchapters = []', r"no \[book\] table"),
    ('[book]\nauthors = ["a"]\n[[part]]\ntitle = "x"', r"\[book\] has no title"),
    ('[book]\ntitle = ""\n[[part]]\ntitle = "x"', r"title must be a non-empty string, got ''"),
    ('[book]\ntitle = "t"\n[[part]]\nchapters = ["chapters/a.ipynb"]', r"part.. number 1 has no title"),
    ('[book]\ntitle = "t"', r"lists no \[\[part\]\]"),
    ('[book]\ntitle = "t"\n[[part]]\ntitle = "x"\nchapters = ["notes/a.ipynb"]',
     r"'notes/a.ipynb' is not under chapters/"),
    ('[book]\ntitle = "t"\n[[part]]\ntitle = "x"\nlabs = ["chapters/a.ipynb"]',
     r"'chapters/a.ipynb' is not under labs/"),
    ('[book]\ntitle = "t"\n[[part]]\ntitle = "x"\nchapters = ["chapters/a.md"]', r"not a notebook"),
    ('[book]\ntitle = "t"\n[[part]]\ntitle = "x"\nchapters = ["/chapters/a.ipynb"]', r"relative path"),
    ('[book]\ntitle = "t"\n[[part]]\ntitle = "x"\nchapters = ["chapters/../a.ipynb"]', r"no '\.\.'"),
    ('[book]\ntitle = "t"\n[[part]]\ntitle = "x"\nchapters = "chapters/a.ipynb"', r"must be a list of paths"),
    ('[book]\ntitle = "t"\n[[part]]\ntitle = "x"\nchapter = ["chapters/a.ipynb"]', r"unknown key\(s\) chapter"),
    ('[book]\ntitle = "t"\nauthor = "me"\n[[part]]\ntitle = "x"', r"unknown key\(s\) author; accepted"),
    ('[book]\ntitle = "t"\nauthors = "me"\n[[part]]\ntitle = "x"', r"authors must be a list of names, got 'me'"),
    ('[book]\ntitle = "t"\n[[part]\ntitle = "x"', r"not valid TOML"),
])
def test_loads_rejects_bad_manifests_with_a_message_naming_the_problem(manifest, message):
    with pytest.raises(CommlabError, match=message):
        loads(manifest)


def test_dataclasses_validate_directly():
    with pytest.raises(CommlabError, match="title"):
        Part(title="  ")
    with pytest.raises(CommlabError, match="lists no"):
        Book(title="t", parts=())


def test_load_missing_file_names_it(tmp_path):
    with pytest.raises(CommlabError, match="does not exist"):
        load(tmp_path / "nope.toml")


def test_find_root_walks_up_from_a_notebook_folder(tmp_path, monkeypatch):
    make_book(tmp_path)
    monkeypatch.chdir(tmp_path / "chapters")
    assert find_root() == tmp_path.resolve()
    assert load().root == tmp_path.resolve()  # a notebook calls load() with cwd = its own folder


def test_find_root_without_manifest_raises(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    if any((folder / "book.toml").exists() for folder in (tmp_path, *tmp_path.parents)):
        pytest.skip("a book.toml exists above the temporary folder")
    with pytest.raises(CommlabError, match="no book.toml"):
        find_root(tmp_path / "a" / "b")


# --- check ---------------------------------------------------------------------------------------------

def test_check_is_empty_for_a_consistent_book(tmp_path):
    make_book(tmp_path)
    (tmp_path / "chapters" / ".ipynb_checkpoints").mkdir()
    write_notebook(tmp_path / "chapters" / ".ipynb_checkpoints" / "00_welcome-checkpoint.ipynb")
    assert check(tmp_path) == []


def test_check_reports_unlisted_duplicate_and_absent_notebooks(tmp_path):
    manifest = GOOD.replace('labs = ["labs/p2p.ipynb"]', 'labs = ["labs/p2p.ipynb", "labs/gone.ipynb"]')
    manifest = manifest.replace('chapters = ["chapters/02_ring.ipynb"]',
                                'chapters = ["chapters/02_ring.ipynb", "chapters/00_welcome.ipynb"]')
    make_book(tmp_path, manifest, notebooks=("chapters/00_welcome.ipynb", "chapters/01_wires.ipynb",
                                             "labs/p2p.ipynb", "chapters/02_ring.ipynb"))
    write_notebook(tmp_path / "labs" / "extra" / "deep.ipynb")
    problems = check(tmp_path)
    assert len(problems) == 3, problems
    assert "chapters/00_welcome.ipynb is listed 2 times" in problems[0]
    assert "labs/gone.ipynb is listed in book.toml (part 'One') but does not exist" in problems[1]
    assert "labs/extra/deep.ipynb is not listed in book.toml" in problems[2]


def test_check_reports_a_manifest_that_does_not_load(tmp_path):
    (tmp_path / "book.toml").write_text('[book]\ntitle = "t"\n')
    assert len(check(tmp_path)) == 1 and "no [[part]]" in check(tmp_path)[0]


# --- table of contents ---------------------------------------------------------------------------------

def test_notebook_title_reads_the_first_heading_and_falls_back_to_the_name(tmp_path):
    path = write_notebook(tmp_path / "05_ring_allreduce.ipynb", heading="Ring AllReduce ##")
    assert notebook_title(path) == "Ring AllReduce"
    assert notebook_title(write_notebook(tmp_path / "03_point_to_point.ipynb")) == "Point to point"
    assert notebook_title(tmp_path / "missing_lab.ipynb") == "Missing lab"


def test_toc_markdown_links_resolve_from_the_chapters_folder(tmp_path):
    book = load(make_book(tmp_path) / "book.toml")
    text = book.toc_markdown()
    links = re.findall(r"\[([^\]]+)\]\(([^)]+)\)", text)
    assert [title for title, _ in links] == [f"Title of {Path(nb).stem}" for nb in book.notebooks()]
    for _, target in links:
        assert (tmp_path / "chapters" / target).resolve().is_file(), target
    assert "**Part 2. Two**" in text and "- Lab: [Title of p2p](../labs/p2p.ipynb)" in text
    write_notebook(tmp_path / "labs" / "p2p.ipynb", heading="Lab: point to point")
    assert "- [Lab: point to point](../labs/p2p.ipynb)" in book.toc_markdown()  # no "Lab: Lab:"


def test_toc_html_links_and_escaping(tmp_path):
    manifest = GOOD.replace('title = "One"', 'title = "Wires & <links>"')
    book = load(make_book(tmp_path, manifest) / "book.toml")
    nav = book.toc_html(relative_to="", suffix=".html")
    assert "Wires &amp; &lt;links&gt;" in nav and "<links>" not in nav
    hrefs = re.findall(r'href="([^"]+)"', nav)
    assert hrefs == [nb.replace(".ipynb", ".html") for nb in book.notebooks()]


# --- command line --------------------------------------------------------------------------------------

def test_cli_check_exit_status_follows_the_problems(tmp_path, capsys):
    make_book(tmp_path)
    assert main(["book", "--manifest", str(tmp_path / "book.toml"), "check"]) == 0
    write_notebook(tmp_path / "labs" / "stray.ipynb")
    assert main(["book", "--manifest", str(tmp_path / "book.toml"), "check"]) == 1
    assert "labs/stray.ipynb is not listed" in capsys.readouterr().out


def test_cli_user_errors_are_one_line_and_exit_2(tmp_path, capsys):
    make_book(tmp_path)
    assert main(["book", "--manifest", str(tmp_path / "book.toml"), "build", "--timeout", "soon"]) == 2
    assert main(["book", "--manifest", str(tmp_path / "nope.toml"), "toc"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("commlab book: error: ") for line in err)
    assert "'soon'" in err[0] and "nope.toml" in err[1]


def test_cli_toc_prints_root_relative_links(tmp_path, capsys):
    make_book(tmp_path)
    assert main(["book", "--manifest", str(tmp_path / "book.toml"), "toc"]) == 0
    assert "- Lab: [Title of p2p](labs/p2p.ipynb)" in capsys.readouterr().out
