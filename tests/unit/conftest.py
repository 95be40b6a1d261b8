"""Fixtures the unit tests share: what a figure really draws, for the views' legibility rules."""
from __future__ import annotations

import io

import matplotlib
import pytest


def _drawn_texts(fig) -> list:
    """Every non-empty text the renderer actually draws in one full draw (bbox_inches=None). matplotlib keeps
    tick labels outside the view, which it skips, so walking the artists alone is not enough: Text.draw is
    watched while the figure is drawn."""
    drawn, original = [], matplotlib.text.Text.draw

    def watch(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return original(self, renderer)

    matplotlib.text.Text.draw = watch
    try:
        fig.savefig(io.BytesIO(), format="png", bbox_inches=None)
    finally:
        matplotlib.text.Text.draw = original
    return drawn


@pytest.fixture
def drawn_texts():
    """``drawn_texts(fig)``: the texts a full draw of ``fig`` puts on the page."""
    return _drawn_texts
