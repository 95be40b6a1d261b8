"""The static edition in Chromium with the network cut: pages load from file://, the ``to_jshtml``
animation plays, formulas are typeset when a local MathJax exists, widgets show as they first appeared, the
search box finds a word on another page and takes the reader there, the sidebar marks the page, a dark system
gets a dark page, and nothing else is fetched.
"""
from __future__ import annotations

from urllib.parse import unquote

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from commlab.book import load
from commlab.book.build import BuildConfig, build
from commlab.book.mathjax import CDN_URL, packaged_mathjax
from commlab.book.widgets import NOTE_LIVE

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ANIMATION = """import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.animation import FuncAnimation
from IPython.display import HTML, display
fig, ax = plt.subplots(figsize=(3, 2))
ax.set_xlim(0, 5)
(dot,) = ax.plot([0], [0.5], "o", markersize=12)
anim = FuncAnimation(fig, lambda k: dot.set_xdata([k]), frames=6, interval=150)
display(HTML(anim.to_jshtml()))
plt.close(fig)"""


def executed_book(root):
    root.mkdir()
    (root / "book.toml").write_text('[book]\ntitle = "Offline"\n[[part]]\ntitle = "P"\n'
                                    'chapters = ["chapters/00_anim.ipynb"]\n')
    nb = new_notebook(cells=[new_markdown_cell("# Offline\nThe ring sends $2(N-1)/N \\cdot S$ bytes."),
                             new_code_cell(ANIMATION), new_code_cell("import ipywidgets\nipywidgets.IntSlider()")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (root / "chapters").mkdir()
    nbformat.write(nb, root / "chapters" / "00_anim.ipynb")
    return load(root / "book.toml")


def two_page_book(root):
    root.mkdir()
    (root / "book.toml").write_text('[book]\ntitle = "Searchable"\n[[part]]\ntitle = "P"\n'
                                    'chapters = ["chapters/00_a.ipynb", "chapters/01_b.ipynb"]\n')
    (root / "chapters").mkdir()
    nbformat.write(new_notebook(cells=[new_markdown_cell("# First\nNothing special here.")]),
                   root / "chapters" / "00_a.ipynb")
    nbformat.write(new_notebook(cells=[new_markdown_cell("# Second\n## The ring's secret\nA ring "
                                                         "all-reduce sends 2(N-1) messages, says the zorblax.")]),
                   root / "chapters" / "01_b.ipynb")
    return load(root / "book.toml")


def test_static_page_works_offline_and_its_animation_plays(browser_context, tmp_path, output_dir):
    out = tmp_path / "html"
    result = build(executed_book(tmp_path / "book"), BuildConfig(out_dir=out, execute=True, timeout_s=120))
    attempted: list[str] = []

    def offline(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            attempted.append(route.request.url)
            route.abort()

    page = browser_context.new_page()
    try:
        page.route("**/*", offline)
        page.goto((out / "chapters" / "00_anim.html").as_uri())
        page.wait_for_selector("div.animation img")
        frame = page.locator("div.animation img").first
        before = frame.get_attribute("src")
        page.locator("div.animation .anim-buttons button:has(.fa-play)").last.click()
        page.wait_for_function("(src) => document.querySelector('div.animation img').src !== src", arg=before,
                               timeout=10_000)
        assert page.get_by_text(NOTE_LIVE).count() == 1   # the slider, as it first appeared
        if result.mathjax_local:
            page.wait_for_selector(".MathJax, .MathJax_CHTML, mjx-container", timeout=20_000)
        page.screenshot(path=str(output_dir / "static_edition.png"), full_page=True)
        page.goto((out / "index.html").as_uri())
        assert page.locator("a", has_text="Offline").count() >= 1
    finally:
        page.close()
    expected = [] if result.mathjax_local else [CDN_URL]
    assert attempted == expected, f"the static page tried the network: {attempted}"
    assert result.mathjax_local == (packaged_mathjax() is not None)


def test_offline_search_sidebar_download_and_dark_mode(browser_context, tmp_path):
    out = tmp_path / "html"
    build(two_page_book(tmp_path / "book"), BuildConfig(out_dir=out))
    attempted: list[str] = []
    page = browser_context.new_page()
    try:
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (attempted.append(route.request.url), route.abort()))
        page.goto((out / "chapters" / "00_a.html").as_uri())
        assert page.locator(".commlab-sidebar [aria-current=page]").inner_text() == "First"
        download = page.locator("a.commlab-download")
        assert download.get_attribute("download") is not None and download.get_attribute("href") == "00_a.ipynb"
        page.keyboard.press("/")                                    # the search box takes the focus
        page.keyboard.type("Zorblax AllReduce")                     # any case, the compound without its hyphen
        hit = page.locator("#commlab-search-results a")
        hit.first.wait_for(timeout=10_000)
        assert hit.count() == 1 and "Second" in hit.first.inner_text() and "zorblax" in hit.first.inner_html()
        page.keyboard.press("Enter")
        page.wait_for_url("**/01_b.html#*", timeout=10_000)
        assert page.locator(".commlab-sidebar [aria-current=page]").inner_text() == "Second"
        section = page.locator(".commlab-sections a").first
        assert section.inner_text() == "The ring's secret"
        assert unquote(page.url.split("#", 1)[1]) == section.get_attribute("href")[1:]   # at the section
        light = page.evaluate("getComputedStyle(document.body).backgroundColor")
        page.emulate_media(color_scheme="dark")
        dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert light == "rgb(255, 255, 255)" and dark == "rgb(17, 17, 17)", (light, dark)
    finally:
        page.close()
    expected = [] if packaged_mathjax() is not None else [CDN_URL, CDN_URL]
    assert attempted == expected, f"the static pages tried the network: {attempted}"
