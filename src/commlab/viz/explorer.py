"""A slider explorer: some controls, and a figure redrawn from their values as PNG in an ipywidgets.Image.

The figure comes from a pure function of the control values (``draw(**values) -> Figure``), which the tests
call directly; the widget only wires the controls to it. A CommlabError from ``draw`` (say, a size the model
rejects) shows as a line of text instead of a traceback.
"""
from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets

from commlab.errors import CommlabError
from commlab.viz.render import png_bytes
from commlab.viz.style import ALARM


class Explorer(widgets.VBox):
    """Controls (``self.controls[name]``) above the figure (``self.image``) and a status line (``self.text``)."""

    def __init__(self, controls: dict[str, widgets.Widget], draw: Callable, columns: int = 2) -> None:
        self.controls, self.draw = controls, draw
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.text = widgets.HTML()
        items = list(controls.values())
        rows = [widgets.HBox(items[i:i + columns]) for i in range(0, len(items), columns)]
        super().__init__(rows + [self.image, self.text])
        for control in items:
            control.observe(self._on_change, names="value")
        self.redraw()

    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def redraw(self) -> None:
        """Draw the figure for the current values (the observers call this on every change)."""
        try:
            fig = self.draw(**self.values())
        except CommlabError as exc:
            self.text.value = f"<span style='color:{ALARM}'>{html.escape(str(exc))}</span>"
            return
        self.image.value = png_bytes(fig, compress_level=1)
        self.text.value = ""

    def _on_change(self, _change) -> None:
        self.redraw()


def log_slider(description: str, value: float, low: float, high: float, base: float = 10,
               readout_format: str = ".3g") -> widgets.FloatLogSlider:
    """A FloatLogSlider from ``low`` to ``high`` (both > 0), updated when released."""
    import math

    return widgets.FloatLogSlider(value=value, base=base, min=math.log(low, base), max=math.log(high, base),
                                  step=0.05, description=description, readout_format=readout_format,
                                  continuous_update=False, style={"description_width": "initial"})
