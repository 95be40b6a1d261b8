"""The one Sphinx extension of the static edition: what commlab's pages need and the stack does not do.

* **Widgets as they first appeared.** A page has no kernel, and MyST-NB would load the ipywidgets manager from
  a CDN to draw a widget from its saved state. Instead each widget output is replaced by its still picture
  (:mod:`commlab.book.widgets`: an exercise's question, a slider's value, an explorer's figure) with a note
  whose link downloads the page's notebook (``_sources/<page>.ipynb``, the file the theme's download button
  gives), and the saved state is not put on the page.
* **Animation players that fetch nothing.** A ``to_jshtml`` player links Font Awesome from a CDN for its
  buttons' icons; the link is dropped and the icons drawn by CSS (:data:`commlab.viz.export.ICON_CSS`).
* **MathJax 3 with its TeX fonts, served from the pages' own folder** (``_static/mathjax``): the copy of the
  ``sphinx-mathjax-offline`` package (MathJax 3.2.2), or a folder given with ``--mathjax``.
* **Explicit anchors as targets.** A notebook marks a spot with ``<a id="name"></a>`` (the glossary's terms), which
  is what JupyterLab links to; Sphinx sees only raw HTML there, so a link ``glossary.ipynb#name`` would find no
  target. :func:`anchor_targets` turns each such anchor at the start of a paragraph into that paragraph's own
  id and label, so the same link lands on the same spot in both.
* **Search and the phone's page**: a scorer that ranks a page whose title names the searched word above pages
  that only mention it, snippets read without the formulas' TeX source, and the "Contents" button of the
  article's header opening the page's contents (the theme listens to the first of two such buttons, which a
  phone's width hides): ``static/commlab-scorer.js``, ``static/commlab.js``.
"""
from __future__ import annotations

import html
import json
import posixpath
import re
import shutil
from pathlib import Path

from commlab.book.widgets import MODEL_REF, WIDGET_VIEW, Renderer, static_widget

STATIC = Path(__file__).resolve().parent / "static"
MATHJAX_STATIC = "mathjax"
MATHJAX_ENTRY = "tex-chtml.js"
#: What a page typesetting TeX to CommonHTML never loads: the other combined builds and the SVG output.
_MATHJAX_SKIP = ("*svg*", "mml-*.js", "tex-mml-*.js", "tex-chtml-full*.js", "node-main.js", "*.md")
_WIDGET_SCRIPT = f'<script type="{WIDGET_VIEW}">'
WIDGET_STATE_KEY = "ipywidgets_state"


def jupyter_slug(heading: str) -> str:
    """A heading's anchor as JupyterLab makes it (the text, each space a hyphen), so that a link written in
    a notebook, ``05_ring_allreduce.ipynb#The-ring``, lands on the same section of the page.

    >>> jupyter_slug("The ring"), jupyter_slug("5.2 Cost: alpha and beta")
    ('The-ring', '5.2-Cost:-alpha-and-beta')
    """
    return heading.strip().replace(" ", "-")


def packaged_mathjax() -> Path | None:
    """The MathJax 3 folder shipped by the ``sphinx-mathjax-offline`` package, or None when not installed."""
    import importlib.metadata

    try:
        files = importlib.metadata.files("sphinx-mathjax-offline") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == MATHJAX_ENTRY and file.parent.name == "mathjax":
            folder = Path(str(file.locate())).parent
            return folder if (folder / MATHJAX_ENTRY).is_file() else None
    return None


def mathjax_source(config_dir: str) -> Path:
    """The MathJax folder a build copies: ``--mathjax DIR`` when given, else :func:`packaged_mathjax`."""
    from commlab.errors import CommlabError

    if config_dir:
        folder = Path(config_dir)
        if not (folder / MATHJAX_ENTRY).is_file():
            raise CommlabError(f"--mathjax {config_dir!r} has no {MATHJAX_ENTRY}; expected a MathJax 3 folder "
                               "(its es5/ folder, or the sphinx-mathjax-offline package's static/mathjax)")
        return folder
    packaged = packaged_mathjax()
    if packaged is None:
        raise CommlabError("the static edition serves MathJax from a local copy, and none is installed: "
                           "pip install 'commlab[book]' (it brings sphinx-mathjax-offline), or pass --mathjax DIR")
    return packaged


def _page_notebook(docname: str) -> str:
    """The link from the page of ``docname`` to its notebook, as the theme's download button gives it."""
    return posixpath.relpath(f"_sources/{docname}.ipynb", posixpath.dirname(docname) or ".")


def _widget_state(env, docname: str) -> dict:
    """The saved widget state of ``docname``'s notebook, taken out of what MyST-NB would put on the page."""
    js_files = getattr(env, "nb_metadata", {}).get(docname, {}).get("js_files", {})
    entry = js_files.pop(WIDGET_STATE_KEY, None)
    for key in [key for key in js_files if key.startswith("ipywidgets_")]:
        js_files.pop(key)
    if not entry:
        return {}
    try:
        state = json.loads(entry[1].get("body", "{}").replace("<\\/script>", "</script>")).get("state", {})
    except (ValueError, AttributeError):
        return {}
    return state if isinstance(state, dict) else {}


def _model_id(raw_html: str) -> str:
    body = raw_html.strip()[len(_WIDGET_SCRIPT):].rsplit("</script>", 1)[0]
    try:
        view = json.loads(body)
    except ValueError:
        return ""
    model_id = view.get("model_id", "") if isinstance(view, dict) else ""
    return model_id[len(MODEL_REF):] if model_id.startswith(MODEL_REF) else model_id


def render_outputs(app, doctree) -> None:
    """Widget views become stills; players lose their Font Awesome link (see the module)."""
    from docutils import nodes

    from commlab.viz.export import without_font_awesome

    env, docname = app.env, app.env.docname
    renderer, download, count = Renderer(_widget_state(env, docname)), _page_notebook(docname), 0
    for node in list(doctree.findall(nodes.raw)):
        if "html" not in node.get("format", "").split():
            continue
        text = node.astext()
        if text.lstrip().startswith(_WIDGET_SCRIPT):
            page_html, _ = static_widget(renderer, _model_id(text), download)
            count += 1
        elif "font-awesome" in text:
            page_html = without_font_awesome(text)
        else:
            continue
        node.replace_self(nodes.raw("", page_html, format="html"))
    if not hasattr(env, "commlab_widget_notes"):
        env.commlab_widget_notes = {}
    env.commlab_widget_notes[docname] = count


def _purge(app, env, docname: str) -> None:
    getattr(env, "commlab_widget_notes", {}).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    if not hasattr(env, "commlab_widget_notes"):
        env.commlab_widget_notes = {}
    env.commlab_widget_notes.update({d: n for d, n in getattr(other, "commlab_widget_notes", {}).items()
                                     if d in docnames})


def _configure(app, config) -> None:
    config.mathjax_path = f"{MATHJAX_STATIC}/{MATHJAX_ENTRY}"
    # $...$ also in outputs (an exercise's question is HTML with TeX in it), as JupyterLab typesets it
    config.mathjax3_config = {"tex": {"inlineMath": [["\\(", "\\)"], ["$", "$"]],
                                      "displayMath": [["\\[", "\\]"], ["$$", "$$"]]},
                              "options": {"ignoreHtmlClass": "tex2jax_ignore|mathjax_ignore|document",
                                          "processHtmlClass": "tex2jax_process|mathjax_process|math|output_area"
                                                              "|cell_output|commlab-widget"}}
    config.html_static_path = [*config.html_static_path, str(STATIC)]


def _copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder is None or app.builder.format != "html":
        return
    source = mathjax_source(app.config.commlab_mathjax_dir)
    target = Path(app.builder.outdir) / "_static" / MATHJAX_STATIC
    stamp = target / ".commlab-source"
    if stamp.is_file() and stamp.read_text() == str(source.resolve()):
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*_MATHJAX_SKIP))
    stamp.write_text(str(source.resolve()))


def add_contents(app, docname: str, source: list[str]) -> None:
    """The book's tables of contents (``commlab_toc``, MyST) added to the home page's notebook as it is read,
    as a last Markdown cell: the notebook on disk is not touched."""
    if docname != app.config.root_doc or not app.config.commlab_toc:
        return
    try:
        nb = json.loads(source[0])
    except ValueError:
        return   # not JSON: MyST-NB reports the notebook as it is
    if isinstance(nb, dict) and isinstance(nb.get("cells"), list):
        cell = {"cell_type": "markdown", "metadata": {}, "source": app.config.commlab_toc}
        if nb.get("nbformat", 4) >= 4 and nb.get("nbformat_minor", 0) >= 5:
            cell["id"] = "commlab-contents"
        nb["cells"].append(cell)
        source[0] = json.dumps(nb)


def _write_index(app, exception) -> None:
    """``index.html``: the home page's address at the top of the edition, pointing at the home page."""
    if exception is not None or app.builder is None or app.builder.format != "html":
        return
    home, title = html.escape(f"{app.config.root_doc}.html"), html.escape(str(app.config.project))
    Path(app.builder.outdir, "index.html").write_text(
        f'<!DOCTYPE html>\n<html lang="{app.config.language or "en"}"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0; url={home}"><title>{title}</title></head>'
        f'<body><p><a href="{home}">{title}</a></p></body></html>\n', encoding="utf-8")


def widget_notes(env) -> int:
    """How many widget outputs the built pages show as stills."""
    return sum(getattr(env, "commlab_widget_notes", {}).values())


_ANCHOR = re.compile(r"""^\s*<a\s+(?:id|name)\s*=\s*["']([^"']+)["']\s*>\s*(</a>)?\s*$""")


def anchor_targets(document) -> None:
    """``<a id="name"></a>`` opening a paragraph becomes the paragraph's id and an explicit target ``name``, so MyST
    resolves ``doc.ipynb#name`` to it; the raw anchor is dropped (MyST parses ``<a ...>`` and ``</a>`` as two raw
    nodes), so the page does not hold the id twice."""
    from docutils import nodes

    for raw in list(document.findall(nodes.raw)):
        match = _ANCHOR.match(raw.astext())
        parent = raw.parent
        if not match or "html" not in raw.get("format", "").split() or not isinstance(parent, nodes.paragraph):
            continue
        name, closed = match.group(1), match.group(2) is not None
        following = raw.next_node(descend=False, siblings=True)
        if not closed and not (isinstance(following, nodes.raw) and following.astext().strip() == "</a>"):
            continue
        if name in document.ids or parent.index(raw) != 0:
            continue
        parent["ids"].append(name)
        parent["names"].append(name)
        document.note_explicit_target(parent, parent)
        parent.remove(raw)
        if not closed:
            parent.remove(following)


def _anchor_transform():
    """The docutils transform of :func:`anchor_targets`, run before Sphinx's domains collect the labels (850)."""
    from docutils.transforms import Transform

    class ExplicitAnchors(Transform):
        default_priority = 840

        def apply(self, **kwargs) -> None:
            anchor_targets(self.document)

    return ExplicitAnchors


def setup(app) -> dict:
    app.add_config_value("commlab_mathjax_dir", "", "env")
    app.add_config_value("commlab_toc", "", "env")
    app.connect("source-read", add_contents)
    app.add_transform(_anchor_transform())
    app.connect("build-finished", _write_index)
    app.connect("config-inited", _configure)
    app.connect("doctree-read", render_outputs, priority=400)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _copy_mathjax)
    app.add_css_file("commlab.css")
    app.add_js_file("commlab-scorer.js")   # before the theme's searchtools.js, which keeps a Scorer it finds
    app.add_js_file("commlab.js")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
