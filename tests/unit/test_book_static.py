"""The static edition as a reader uses it: the sidebar (contents and the page's sections), the notebook to
download, dark mode, the offline search index, incremental builds and the progress lines.

Pages are read back with the standard library's HTML parser, and words are looked up in the notebooks' own
Markdown, independently of how the build wrote them. Executing builds start a real kernel (about a second
each); the cache test counts executions with a file each run appends to.
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from commlab.book import load
from commlab.book import search as book_search
from commlab.book.build import BuildConfig, build
from commlab.book.widgets import NOTE_CHECK, NOTE_LIVE, NOTE_MISSING, render_widgets

MANIFEST = """
[book]
title = "Static book"
[[part]]
title = "One"
chapters = ["chapters/00_first.ipynb", "chapters/01_second.ipynb"]
[[part]]
title = "Two"
labs = ["labs/lab_a.ipynb"]
"""
#: a word found in one notebook only, and the section it is in
MARKERS = {"chapters/00_first.ipynb": ("zorblax", "Where zorblax lives"),
           "chapters/01_second.ipynb": ("quuxwidth", "Measuring it"),
           "labs/lab_a.ipynb": ("frobnicate", "Your turn")}


class Page(HTMLParser):
    """Every element's tag and attributes, the ids, and the text of the sidebar's and header's links."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.ids: set[str] = set()
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        values = {name: value or "" for name, value in attrs}
        self.elements.append((tag, values))
        if "id" in values:
            self.ids.add(values["id"])

    def find(self, tag: str, **attrs) -> list[dict[str, str]]:
        return [values for t, values in self.elements if t == tag and all(
            word in values.get(name.rstrip("_"), "").split() or values.get(name.rstrip("_")) == word
            for name, word in attrs.items())]


def notebook(title: str, marker: str, heading: str, *code: str):
    cells = [new_markdown_cell(f"# {title}\nIntro of {title}."),
             new_markdown_cell(f"## {heading}\nThe word {marker} is only here.\n\n### A detail\nMore text.")]
    cells += [new_code_cell(source) for source in code]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def write_book(root: Path, code: str = "") -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "book.toml").write_text(MANIFEST)
    for path, (marker, heading) in MARKERS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        title = Path(path).stem.split("_", 1)[-1].replace("_", " ").title()
        nbformat.write(notebook(title, marker, heading, *([code] if code else [])), root / path)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("static")
    write_book(root / "book")
    result = build(load(root / "book" / "book.toml"), BuildConfig(out_dir=root / "html"))
    return root, result


def test_every_page_has_the_whole_contents_with_itself_marked_and_its_sections(built):
    root, result = built
    pages = [p for p in result.pages if p != "index.html"]
    for page in pages:
        parsed = Page((root / "html" / page).read_text())
        sidebar_links = [a["href"] for a in parsed.find("a") if a.get("href", "").endswith(".html")
                         and "commlab-nav" not in a.get("class", "")]
        listed = [Path(root / "html" / page).parent.joinpath(href).resolve() for href in sidebar_links]
        assert all(p.is_file() for p in listed), page
        assert [p.relative_to((root / "html").resolve()).as_posix() for p in listed
                if p.name != "index.html"][:len(pages)] == pages
        current = [a for a in parsed.find("a") if a.get("aria-current") == "page"]
        assert len(current) == 1 and Path(current[0]["href"]).name == Path(page).name
        sections = [a["href"] for a in parsed.find("a") if a.get("href", "").startswith("#")
                    and a.get("href") != "#commlab-content"]
        heading = MARKERS[page.replace(".html", ".ipynb")][1]
        assert f"#{heading.replace(' ', '-')}" in sections and "#A-detail" in sections
        assert all(href[1:] in parsed.ids for href in sections), page


def test_every_page_offers_its_notebook_for_download(built):
    root, result = built
    for page in result.pages[:-1]:
        notebook_path = page.replace(".html", ".ipynb")
        parsed = Page((root / "html" / page).read_text())
        downloads = [a for a in parsed.find("a") if "download" in a]
        assert [a["href"] for a in downloads] == [Path(notebook_path).name], page
        assert (root / "html" / notebook_path).read_bytes() == (root / "book" / notebook_path).read_bytes()


def test_dark_mode_follows_the_system_through_jupyterlabs_dark_theme(built):
    root, result = built
    for page in result.pages:
        links = Page((root / "html" / page).read_text()).find("link")
        dark = [link for link in links if link.get("media") == "(prefers-color-scheme: dark)"]
        assert len(dark) == 1, page
        target = (root / "html" / page).parent / dark[0]["href"]
        assert re.search(r"--jp-layout-color0:\s*#111", target.read_text())
    css = (root / "html" / "_static" / "book.css").read_text()
    assert "color-scheme: light dark" in css and "var(--jp-layout-color0" in css


def search_index(out: Path) -> dict:
    text = (out / "_static" / "search-index.js").read_text()
    assert text.startswith("window.COMMLAB_SEARCH = ") and text.rstrip().endswith(";")
    return json.loads(text.removeprefix("window.COMMLAB_SEARCH = ").rstrip().rstrip(";"))


def test_the_search_index_finds_each_word_in_its_own_section_of_its_own_page(built):
    root, result = built
    index = search_index(root / "html")
    assert [page for page, _ in index["pages"]] == list(result.pages[:-1])
    for notebook_path, (marker, heading) in MARKERS.items():
        hits = index["terms"][marker]
        sections = [index["sections"][s] for s in hits[0::2]]
        assert len(sections) == 1 and sections[0][2] == heading
        page_href = index["pages"][sections[0][0]][0]
        assert page_href == notebook_path.replace(".ipynb", ".html")
        assert sections[0][1] in Page((root / "html" / page_href).read_text()).ids
    # headings weigh more than text: "detail" is in a heading on every page
    detail = index["terms"]["detail"]
    assert len(detail) == 2 * len(MARKERS) and set(detail[1::2]) == {book_search.HEADING_WEIGHT}


def test_search_words_fold_compounds_so_their_spellings_meet():
    assert book_search.terms("AllReduce") == ["allreduce"]
    assert book_search.terms("all_reduce all-reduce") == ["allreduce", "all", "reduce"] * 2
    assert book_search.terms("torch.distributed 2.13") == ["torchdistributed", "torch", "distributed", "213", "2", "13"]


def test_page_sections_skip_scripts_styles_and_plain_output():
    page = ('<main><h1 id="T">Title<a class="anchor-link" href="#T">¶</a></h1><p>kept words</p>'
            '<script>var hidden = 1;</script><style>.x{}</style>'
            '<div class="jp-RenderedText"><pre>printed output</pre></div>'
            '<div class="jp-RenderedHTMLCommon"><p>html output</p></div><h2 id="S">Sub</h2>tail</main>'
            '<nav>outside</nav>')
    sections = book_search.page_sections(page)
    assert [(s.anchor, s.heading, s.level) for s in sections] == [("T", "Title", 1), ("S", "Sub", 2)]
    assert sections[0].text == "kept words html output" and sections[1].text == "tail"


def widget_nb(state: dict, model_id: str):
    nb = new_notebook(cells=[new_code_cell("w", outputs=[nbformat.v4.new_output(
        "display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": model_id},
                              "text/plain": "VBox()"})])])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": state}}
    return nb


def model(name: str, **state) -> dict:
    return {"model_name": name, "model_module": "@jupyter-widgets/controls", "state": state}


def test_widgets_are_drawn_from_their_saved_state_with_the_right_note():
    state = {"q": model("HTMLMathModel", value="<b>ch9.x</b>: What is $N$?"),
             "a": model("TextModel", description="Answer:", placeholder="GB/s", value=""),
             "c": model("ButtonModel", description="Check"),
             "row": model("HBoxModel", children=["IPY_MODEL_a", "IPY_MODEL_c"]),
             "ex": model("VBoxModel", children=["IPY_MODEL_q", "IPY_MODEL_row"]),
             "d": model("DropdownModel", description="op", _options_labels=["a", "b"], index=1),
             "img": {"model_name": "ImageModel", "state": {"format": "png"},
                     "buffers": [{"path": ["value"], "encoding": "base64", "data": "iVBORw0K"}]}}
    exercise = widget_nb(state, "ex")
    assert render_widgets(exercise, download="ch.ipynb") == 1
    shown = exercise.cells[0].outputs[0]["data"]
    assert "<b>ch9.x</b>: What is $N$?" in shown["text/html"] and 'placeholder="GB/s"' in shown["text/html"]
    assert NOTE_CHECK in shown["text/html"] and shown["text/plain"] == NOTE_CHECK
    assert 'href="ch.ipynb" download' in shown["text/html"] and "widgets" not in exercise.metadata
    control = widget_nb(state, "d")
    render_widgets(control)
    assert "op</span> <strong>b</strong>" in control.cells[0].outputs[0]["data"]["text/html"]
    assert control.cells[0].outputs[0]["data"]["text/plain"] == NOTE_LIVE
    image = widget_nb(state, "img")
    render_widgets(image)
    assert 'src="data:image/png;base64,iVBORw0K"' in image.cells[0].outputs[0]["data"]["text/html"]
    lost = widget_nb({}, "gone")
    render_widgets(lost)
    assert lost.cells[0].outputs[0]["data"]["text/plain"] == NOTE_MISSING


def test_an_unchanged_notebook_is_not_executed_again_and_progress_says_so(tmp_path, monkeypatch):
    runs = tmp_path / "runs.txt"
    write_book(tmp_path / "book", code=f"open({str(runs)!r}, 'a').write('x')\nprint('ran')")
    book = load(tmp_path / "book" / "book.toml")
    config = BuildConfig(out_dir=tmp_path / "html", execute=True, timeout_s=120)
    lines: list[str] = []
    first = build(book, config, log=lines.append)
    assert (first.n_executed, first.n_cached) == (3, 0) and runs.read_text() == "xxx"
    done = [line for line in lines if " -> " in line]
    assert [re.match(r"\[(\d)/3\] (\S+) -> ", line).groups() for line in done] == [
        (str(i), nb) for i, nb in enumerate(book.notebooks(), 1)]
    assert all(re.search(r"\(executed, \d+\.\d s\)$", line) for line in done)
    assert sum("executing" in line for line in lines) == 3   # said before each one runs
    page = (tmp_path / "html" / "chapters" / "00_first.html").read_text()

    lines.clear()
    second = build(book, config, log=lines.append)
    assert (second.n_executed, second.n_cached) == (0, 3) and runs.read_text() == "xxx"
    assert all("unchanged since the last build, not executed again" in line for line in lines)
    assert (tmp_path / "html" / "chapters" / "00_first.html").read_text() == page

    nb = nbformat.read(tmp_path / "book" / "labs" / "lab_a.ipynb", as_version=4)
    nb.cells[0].source += "\nEdited."
    nbformat.write(nb, tmp_path / "book" / "labs" / "lab_a.ipynb")
    third = build(book, config)
    assert (third.n_executed, third.n_cached) == (1, 2) and runs.read_text() == "x" * 4
    (tmp_path / "book" / "chapters" / "data.csv").write_text("1,2\n")   # what the chapters may read changed
    assert (build(book, config).n_executed, runs.read_text()) == (2, "x" * 6)
    rebuilt = build(book, BuildConfig(out_dir=tmp_path / "html", execute=True, use_cache=False))
    assert (rebuilt.n_executed, rebuilt.n_cached) == (3, 0)
    monkeypatch.setenv("COMMLAB_LEARNER", "another-learner")   # the exercises draw other numbers
    assert build(book, config).n_executed == 3


def test_the_fingerprint_follows_what_notebooks_run_not_the_page_rendering(tmp_path, monkeypatch):
    import shutil

    import commlab
    from commlab.book import cache

    copy = tmp_path / "commlab"
    shutil.copytree(Path(commlab.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(commlab, "__file__", str(copy / "__init__.py"))
    before = cache.package_fingerprint()
    (copy / "book" / "widgets.py").write_text("# rendering only\n", encoding="utf-8")
    (copy / "book" / "static" / "book.css").write_text("/* restyled */", encoding="utf-8")
    assert cache.package_fingerprint() == before
    (copy / "book" / "toc.py").write_text("# chapter 00 runs this in the kernel\n", encoding="utf-8")
    after_toc = cache.package_fingerprint()
    (copy / "cost" / "alpha_beta.py").write_text("# a model the chapters compute with\n", encoding="utf-8")
    assert len({before, after_toc, cache.package_fingerprint()}) == 3
