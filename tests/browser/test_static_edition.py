"""The static edition in Chromium with the network cut: pages load from file://, the ``to_jshtml``
animation plays, formulas are typeset when a local MathJax exists, and nothing else is fetched.
"""
from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from commlab.book import load
from commlab.book.build import BuildConfig, build
from commlab.book.mathjax import CDN_URL, packaged_mathjax

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
        assert page.get_by_text("Interactive widget: run this notebook in JupyterLab to use it").count() == 1
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
