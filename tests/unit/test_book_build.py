"""The static HTML edition (Sphinx + MyST-NB + sphinx-book-theme): every page written, every relative link
resolving, nothing fetched from the network, MathJax with its TeX fonts next to the pages, a ``to_jshtml``
animation embedded, widgets drawn as they first appeared with a note linking the notebook, and MyST-NB's
execution cache running only what changed.

Links and external resources are read back with the standard library's HTML parser, independently of
how the build wrote them. Executing builds start a real kernel (about a second each).
"""
from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from commlab.book import Book, Part, listing_problems, load, loads
from commlab.book.build import BuildConfig, build
from commlab.book.widgets import MODEL_REF, NOTE_CHECK, NOTE_LIVE, NOTE_MISSING, Renderer, static_widget
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
    """A folder that passes for MathJax 3 (its combined TeX-to-CommonHTML file and one font)."""
    (folder / "output/chtml/fonts/woff-v2").mkdir(parents=True)
    (folder / "tex-chtml.js").write_text("/* MathJax 3 */")
    (folder / "tex-svg.js").write_text("/* not needed for CommonHTML */")
    (folder / "output/chtml/fonts/woff-v2/MathJax_Math-Italic.woff").write_bytes(b"wOFF")
    return folder


def page_of(out: Path, notebook_path: str) -> str:
    return (out / notebook_path).with_suffix(".html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def source_only(tmp_path_factory):
    root = tmp_path_factory.mktemp("source")
    book = write_book(root / "book")
    result = build(book, BuildConfig(out_dir=root / "html"))
    return book, result, root / "html"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    root = tmp_path_factory.mktemp("executed")
    book = write_book(root / "book")
    lines: list[str] = []
    result = build(book, BuildConfig(out_dir=root / "html", execute=True, timeout_s=120,
                                     kernel_env=(("COMMLAB_LAB_SOLUTIONS", "1"),)), log=lines.append)
    return book, result, root / "html", lines


def test_source_only_build_writes_every_page_with_working_links_and_nothing_from_the_network(source_only):
    book, result, out = source_only
    expected = [nb.replace(".ipynb", ".html") for nb in book.notebooks()] + ["index.html"]
    assert list(result.pages) == expected and not result.executed and result.mathjax_local
    assert all((out / page).is_file() for page in expected)
    assert broken_relative_links(out) == []
    assert not [w for w in result.warnings if "not found" in w], result.warnings   # every link lands
    for page in expected + ["search.html"]:
        assert external_resources(out / page) == [], page
    intro = page_of(out, "chapters/00_intro.ipynb")
    assert "STALE_OUTPUT" not in intro and "fresh" in intro            # a committed output is not shown
    # a notebook's link with JupyterLab's anchor (#Anim) lands on that section of the page
    anchor = re.search(r'href="01_anim.html#([^"]+)"', intro).group(1)
    assert anchor.lower() == "anim" and f'id="{anchor}"' in page_of(out, "chapters/01_anim.ipynb")
    assert 'href="../labs/lab_one.html"' in intro
    assert "run.py" in intro and list(out.glob("_downloads/*/run.py"))  # a linked script is offered


def test_the_contents_follow_the_manifest_part_by_part_from_the_home_page(source_only):
    book, _, out = source_only
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'url=chapters/00_intro.html' in index and "Tiny &amp; book" in index   # the first notebook is home
    for nb in book.notebooks():   # every page's navigation: the parts in order, each listing its notebooks
        page = page_of(out, nb)
        nav = page[page.index('id="pst-primary-sidebar"'):page.index('<main')]
        first, second = nav.index("Part 1. First part"), nav.index("Part 2. Second part")
        anim, lab = nav.index(">Anim</a>"), nav.index(">Lab one</a>")
        assert first < anim < second < lab, nb
    assert not (book.root / "index.md").exists()                     # nothing is written into the book
    assert sorted(p.name for p in book.root.iterdir()) == ["book.toml", "chapters", "labs"]


def test_every_page_offers_its_own_notebook_and_a_theme_switch(source_only):
    book, _, out = source_only
    for nb in book.notebooks():
        page = page_of(out, nb)
        assert f'href="../_sources/{nb}"' in page, nb                     # the theme's download button
        assert (out / "_sources" / nb).is_file()
        assert json.loads((out / "_sources" / nb).read_text())["nbformat"] == 4
        assert "theme-switch-button" in page and "copybutton.js" in page


def test_mathjax_and_its_tex_fonts_are_served_from_the_pages_own_folder(source_only):
    _, _, out = source_only
    mathjax = out / "_static" / "mathjax"
    assert (mathjax / "tex-chtml.js").is_file()
    fonts = sorted(p.name for p in (mathjax / "output/chtml/fonts/woff-v2").glob("*.woff"))
    assert "MathJax_Math-Italic.woff" in fonts and "MathJax_Size4-Regular.woff" in fonts  # italic N, big braces
    assert not list(mathjax.glob("tex-svg*.js"))                          # the SVG builds are left out
    assert 'src="../_static/mathjax/tex-chtml.js' in page_of(out, "chapters/00_intro.ipynb")


def test_a_mathjax_folder_given_is_used_and_one_without_tex_chtml_refused(tmp_path):
    book = write_book(tmp_path / "book")
    build(book, BuildConfig(out_dir=tmp_path / "html", mathjax_dir=fake_mathjax(tmp_path / "mj")))
    assert (tmp_path / "html/_static/mathjax/output/chtml/fonts/woff-v2/MathJax_Math-Italic.woff").is_file()
    assert not (tmp_path / "html/_static/mathjax/tex-svg.js").exists()
    with pytest.raises(CommlabError, match="has no tex-chtml.js; expected a MathJax 3 folder"):
        build(book, BuildConfig(out_dir=tmp_path / "html2", mathjax_dir=tmp_path))


def test_executed_build_embeds_the_animation_and_draws_each_widget(executed):
    _, result, out, _ = executed
    assert result.executed and result.n_widget_notes == 2 and result.n_executed == 3
    anim = page_of(out, "chapters/01_anim.ipynb")
    assert '<div class="animation">' in anim and "font-awesome" not in anim
    for k in range(N_FRAMES):
        assert f'frames[{k}] = "data:image/png;base64,' in anim
    assert f'frames[{N_FRAMES}] =' not in anim
    # each widget as it first appeared, with what needs the notebook: the slider's value, the whole question
    assert "ranks</span> <strong>3</strong>" in anim and f"<strong>{NOTE_LIVE}</strong>" in anim
    assert "<b>ex.1</b>: How many bytes leave each rank, $2(N-1)/N \\cdot S$?" in anim
    assert anim.count(f"<strong>{NOTE_CHECK}</strong>") == 1 and 'placeholder="bytes"' in anim
    # the note's link downloads the notebook itself, not its page
    links = [a["href"] for a in parse(out / "chapters/01_anim.html").anchors if "download" in a]
    assert links and all(href == "../_sources/chapters/01_anim.ipynb" for href in links), links
    assert "application/vnd.jupyter.widget-view+json" not in anim and "widget-state+json" not in anim
    assert external_resources(out / "chapters/01_anim.html") == []      # no widget manager, no Font Awesome
    intro = page_of(out, "chapters/00_intro.ipynb")
    assert "read from the notebook&#39;s own folder" in intro or "read from the notebook's own folder" in intro
    assert "STALE_OUTPUT" not in intro and "fresh" in intro
    assert "solutions: 1" in page_of(out, "labs/lab_one.ipynb")           # the kernel got kernel_env
    assert broken_relative_links(out) == []


def test_build_progress_names_each_notebook_as_it_runs(executed):
    _, _, _, lines = executed
    for nb in ("chapters/00_intro.ipynb", "chapters/01_anim.ipynb", "labs/lab_one.ipynb"):
        assert any(nb in line and "Executed notebook" in line for line in lines), nb
    assert not any(line.startswith("myst v") for line in lines)          # MyST's whole configuration is not


def test_a_failing_cell_stops_the_build_naming_the_notebook(tmp_path):
    book = write_book(tmp_path / "book")
    nbformat.write(notebook(new_markdown_cell("# Intro"), new_code_cell("raise ValueError('boom 42')")),
                   tmp_path / "book/chapters/00_intro.ipynb")
    with pytest.raises(CommlabError, match=r"^chapters/00_intro.ipynb: a cell raised ValueError: boom 42"):
        build(book, BuildConfig(out_dir=tmp_path / "html", execute=True, timeout_s=60))


def test_a_slow_cell_hits_the_timeout(tmp_path):
    book = write_book(tmp_path / "book")
    nbformat.write(notebook(new_markdown_cell("# Intro"), new_code_cell("import time\ntime.sleep(30)")),
                   tmp_path / "book/chapters/00_intro.ipynb")
    with pytest.raises(CommlabError, match=r"^chapters/00_intro.ipynb: a cell ran longer than --timeout 2 s "
                                           r"\(the cell starting 'import time'\)"):
        build(book, BuildConfig(out_dir=tmp_path / "html", execute=True, timeout_s=2))


def test_build_refuses_a_book_listing_a_missing_notebook(tmp_path):
    book = loads(MANIFEST, root=tmp_path)
    with pytest.raises(CommlabError, match="chapters/00_intro.ipynb is listed .* but does not exist"):
        build(book, BuildConfig(out_dir=tmp_path / "html"))


@pytest.mark.parametrize("timeout_s", [0, -1, "10", True, float("nan")])
def test_build_config_rejects_bad_timeouts(timeout_s):
    with pytest.raises(CommlabError, match="timeout_s must be a number of seconds > 0"):
        BuildConfig(timeout_s=timeout_s)


def test_an_unchanged_book_is_not_executed_again_and_labs_mine_is_no_part_of_the_key(tmp_path):
    runs = tmp_path / "runs.txt"
    book = write_book(tmp_path / "book")
    lab = tmp_path / "book/labs/lab_one.ipynb"
    nb = nbformat.read(lab, as_version=4)
    nb.cells.append(new_code_cell(f"open({str(runs)!r}, 'a').write('x')"))
    nbformat.write(nb, lab)
    config = BuildConfig(out_dir=tmp_path / "html", execute=True, timeout_s=120)
    first = build(book, config)
    assert (first.n_executed, first.n_cached) == (3, 0) and runs.read_text() == "x"
    # what a lab's run leaves in labs/mine/ (the reader's code, lock files) changes nothing
    (tmp_path / "book/labs/mine").mkdir()
    (tmp_path / "book/labs/mine/lab_one.py.lock").write_text("")
    (tmp_path / "book/labs/mine/lab_one.py").write_text("def ring(): pass\n")
    second = build(book, config)
    assert (second.n_executed, second.n_cached) == (0, 3) and runs.read_text() == "x"
    # prose edited: the page shows it, nothing runs again (outputs depend on the code)
    nb.cells[0].source += "\nEdited prose."
    nbformat.write(nb, lab)
    third = build(book, config)
    assert third.n_executed == 0 and "Edited prose." in page_of(tmp_path / "html", "labs/lab_one.ipynb")
    # code edited: that notebook, and only it, runs again
    nb.cells.append(new_code_cell("print('new cell')"))
    nbformat.write(nb, lab)
    fourth = build(book, config)
    assert (fourth.n_executed, runs.read_text()) == (1, "xx")
    assert "new cell" in page_of(tmp_path / "html", "labs/lab_one.ipynb")
    # a file the labs read changed: the book runs again (the learner's env: see the salt's test)
    (tmp_path / "book/labs/scripts/run.py").write_text("print('run, changed')\n")
    assert (build(book, config).n_executed, runs.read_text()) == (3, "xxx")
    rebuilt = build(book, BuildConfig(out_dir=tmp_path / "html", execute=True, use_cache=False))
    assert (rebuilt.n_executed, rebuilt.n_cached) == (3, 0)


def test_the_environment_salt_follows_what_notebooks_run_not_the_page_rendering(tmp_path, monkeypatch):
    import shutil

    import commlab
    from commlab.book.project import environment_salt

    copy = tmp_path / "commlab"
    shutil.copytree(Path(commlab.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(commlab, "__file__", str(copy / "__init__.py"))
    book = write_book(tmp_path / "book")
    before = environment_salt(book)
    (copy / "book" / "widgets.py").write_text("# rendering only\n", encoding="utf-8")
    (copy / "book" / "static" / "commlab.css").write_text("/* restyled */", encoding="utf-8")
    assert environment_salt(book) == before
    (copy / "book" / "toc.py").write_text("# chapter 00 runs this in the kernel\n", encoding="utf-8")
    after_toc = environment_salt(book)
    (copy / "cost" / "alpha_beta.py").write_text("# a model the chapters compute with\n", encoding="utf-8")
    assert len({before, after_toc, environment_salt(book)}) == 3
    assert environment_salt(book, (("COMMLAB_LAB_SOLUTIONS", "1"),)) != environment_salt(book)
    salt = environment_salt(book)
    monkeypatch.setenv("COMMLAB_LEARNER", "another-learner")     # the exercises draw other numbers
    learner_salt = environment_salt(book)
    assert learner_salt != salt
    (tmp_path / "book/labs/mine").mkdir()
    (tmp_path / "book/labs/mine/lab_one.py.lock").write_text("")  # the reader's lab code and its locks: no part
    (tmp_path / "book/labs/mine/lab_one.py").write_text("def ring(): pass\n")
    assert environment_salt(book) == learner_salt


def model(name: str, **state) -> dict:
    return {"model_name": name, "state": state}


def test_widgets_are_drawn_from_their_saved_state_with_the_right_note():
    state = {"q": model("HTMLMathModel", value="<b>ch9.x</b>: What is $N$?"),
             "a": model("TextModel", description="Answer:", placeholder="GB/s", value=""),
             "c": model("ButtonModel", description="Check"),
             "row": model("HBoxModel", children=[f"{MODEL_REF}a", f"{MODEL_REF}c"]),
             "ex": model("VBoxModel", children=[f"{MODEL_REF}q", f"{MODEL_REF}row"]),
             "d": model("DropdownModel", description="op", _options_labels=["a", "b"], index=1),
             "img": {"model_name": "ImageModel", "state": {"format": "png"},
                     "buffers": [{"path": ["value"], "encoding": "base64", "data": "iVBORw0K"}]}}
    shown, note = static_widget(Renderer(state), "ex", "../_sources/ch.ipynb")
    assert "<b>ch9.x</b>: What is $N$?" in shown and 'placeholder="GB/s"' in shown and note == NOTE_CHECK
    assert 'href="../_sources/ch.ipynb" download' in shown
    shown, note = static_widget(Renderer(state), "d", None)
    assert "op</span> <strong>b</strong>" in shown and note == NOTE_LIVE
    shown, _ = static_widget(Renderer(state), "img", None)
    assert 'src="data:image/png;base64,iVBORw0K"' in shown
    assert static_widget(Renderer({}), "gone", None)[1] == NOTE_MISSING


def test_cli_build_writes_the_pages_and_reports_unlisted_notebooks(tmp_path, capsys):
    book = write_book(tmp_path / "book")
    nbformat.write(notebook(new_markdown_cell("# Stray")), tmp_path / "book" / "labs" / "stray.ipynb")
    status = main(["book", "--manifest", str(book.root / "book.toml"), "build", "--out", str(tmp_path / "html")])
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
    assert not [w for w in result.warnings if "undefined label" in w or "cross-reference target not found" in w]


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / RING_CHAPTER).exists(), reason=f"{RING_CHAPTER} is not written yet")
def test_ring_chapter_page_embeds_the_ring_animation_and_every_exercise(tmp_path):
    book = Book(title="ring", parts=(Part(title="Ring", chapters=(RING_CHAPTER,)),), root=REPO,
                execute_env=load(REPO / "book.toml").execute_env)
    build(book, BuildConfig(out_dir=tmp_path / "html", execute=True, timeout_s=300, kernel_env=book.execute_env))
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
    assert "../_sources/chapters/05_ring_allreduce.ipynb\" download" in page


def test_the_book_layer_imports_nothing_of_the_labs_and_has_no_circle():
    """Arrows: the book knows nothing of the labs (book.toml's [execute] env names the labs' switch), and
    its modules import down the layers only: toc does not import the manifest that imports it."""
    import ast

    import commlab.book as book_pkg

    imports: dict[str, set[str]] = {}
    for path in Path(book_pkg.__file__).parent.glob("*.py"):
        found = imports.setdefault(path.stem, set())
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                assert not name.startswith("commlab.labs"), f"{path.name} imports {name}"
                if name.startswith("commlab.book."):
                    found.add(name.rsplit(".", 1)[-1])
    for module, targets in imports.items():
        for target in targets:
            assert module not in imports.get(target, set()), f"commlab.book.{module} <-> commlab.book.{target}"
    cli = (Path(book_pkg.__file__).parents[1] / "cli" / "book.py").read_text()
    assert "commlab.labs" not in cli
