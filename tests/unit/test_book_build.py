"""The static HTML edition: every page written, every relative link resolving, nothing fetched from the
network when a local MathJax exists, a ``to_jshtml`` animation embedded, widgets replaced by a note.

Links and external resources are read back with the standard library's HTML parser, independently of
how the build wrote them. Executing builds start a real kernel (about a second each).
"""
from __future__ import annotations

import html
import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from commlab.book import Book, Part, listing_problems, load, loads
from commlab.book import mathjax as book_mathjax
from commlab.book.build import BuildConfig, build
from commlab.book.widgets import NOTE_CHECK, NOTE_LIVE
from commlab.cli import main
from commlab.errors import CommlabError

REPO = Path(__file__).resolve().parents[2]
RING_CHAPTER = "chapters/05_ring_allreduce.ipynb"
N_FRAMES = 4
ANIMATION = f"""import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.animation import FuncAnimation
from IPython.display import HTML, display
fig, ax = plt.subplots(figsize=(2, 2))
(line,) = ax.plot([0, 1], [0, 0])
anim = FuncAnimation(fig, lambda k: line.set_ydata([0, k]), frames={N_FRAMES})
display(HTML(anim.to_jshtml()))
plt.close(fig)"""
#: an exercise as commlab.exercises draws it: a question, an answer box and a Check button
EXERCISE = """import ipywidgets as w
w.VBox([w.HTMLMath(value="<b>ex.1</b>: How many bytes leave each rank, $2(N-1)/N \\\\cdot S$?"),
        w.HBox([w.Text(description="Answer:", placeholder="bytes"), w.Button(description="Check")])])"""
MANIFEST = """
[book]
title = "Tiny & book"
authors = ["A. Author"]
[[part]]
title = "First part"
chapters = ["chapters/00_intro.ipynb", "chapters/01_anim.ipynb"]
[[part]]
title = "Second part"
labs = ["labs/lab_one.ipynb"]
"""


class Links(HTMLParser):
    """Collects (tag, attribute, value) for every href and src in a page, and each anchor's attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str]] = []
        self.anchors: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.found += [(tag, name, value) for name, value in attrs if name in ("href", "src") and value]
        if tag == "a":
            self.anchors.append({name: value or "" for name, value in attrs})


def parse(page: Path) -> Links:
    parser = Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def links_of(page: Path) -> list[tuple[str, str, str]]:
    return parse(page).found


def broken_relative_links(out_dir: Path) -> list[str]:
    broken = []
    for page in out_dir.rglob("*.html"):
        if "_static" in page.relative_to(out_dir).parts:
            continue
        for _, _, value in links_of(page):
            parts = urlsplit(value)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            if not (page.parent / unquote(parts.path)).is_file():
                broken.append(f"{page.relative_to(out_dir)} -> {value}")
    return broken


def external_resources(page: Path) -> list[str]:
    """Addresses the browser would fetch on load: scripts, stylesheets, images, frames (not <a> links)."""
    return [value for tag, name, value in links_of(page)
            if tag != "a" and (urlsplit(value).scheme in ("http", "https") or value.startswith("//"))]


def notebook(*cells):
    nb = new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def write_book(root: Path) -> Book:
    """Three notebooks; the first carries a stale committed output, links to the others and to a script."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "book.toml").write_text(MANIFEST)
    stale = new_code_cell("print('fresh')", execution_count=7,
                          outputs=[new_output("stream", name="stdout", text="STALE_OUTPUT\n")])
    intro = notebook(new_markdown_cell("# Intro\nSee [the animation](01_anim.ipynb#Anim), the "
                                       "[lab](../labs/lab_one.ipynb), [its script](../labs/scripts/run.py) "
                                       "and $2(N-1)/N$."), stale,
                     new_code_cell("print(open('data.txt').read())"))
    anim = notebook(new_markdown_cell("# Anim"), new_code_cell(ANIMATION),
                    new_code_cell("import ipywidgets\nipywidgets.IntSlider(value=3, description='ranks')"),
                    new_code_cell(EXERCISE))
    lab = notebook(new_markdown_cell("# Lab one"), new_code_cell("x = 2\nx"),
                   new_code_cell("import os\nprint('solutions:', os.environ.get('COMMLAB_LAB_SOLUTIONS'))"))
    for path, nb in (("chapters/00_intro.ipynb", intro), ("chapters/01_anim.ipynb", anim),
                     ("labs/lab_one.ipynb", lab)):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, root / path)
    (root / "chapters" / "data.txt").write_text("read from the notebook's own folder\n")
    (root / "labs" / "scripts").mkdir(parents=True)
    (root / "labs" / "scripts" / "run.py").write_text("print('run')\n")
    return load(root / "book.toml")


def fake_mathjax(folder: Path) -> Path:
    (folder / "config").mkdir(parents=True)
    (folder / "MathJax.js").write_text("/* MathJax */")
    (folder / "config" / "TeX-AMS_CHTML-full.js").write_text("/* config */")
    return folder


def test_source_only_build_writes_every_page_with_working_links_and_no_network(tmp_path):
    book = write_book(tmp_path / "book")
    out = tmp_path / "html"
    result = build(book, BuildConfig(out_dir=out, mathjax_dir=fake_mathjax(tmp_path / "mj")))
    expected = [nb.replace(".ipynb", ".html") for nb in book.notebooks()] + ["index.html"]
    assert list(result.pages) == expected and result.mathjax_local and not result.executed
    assert all((out / page).is_file() for page in expected)
    assert (out / "labs/scripts/run.py").is_file()  # a linked file is copied next to the pages
    assert broken_relative_links(out) == []
    for page in expected:
        assert external_resources(out / page) == [], page
    intro = (out / "chapters/00_intro.html").read_text()
    assert "STALE_OUTPUT" not in intro and "fresh" in intro
    assert 'href="01_anim.html#Anim"' in intro and 'href="../labs/lab_one.html"' in intro


def test_next_links_walk_the_book_in_reading_order_and_back_to_the_index(tmp_path):
    book = write_book(tmp_path / "book")
    out = tmp_path / "html"
    build(book, BuildConfig(out_dir=out, mathjax_dir=fake_mathjax(tmp_path / "mj")))
    index = (out / "index.html").read_text()
    assert "Tiny &amp; book" in index and "First part" in index and "Second part" in index
    visited, page = [], "chapters/00_intro.html"
    while page != "index.html" and len(visited) < 10:
        visited.append(page)
        anchors = parse(out / page).anchors
        nexts = [a["href"] for a in anchors if "commlab-next" in a.get("class", "").split()]
        prevs = [a["href"] for a in anchors if "commlab-prev" in a.get("class", "").split()]
        assert len(nexts) == 2 and len(set(nexts)) == 1 and len(prevs) == 2, page  # top and bottom bars
        page = posixpath.normpath(posixpath.join(posixpath.dirname(page), nexts[0]))
    assert visited == [nb.replace(".ipynb", ".html") for nb in book.notebooks()]
    first = parse(out / visited[0]).anchors
    assert [a["href"] for a in first if "commlab-prev" in a.get("class", "")][0] == "../index.html"


def test_without_local_mathjax_only_the_mathjax_cdn_is_external_and_the_index_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(book_mathjax, "packaged_mathjax", lambda: None)
    book = write_book(tmp_path / "book")
    result = build(book, BuildConfig(out_dir=tmp_path / "html"))
    assert not result.mathjax_local
    assert external_resources(tmp_path / "html/chapters/00_intro.html") == [book_mathjax.CDN_URL]
    assert "need a network connection" in (tmp_path / "html/index.html").read_text()


def test_executed_build_embeds_the_animation_and_replaces_the_widget(tmp_path):
    book = write_book(tmp_path / "book")
    out = tmp_path / "html"
    result = build(book, BuildConfig(out_dir=out, execute=True, timeout_s=120,
                                     mathjax_dir=fake_mathjax(tmp_path / "mj"),
                                     kernel_env=(("COMMLAB_LAB_SOLUTIONS", "1"),)))
    assert result.executed and result.n_widget_notes == 2
    anim = (out / "chapters/01_anim.html").read_text()
    assert '<div class="animation">' in anim
    for k in range(N_FRAMES):
        assert f'frames[{k}] = "data:image/png;base64,' in anim
    assert f'frames[{N_FRAMES}] =' not in anim
    # each widget as it first appeared, with what needs the notebook: the slider's value, the whole question
    assert "ranks</span> <strong>3</strong>" in anim and f"<strong>{NOTE_LIVE}</strong>" in anim
    assert "<b>ex.1</b>: How many bytes leave each rank, $2(N-1)/N \\cdot S$?" in anim
    assert anim.count(f"<strong>{NOTE_CHECK}</strong>") == 1 and 'placeholder="bytes"' in anim
    assert 'href="01_anim.ipynb" download' in anim
    assert "application/vnd.jupyter.widget-view+json" not in anim and "widget-state+json" not in anim
    assert external_resources(out / "chapters/01_anim.html") == []  # no Font Awesome from a CDN
    intro = (out / "chapters/00_intro.html").read_text()
    assert "read from the notebook&#39;s own folder" in intro or "read from the notebook's own folder" in intro
    assert "STALE_OUTPUT" not in intro and "fresh" in intro
    assert "solutions: 1" in (out / "labs/lab_one.html").read_text()  # the kernel got kernel_env
    assert broken_relative_links(out) == []


def test_a_failing_cell_stops_the_build_naming_the_notebook(tmp_path):
    book = write_book(tmp_path / "book")
    nbformat.write(notebook(new_code_cell("raise ValueError('boom 42')")), tmp_path / "book/chapters/00_intro.ipynb")
    with pytest.raises(CommlabError, match=r"chapters/00_intro.ipynb: a cell raised ValueError: boom 42"):
        build(book, BuildConfig(out_dir=tmp_path / "html", execute=True, timeout_s=60))


def test_a_slow_cell_hits_the_timeout(tmp_path):
    book = write_book(tmp_path / "book")
    nbformat.write(notebook(new_code_cell("import time\ntime.sleep(30)")), tmp_path / "book/chapters/00_intro.ipynb")
    with pytest.raises(CommlabError, match=r"chapters/00_intro.ipynb: a cell ran longer than --timeout 2 s"):
        build(book, BuildConfig(out_dir=tmp_path / "html", execute=True, timeout_s=2))


def test_build_refuses_a_book_listing_a_missing_notebook(tmp_path):
    book = loads(MANIFEST, root=tmp_path)
    with pytest.raises(CommlabError, match="chapters/00_intro.ipynb is listed .* but does not exist"):
        build(book, BuildConfig(out_dir=tmp_path / "html"))


@pytest.mark.parametrize("timeout_s", [0, -1, "10", True, float("nan")])
def test_build_config_rejects_bad_timeouts(timeout_s):
    with pytest.raises(CommlabError, match="timeout_s must be a number of seconds > 0"):
        BuildConfig(timeout_s=timeout_s)


def test_mathjax_folder_without_mathjax_js_is_refused(tmp_path):
    with pytest.raises(CommlabError, match="holds no MathJax.js"):
        build(write_book(tmp_path / "book"), BuildConfig(out_dir=tmp_path / "html", mathjax_dir=tmp_path))


def test_mathjax_copy_prefers_chtml_and_leaves_out_svg_fonts_and_other_languages(tmp_path):
    source = fake_mathjax(tmp_path / "mj")
    (source / "config" / "TeX-AMS-MML_HTMLorMML-full.js").write_text("/* other config */")
    for extra in ("jax/output/SVG/fonts/a.js", "jax/output/CommonHTML/fonts/b.js", "localization/de/de.js",
                  "localization/en/en.js"):
        (source / extra).parent.mkdir(parents=True, exist_ok=True)
        (source / extra).write_text("/* */")
    query = book_mathjax.install(tmp_path / "out", source)
    copied = tmp_path / "out" / "_static" / "mathjax"
    assert query == "config=TeX-AMS_CHTML-full,Safe"
    assert (copied / "jax/output/CommonHTML/fonts/b.js").is_file() and (copied / "localization/en/en.js").is_file()
    assert not (copied / "jax/output/SVG").exists() and not (copied / "localization/de").exists()


def test_cli_build_writes_the_pages_and_reports_unlisted_notebooks(tmp_path, capsys):
    book = write_book(tmp_path / "book")
    nbformat.write(notebook(new_markdown_cell("# Stray")), tmp_path / "book" / "labs" / "stray.ipynb")
    status = main(["book", "--manifest", str(book.root / "book.toml"), "build", "--out", str(tmp_path / "html"),
                   "--mathjax", str(fake_mathjax(tmp_path / "mj"))])
    out = capsys.readouterr().out
    assert status == 0 and (tmp_path / "html" / "index.html").is_file()
    assert "labs/stray.ipynb is not listed" in out and "wrote 4 pages" in out
    assert not (tmp_path / "html" / "labs" / "stray.html").exists()


def test_repository_book_builds_from_source_with_working_links(tmp_path):
    book = load(REPO / "book.toml")
    problems = listing_problems(book)
    if problems:
        pytest.skip(f"the repository's book.toml lists a missing notebook (test_book.py fails): {problems[0]}")
    result = build(book, BuildConfig(out_dir=tmp_path / "html"))
    assert all((tmp_path / "html" / page).is_file() for page in result.pages)
    assert len(result.pages) == len(book.notebooks()) + 1
    assert broken_relative_links(tmp_path / "html") == []


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / RING_CHAPTER).exists(), reason=f"{RING_CHAPTER} is not written yet")
def test_ring_chapter_page_embeds_the_ring_animation(tmp_path):
    book = Book(title="ring", parts=(Part(title="Ring", chapters=(RING_CHAPTER,)),), root=REPO)
    build(book, BuildConfig(out_dir=tmp_path / "html", execute=True, timeout_s=300))
    page = (tmp_path / "html" / RING_CHAPTER).with_suffix(".html").read_text()
    assert '<div class="animation">' in page, "no to_jshtml animation on the executed ring chapter's page"
    assert 'frames[1] = "data:image/' in page, "the ring animation has fewer than two frames"
    # every exercise the chapter shows is on the page: its title and question, and how to check it
    from commlab import exercises

    code = "\n".join(c.source for c in nbformat.read(REPO / RING_CHAPTER, as_version=4).cells if c.cell_type == "code")
    shown = sorted(set(re.findall(r'"(ch\d\d\.[a-z0-9-]+)"', code)))
    assert shown, "the ring chapter shows no exercise"
    text = html.unescape(page)
    for exercise_id in shown:
        assert f"{exercise_id}</b>: {exercises.get(exercise_id).title}<p>" in text, exercise_id
    assert page.count(f"<strong>{NOTE_CHECK}</strong>") == len(shown)


def test_the_book_layer_imports_nothing_of_the_labs():
    """Arrows: the book knows nothing of the labs; `commlab book build` (cli) passes the labs' switch in."""
    import ast
    from pathlib import Path

    import commlab.book as book_pkg
    from commlab.cli.book import _build  # noqa: F401  (the CLI is where the labs' switch is named)

    for path in Path(book_pkg.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("commlab.labs"), f"{path.name} imports {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("commlab.labs") for a in node.names), path.name
