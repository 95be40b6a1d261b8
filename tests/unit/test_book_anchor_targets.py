"""The static edition resolves a link to ``<a id="name"></a>`` (the glossary's terms), as JupyterLab does."""
from __future__ import annotations

import pytest

docutils = pytest.importorskip("docutils")

from docutils import nodes  # noqa: E402
from docutils.frontend import get_default_settings  # noqa: E402
from docutils.parsers.rst import Parser  # noqa: E402
from docutils.utils import new_document  # noqa: E402

from commlab.book.sphinx_ext import anchor_targets  # noqa: E402


def _paragraph(document, *raw_html, text="**term**: its definition"):
    para = nodes.paragraph()
    for chunk in raw_html:
        para += nodes.raw(chunk, chunk, format="html")
    para += nodes.Text(text)
    document += para
    return para


def _document():
    return new_document("glossary", get_default_settings(Parser))


def test_an_anchor_split_in_two_raw_nodes_becomes_the_paragraphs_target():
    document = _document()
    para = _paragraph(document, '<a id="all-reduce">', "</a>")
    anchor_targets(document)
    assert para["ids"] == ["all-reduce"] and document.ids["all-reduce"] is para
    assert document.nametypes["all-reduce"] is True                 # explicit: Sphinx's std domain labels it
    assert not list(para.findall(nodes.raw))                        # the raw anchor is gone: one id on the page


def test_a_whole_anchor_in_one_raw_node_too():
    document = _document()
    para = _paragraph(document, "<a id='dp'></a>")
    anchor_targets(document)
    assert para["ids"] == ["dp"] and not list(para.findall(nodes.raw))


def test_other_raw_html_and_anchors_inside_a_sentence_are_left_alone():
    document = _document()
    para = _paragraph(document, "<b>", "</b>")
    inner = nodes.paragraph()
    inner += nodes.Text("see ")
    inner += nodes.raw('<a id="late">', '<a id="late">', format="html")
    inner += nodes.raw("</a>", "</a>", format="html")
    document += inner
    anchor_targets(document)
    assert para["ids"] == [] and inner["ids"] == [] and len(list(inner.findall(nodes.raw))) == 2
