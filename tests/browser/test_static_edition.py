"""The static edition in Chromium, as a reader meets it: one small book built the way ``make book`` builds the
real one (Sphinx, MyST-NB executing through its cache, sphinx-book-theme), served from 127.0.0.1.

Every request the pages make is recorded, and a request that leaves the machine, fails or answers 404 fails
the test. On the pages: the ``to_jshtml`` animation plays, formulas are typeset by the local MathJax in its
TeX fonts, an exercise shows its question, the widget's note and the theme's download button give the
notebook itself, code cells have a copy button; the theme switch gives light and dark pages whose titles and
text keep a contrast of at least 4.5:1 (WCAG AA); at 390 px nothing overflows, the download button and the
page's contents are reachable, wide text outputs scroll instead of wrapping; a search for "ring" puts the
ring chapter's own section first, with snippets free of TeX. Screenshots go to tests/browser/output/ (and,
with COMMLAB_UPDATE_SCREENSHOTS=1, to docs/screenshots/).
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import threading
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from commlab.book import load
from commlab.book.build import BuildConfig, build

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
DOCS_SHOTS = REPO / "docs" / "screenshots"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
MIN_CONTRAST = 4.5   # WCAG 2.1 AA, normal text

#: the players the chapters show: commlab's to_html(), a to_jshtml player that fetches nothing
ANIMATION = """from IPython.display import HTML, display
from commlab.viz.animation import ScheduleAnimation
display(HTML(ScheduleAnimation("ring-all-reduce", 3).to_html(interval_ms=200)))"""
EXERCISE = """import ipywidgets as w
w.VBox([w.HTMLMath(value="<b>ch05.bytes</b>: How many bytes leave each rank of a ring all-reduce, "
                         "$2(N-1)/N \\\\cdot S$ with N = 4 and S = 1 MB?"),
        w.HBox([w.Text(description="Answer:", placeholder="bytes"), w.Button(description="Check")])])"""
TABLE = """rows = [("all_reduce_ring_bandwidth_regime", 2**30, 483.35, "NVLink4-NVSwitch-H100-SXM")] * 4
for name, size, bw, where in rows:
    print(f"{name:<36s} {size:>14d} {bw:>10.2f} GB/s   {where:<30s} measured on the p5 instance")"""


def ring_book(root: Path):
    """Two chapters: the ring (a section named "The ring", an animation, an exercise, a wide table) and the
    trees, whose section 6.6 also speaks of rings; formulas in both."""
    (root / "chapters").mkdir(parents=True)
    (root / "book.toml").write_text('[book]\ntitle = "Rings and trees"\nauthors = ["A. Author"]\n[[part]]\n'
                                    'title = "Talking between GPUs"\n'
                                    'chapters = ["chapters/05_ring.ipynb", "chapters/06_tree.ipynb"]\n')
    ring = new_notebook(cells=[
        new_markdown_cell("# 5. The ring all-reduce\nEach rank talks to two neighbours."),
        new_markdown_cell("## The ring\nA ring all-reduce sends $\\underbrace{2(N-1)}_{\\text{steps}} \\cdot "
                          "\\frac{S}{N}$ bytes per rank, the least any all-reduce can send."),
        new_code_cell(ANIMATION), new_code_cell(EXERCISE),
        new_markdown_cell("## A wide table\nThe run, as nccl-tests printed it:"), new_code_cell(TABLE),
        *[new_markdown_cell(f"## Step {k}\n" + "The chunks move on, one hop per step. " * 30) for k in range(1, 6)],
    ])
    tree = new_notebook(cells=[
        new_markdown_cell("# 6. Trees\nA tree halves the latency term."),
        new_markdown_cell("## 6.6 Trees against rings\nAt large sizes the ring wins: ring and tree both move "
                          "$2 S (N-1)/N$ bytes, but the ring keeps every link busy; a ring is simple."),
    ])
    for name, nb in (("05_ring", ring), ("06_tree", tree)):
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, root / "chapters" / f"{name}.ipynb")
    return load(root / "book.toml")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    """The built book, served on 127.0.0.1: (base URL, output folder)."""
    root = tmp_path_factory.mktemp("edition")
    out = root / "html"
    result = build(ring_book(root / "book"), BuildConfig(out_dir=out, execute=True, timeout_s=120))
    assert result.n_executed == 2 and result.n_widget_notes == 1, result
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", out
    finally:
        server.shutdown()
        server.server_close()


class Requests:
    """Every request of a page: those that left the machine, failed, or got an error status."""

    def __init__(self, page) -> None:
        self.bad: list[str] = []
        self.count = 0
        page.route("**/*", self._route)
        page.on("requestfailed", lambda r: self.bad.append(f"failed: {r.url} ({r.failure})"))
        page.on("response", self._response)

    def _route(self, route) -> None:
        self.count += 1
        host = urlsplit(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            route.continue_()
        else:
            self.bad.append(f"off the machine: {route.request.url}")
            route.abort()

    def _response(self, response) -> None:
        if response.status >= 400:
            self.bad.append(f"{response.status}: {response.url}")


@pytest.fixture
def reader(browser_context):
    """A page whose requests are checked when the test ends."""
    page = browser_context.new_page()
    page.set_default_timeout(30_000)
    requests = Requests(page)
    try:
        yield page
    finally:
        page.close()
    assert requests.count > 0
    assert requests.bad == [], f"the static edition asked for: {requests.bad}"


def shot(page, output_dir: Path, name: str, docs: bool = False) -> None:
    path = output_dir / f"{name}.png"
    page.screenshot(path=str(path))
    if docs and os.environ.get("COMMLAB_UPDATE_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_SHOTS / path.name)


def set_theme(page, mode: str) -> None:
    """The theme switch, as a reader uses it: the header's button, then the mode."""
    page.locator(".theme-switch-button").first.click()
    page.locator(f".theme-change-button[data-mode={mode}]").first.click()
    page.wait_for_function("(mode) => document.documentElement.dataset.theme === mode", arg=mode)
    page.keyboard.press("Escape")   # the menu closes


CONTRAST = """(selector) => {
  const parse = (c) => { const m = c.match(/[\\d.]+/g).map(Number);
                         return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0.5) return c; }
    return [255, 255, 255, 1]; };
  const el = document.querySelector(selector);
  if (!el) return null;
  const fg = lum(parse(getComputedStyle(el).color)), bg = lum(background(el));
  return (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
}"""
#: What a reader reads on each page: the title, body text, the navigation, a widget's note.
READ = {"chapters/05_ring": ["main h1", "main h2", "main section p", ".bd-sidebar-primary a.reference",
                             ".bd-sidebar-primary p.caption", ".commlab-widget-note", ".commlab-w-html"],
        "chapters/06_tree": ["main h1", "main h2", "main section p", ".logo__title", ".bd-sidebar-secondary a"]}


def test_the_ring_chapter_plays_typesets_asks_and_offers_its_notebook(reader, edition, output_dir):
    base, out = edition
    reader.set_viewport_size(DESKTOP)
    reader.goto(f"{base}/chapters/05_ring.html")
    frame = reader.locator("div.animation img").first
    frame.wait_for()
    assert frame.evaluate("img => img.naturalWidth > 0 && img.getBoundingClientRect().height > 0")
    before = frame.get_attribute("src")
    reader.locator("div.animation button:has(.fa-play)").last.click()
    reader.wait_for_function("(src) => document.querySelector('div.animation img').src !== src", arg=before)
    # formulas: MathJax 3 from _static/mathjax, in its own TeX fonts (an italic N, a real underbrace)
    reader.wait_for_selector("mjx-container", timeout=20_000)
    reader.wait_for_function("() => document.fonts.status === 'loaded'")
    fonts = reader.evaluate("() => Array.from(document.fonts).filter(f => f.status === 'loaded')"
                            ".map(f => f.family)")
    assert any("MJXTEX" in family or "MathJax" in family for family in fonts), fonts
    assert reader.locator("mjx-container").count() >= 2
    # the exercise: its question, and a note whose link downloads the notebook
    assert reader.locator(".commlab-w-html", has_text="How many bytes leave each rank").count() == 1
    note_link = reader.locator(".commlab-widget-note a[download]")
    assert note_link.count() == 1
    for href in (note_link.get_attribute("href"),
                 reader.locator(".dropdown-download-buttons a[href$='.ipynb']").first.get_attribute("href")):
        assert href.endswith("05_ring.ipynb"), href
        body = reader.evaluate("(href) => fetch(href).then(r => r.text())", href)
        assert "".join(json.loads(body)["cells"][0]["source"]).startswith("# 5. The ring all-reduce")
    assert reader.locator("button.copybtn").count() >= 3          # sphinx-copybutton, on each code cell
    shot(reader, output_dir, "static_edition", docs=True)


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_titles_and_text_keep_their_contrast_in_both_themes(reader, edition, output_dir, mode):
    base, _ = edition
    reader.set_viewport_size(DESKTOP)
    for page_name, selectors in READ.items():
        reader.goto(f"{base}/{page_name}.html")
        set_theme(reader, mode)
        reader.wait_for_timeout(300)
        for selector in selectors:
            ratio = reader.evaluate(CONTRAST, selector)
            assert ratio is not None, f"{page_name}: nothing matches {selector!r}"
            assert ratio >= MIN_CONTRAST, f"{mode} {page_name}: {selector!r} has contrast {ratio:.2f}"
        shot(reader, output_dir, f"static_{page_name.replace('/', '_')}_{mode}", docs=page_name == "chapters/05_ring")
    # the choice is kept from page to page, and the edition's address opens the home page
    reader.goto(f"{base}/index.html")
    reader.wait_for_url("**/chapters/05_ring.html")
    assert reader.evaluate("document.documentElement.dataset.theme") == mode


def test_a_phone_reads_every_part_of_a_page(reader, edition, output_dir):
    base, _ = edition
    reader.set_viewport_size(PHONE)
    reader.goto(f"{base}/chapters/05_ring.html")
    reader.locator("div.animation img").first.wait_for()
    overflow = reader.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow} px wider than the phone"
    player = reader.locator("div.animation").first.bounding_box()
    assert player["x"] >= 0 and player["x"] + player["width"] <= PHONE["width"], player
    download = reader.locator(".article-header-buttons .dropdown-download-buttons button, "
                              "button[aria-label='Download this page']").first
    assert download.is_visible()
    # a wide text output keeps its lines and scrolls sideways
    table = reader.locator("div.cell_output pre").filter(has_text="all_reduce_ring_bandwidth_regime").first
    assert table.evaluate("e => getComputedStyle(e).whiteSpace") == "pre"
    assert table.evaluate("e => e.scrollWidth > e.clientWidth && ['auto', 'scroll'].includes("
                          "getComputedStyle(e).overflowX) || ['auto', 'scroll'].includes("
                          "getComputedStyle(e.parentElement).overflowX)")
    # "Contents" pressed deep in the page opens the page's contents where the reader is
    reader.locator("[id='Step-4'], #step-4").first.scroll_into_view_if_needed()
    reader.locator("button.secondary-toggle:visible").first.click()
    entry = reader.locator(".bd-sidebar-secondary a:visible", has_text="Step 4").first
    entry.wait_for(state="visible")
    reader.wait_for_timeout(500)   # the drawer slides in
    box = entry.bounding_box()
    assert 0 <= box["y"] < PHONE["height"] and 0 <= box["x"] < PHONE["width"], f"the contents open out of sight: {box}"
    shot(reader, output_dir, "static_phone_contents", docs=True)


def test_search_puts_the_chapters_own_section_first_without_tex(reader, edition, output_dir):
    base, _ = edition
    for viewport in (DESKTOP, PHONE):
        reader.set_viewport_size(viewport)
        reader.goto(f"{base}/search.html?q=ring")
        results = reader.locator("#search-results ul.search li")
        results.first.wait_for(timeout=20_000)
        reader.wait_for_function("() => document.querySelectorAll('#search-results li p.context').length > 0")
        first = results.first.locator("a").first
        assert "05_ring" in first.get_attribute("href") and "The ring" in first.inner_text(), first.inner_text()
        snippets = reader.locator("#search-results p.context").all_inner_texts()
        assert snippets and not any(tex in s for s in snippets for tex in ("\\frac", "\\cdot", "\\(", "$")), snippets
        assert not any("System Settings" in s or "Light Dark" in s for s in snippets), snippets   # no theme buttons
        widest = reader.evaluate("() => Math.max(...Array.from(document.querySelectorAll('#search-results li'))"
                                 ".map(e => e.getBoundingClientRect().right))")
        assert widest <= viewport["width"], f"search results run to {widest} px at {viewport['width']} px"
        assert reader.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]
    shot(reader, output_dir, "static_phone_search", docs=True)
