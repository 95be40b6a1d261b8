"""A slider explorer: some controls, and a figure redrawn from their values as PNG in an ipywidgets.Image.

The figure comes from a pure function of the control values (``draw(**values) -> Figure``), which the tests
call directly; the widget only wires the controls to it. A CommlabError from ``draw`` (say, a size the model
rejects) shows as a line of text instead of a traceback.
"""
from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

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


def one_two_five(low: float, high: float) -> tuple[float, ...]:
    """The round values 1, 2, 5 times a power of ten from ``low`` to ``high`` (both > 0), each the float of its
    decimal text (``2e-07``, not ``2 * 1e-7``), so a value typed as ``2e-7`` is one of them exactly.

    >>> one_two_five(1e-7, 1e-6)
    (1e-07, 2e-07, 5e-07, 1e-06)
    """
    if not (0 < low <= high and math.isfinite(high)):
        raise CommlabError(f"one_two_five needs 0 < low <= high, got low={low!r}, high={high!r}")
    values = (float(f"{m}e{e}") for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
              for m in (1, 2, 5))
    return tuple(v for v in values if low * (1 - 1e-12) <= v <= high * (1 + 1e-12))


def choice_slider(description: str, values: Sequence[float], value: float,
                  label: Callable[[float], str] = str) -> widgets.SelectionSlider:
    """A SelectionSlider over ``values`` (labelled by ``label``) set to ``value`` exactly: when ``value`` is not
    one of them it is added in order, and a grid value that would show the same label gives way to it."""
    shown = label(value)
    options = sorted([v for v in values if label(v) != shown and v != value] + [value])
    return widgets.SelectionSlider(options=[(label(v), v) for v in options], value=value, description=description,
                                   continuous_update=False, style={"description_width": "initial"})


def log_slider(description: str, value: float, low: float, high: float, base: float = 10,
               readout_format: str = ".3g") -> widgets.FloatLogSlider:
    """A FloatLogSlider from ``low`` to ``high`` (both > 0), updated when released."""
    import math

    return widgets.FloatLogSlider(value=value, base=base, min=math.log(low, base), max=math.log(high, base),
                                  step=0.05, description=description, readout_format=readout_format,
                                  continuous_update=False, style={"description_width": "initial"})
