"""The book's views: matplotlib figures and ipywidgets boxes that draw what the pure layer computes.

Nothing here computes a number the text relies on: schedules, holds and captions come from
:mod:`commlab.schedules`, times and crossovers from :mod:`commlab.cost`, link figures from
:mod:`commlab.hardware`. Figures are made without pyplot (see :mod:`commlab.viz.render`), and the widgets show
PNG frames in an ``ipywidgets.Image``, so they run in JupyterLab without ipympl and under nbval.

* animations: :class:`RingAnimation`, :class:`TreeAnimation`, :class:`ScheduleAnimation` (any algorithm),
  ``.from_trace`` for a reader's own send/recv code; :func:`ring_widget`, :func:`tree_widget`;
* kernel-free output: :func:`to_html`, :func:`save_gif`, :func:`save_pngs`;
* plots: :func:`plot_bandwidth`, :func:`plot_topology`, :func:`plot_timeline`, :func:`plot_collective`
  (chapter 04's before/after picture of one collective);
* explorers: :func:`cost_explorer` / :func:`cost_figure`, :func:`link_ratio_explorer` / :func:`link_ratio_figure`,
  and :class:`Explorer` (sliders over any ``draw(**values) -> Figure``) for a chapter's own;
* style: :func:`use_book_style`, :func:`rank_colors`.
"""
from commlab.viz.animation import (
    RingAnimation, ScheduleAnimation, TreeAnimation, ring_widget, tree_widget,
)
from commlab.viz.bandwidth import plot_bandwidth
from commlab.viz.collective import plot_collective
from commlab.viz.cost_view import cost_explorer, cost_figure
from commlab.viz.export import save_gif, save_pngs, to_html
from commlab.viz.link_view import link_ratio_explorer, link_ratio_figure
from commlab.viz.render import png_bytes
from commlab.viz.style import RANK_COLORS, rank_colors, use_book_style
from commlab.viz.timeline import plot_timeline
from commlab.viz.topology import plot_topology

__all__ = [
    "Explorer", "RANK_COLORS", "RingAnimation", "ScheduleAnimation", "TreeAnimation", "cost_explorer", "cost_figure",
    "link_ratio_explorer", "link_ratio_figure", "plot_bandwidth", "plot_collective", "plot_timeline",
    "plot_topology", "png_bytes", "rank_colors", "ring_widget", "save_gif", "save_pngs", "to_html", "tree_widget",
    "use_book_style",
]

#: Names imported on first use (PEP 562), so ``import commlab.viz`` does not import ipywidgets.
_LAZY = (("Explorer", "commlab.viz.explorer"),)


def __getattr__(name: str):
    for lazy_name, module in _LAZY:
        if name == lazy_name:
            import importlib

            return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'commlab.viz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {lazy_name for lazy_name, _ in _LAZY})
