"""One figure style for the whole book: the rank palette, font sizes and :func:`use_book_style`.

Rank colours are a documented qualitative palette, colour-blind-safe where it can be:

1. Okabe and Ito, "Color Universal Design" (2008): the first seven ranks (black is kept for text);
2. Paul Tol, "Colour Schemes" (SRON/EPS/TN/09-002, 2021), *muted* and *high-contrast* members;
3. ColorBrewer *Dark2* (Brewer, 2002) for the few that remain.

Each later colour was picked greedily for the largest CIELAB distance to those before it, so ranks 0-7 (the
book's common case) are the most distinct; no two of the 18 colours are closer than 20 CIELAB units, and none
is close to :data:`EMPTY`. No palette keeps 16 colours apart for every reader, so the ring animation also
puts each source rank's cell at a fixed row (row s is rank s): position tells what colour may not.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import MappingProxyType

from commlab.errors import CommlabError

#: Rank colours in order (rank r gets RANK_COLORS[r]); see the module docstring for the sources.
RANK_COLORS = (
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",  # Okabe-Ito
    "#332288", "#555555", "#E7298A", "#999933", "#882255", "#A6761D", "#AA4499",  # Tol, Dark2
    "#DDCC77", "#7570B3", "#117733", "#CC6677",                                    # Tol, Dark2
)
#: A buffer cell that does not hold that rank's data yet.
EMPTY = "#EEEEEE"
#: Text, arrows and outlines.
INK = "#222222"
#: Secondary text and grid lines.
MUTED = "#777777"
#: The step where a reader's trace departs from the reference (used with a thick dashed outline too).
ALARM = "#D00000"
#: Algorithm colours for cost plots (ring, tree, double tree, naive, recursive doubling), Okabe-Ito.
ALGO_COLORS = MappingProxyType({"ring": "#0072B2", "tree": "#D55E00", "double-tree": "#009E73", "naive": "#CC79A7",
               "recursive-doubling": "#E69F00"})
#: The house rule: nothing a reader must read is set smaller than this, in points.
MIN_FONT_PT = 10
#: Font sizes in points, legible on a laptop screen and in the static HTML book; none below :data:`MIN_FONT_PT`.
FONT_SIZES = MappingProxyType({"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "xtick.labelsize": 10,
              "ytick.labelsize": 10, "legend.fontsize": 10, "legend.title_fontsize": 10,
              "figure.titlesize": 13, "figure.labelsize": 11})


def rank_colors(n_ranks: int) -> tuple[str, ...]:
    """The first ``n_ranks`` colours of :data:`RANK_COLORS`.

    >>> rank_colors(2)
    ('#E69F00', '#56B4E9')
    """
    if not isinstance(n_ranks, int) or not 1 <= n_ranks <= len(RANK_COLORS):
        raise CommlabError(f"the book's palette colours 1 to {len(RANK_COLORS)} ranks, got n_ranks={n_ranks!r}")
    return RANK_COLORS[:n_ranks]


def ink_on(colour) -> str:
    """Black or white, whichever reads better on ``colour`` (ITU-R BT.601 luma above or below one half).

    >>> ink_on("#0072B2"), ink_on("#F0E442")
    ('white', 'black')
    """
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def book_rc() -> dict:
    """The matplotlib rcParams of the book's figures (a fresh dict each call)."""
    from cycler import cycler

    rc = {
        "axes.prop_cycle": cycler(color=list(RANK_COLORS[:7])),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.color": "#DDDDDD",
        "grid.linewidth": 0.6,
        "axes.edgecolor": MUTED,
        "text.color": INK,
        "axes.labelcolor": INK,
        "figure.dpi": 100,
        "savefig.dpi": 100,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
        "legend.frameon": False,
        "lines.linewidth": 1.8,
    }
    rc.update(FONT_SIZES)
    return rc


@contextlib.contextmanager
def use_book_style() -> Iterator[None]:
    """Draw with the book's style inside a ``with`` block (matplotlib's ``rc_context``); nothing global changes.

    >>> import matplotlib
    >>> with use_book_style():
    ...     matplotlib.rcParams["font.size"]
    11.0
    """
    import matplotlib

    with matplotlib.rc_context(book_rc()):
        yield
