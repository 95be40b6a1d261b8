"""viz style: the rank palette is distinct (CIELAB distance computed here from the sRGB standard), the
book style is a context that changes nothing outside it."""
import itertools

import matplotlib
import numpy as np
import pytest

from commlab.errors import CommlabError
from commlab.viz.style import EMPTY, RANK_COLORS, rank_colors, use_book_style


def srgb_to_lab(hex_colour: str) -> np.ndarray:
    """IEC 61966-2-1 sRGB -> CIE XYZ (D65) -> CIELAB, written out here."""
    rgb = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_enough_distinct_rank_colours_for_16_ranks():
    assert len(RANK_COLORS) > 16
    assert len({c.upper() for c in RANK_COLORS}) == len(RANK_COLORS)
    lab = [srgb_to_lab(c) for c in RANK_COLORS]
    closest = min(np.linalg.norm(a - b) for a, b in itertools.combinations(lab, 2))
    assert closest > 20, closest          # ~2.3 is a just-noticeable difference
    empty = srgb_to_lab(EMPTY)
    assert min(np.linalg.norm(empty - c) for c in lab) > 20


def test_the_first_eight_are_the_most_distinct():
    def closest(colours):
        lab = [srgb_to_lab(c) for c in colours]
        return min(np.linalg.norm(a - b) for a, b in itertools.combinations(lab, 2))

    assert closest(RANK_COLORS[:8]) > 25
    assert closest(RANK_COLORS[:8]) >= closest(RANK_COLORS)


@pytest.mark.parametrize("bad", [0, len(RANK_COLORS) + 1, "4"])
def test_rank_colors_rejects_counts_it_cannot_colour(bad):
    with pytest.raises(CommlabError, match="n_ranks"):
        rank_colors(bad)


def test_book_style_is_a_context():
    before = matplotlib.rcParams["axes.spines.top"], matplotlib.rcParams["font.size"]
    with use_book_style():
        assert matplotlib.rcParams["axes.spines.top"] is False
        assert matplotlib.rcParams["font.size"] >= 10
    assert (matplotlib.rcParams["axes.spines.top"], matplotlib.rcParams["font.size"]) == before


def test_no_book_font_is_under_the_house_minimum_of_10_pt():
    from commlab.viz.style import FONT_SIZES, MIN_FONT_PT

    assert MIN_FONT_PT == 10
    assert {"font.size", "legend.fontsize", "xtick.labelsize", "ytick.labelsize"} <= set(FONT_SIZES)
    assert min(FONT_SIZES.values()) >= 10, dict(FONT_SIZES)
    with use_book_style():
        for key in ("font.size", "legend.fontsize", "xtick.labelsize", "ytick.labelsize", "axes.labelsize"):
            assert matplotlib.rcParams[key] >= 10, key
        title = matplotlib.rcParams["legend.title_fontsize"]
        assert title is None or title >= 10
