"""Figures without pyplot: a :class:`~matplotlib.figure.Figure` on an Agg canvas, and its PNG bytes.

The book never goes through ``matplotlib.pyplot``: a figure made here is not registered with any backend, so a
notebook does not display it twice, nothing global changes, and the same code runs under nbval, in a script
and in the ipywidgets views (which show the PNG bytes in an ``ipywidgets.Image``; ipympl is not needed).
"""
from __future__ import annotations

import io
from typing import Literal, cast

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from commlab.viz.style import book_rc


def new_figure(width_in: float, height_in: float, dpi: float = 100,
               layout: Literal["constrained", "compressed", "tight"] | None = None) -> Figure:
    """An empty figure of ``width_in`` x ``height_in`` inches, in the book's style, with an Agg canvas.

    ``layout`` is matplotlib's layout engine ("constrained" for plots with outside legends, None for scenes).
    """
    import matplotlib

    with matplotlib.rc_context(book_rc()):
        fig = Figure(figsize=(width_in, height_in), dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Figure, dpi: float | None = None, compress_level: int = 6) -> bytes:
    """The figure as PNG bytes (the whole canvas, so every frame of an animation has the same size).

    ``compress_level`` is zlib's 0-9: the live widget uses a low level (speed), static exports the default.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi or fig.dpi, pil_kwargs={"compress_level": compress_level})
    return buf.getvalue()



class Blitter:
    """Draw the figure's static artists once, then per frame only the artists that change (matplotlib's
    blitting: ``copy_from_bbox`` / ``restore_region`` / ``draw_artist``), and encode the canvas as PNG.

    ``dynamic`` lists the changing artists in drawing order. Text is the slow part of an Agg frame (each glyph
    is rasterised), so keeping the key, title and labels in the cached background is what makes a frame fast.
    """

    def __init__(self, fig: Figure, dynamic: list) -> None:
        self.fig, self.dynamic = fig, dynamic
        self._background: object = None
        self._key: tuple[float, tuple[float, ...]] | None = None

    @property
    def _canvas(self) -> FigureCanvasAgg:
        return cast(FigureCanvasAgg, self.fig.canvas)    # new_figure gives every figure an Agg canvas

    def _capture(self) -> None:
        canvas = self._canvas
        for artist in self.dynamic:
            artist.set_animated(True)
        canvas.draw()
        self._background = canvas.copy_from_bbox(self.fig.bbox)
        for artist in self.dynamic:
            artist.set_animated(False)
        self._key = (self.fig.dpi, tuple(self.fig.get_size_inches()))

    def rgba(self):
        """The current frame as a [height, width, 4] uint8 array (a view of the canvas)."""
        import numpy as np

        if self._background is None or self._key != (self.fig.dpi, tuple(self.fig.get_size_inches())):
            self._capture()
        canvas = self._canvas
        renderer = canvas.get_renderer()
        canvas.restore_region(self._background)
        for artist in self.dynamic:
            if artist.get_visible():
                artist.draw(renderer)
        return np.asarray(canvas.buffer_rgba())

    def png(self, compress_level: int = 6, crop_bottom_px: int = 0, palette: bool = False) -> bytes:
        """The current frame as PNG bytes (Pillow), the same pixels as ``rgba`` less ``crop_bottom_px`` rows.

        ``palette=True`` quantises to 256 colours first (Pillow's fast octree, no dithering): the frame has a
        few dozen colours plus anti-aliasing, so it looks the same, encodes faster and is about 2.5x smaller.
        """
        from PIL import Image

        import numpy as np

        buf = io.BytesIO()
        rgba = self.rgba()
        rgba = rgba[:rgba.shape[0] - crop_bottom_px] if crop_bottom_px else rgba
        image = Image.fromarray(np.ascontiguousarray(rgba[..., :3]))  # opaque figure: alpha carries nothing
        if palette:
            image = image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        image.save(buf, format="PNG", compress_level=compress_level)
        return buf.getvalue()


def size_axis(ax, tick_base: int | None = 4) -> None:
    """A message-size x axis: log2 scale, ticks every ``tick_base``-fold (None: matplotlib's), labelled in
    binary units (1 KiB, 64 MiB); the one axis every size-sweep figure of the book shares."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    from commlab.units import format_nbytes

    ax.set_xscale("log", base=2)
    if tick_base is not None:
        ax.xaxis.set_major_locator(LogLocator(base=tick_base))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: format_nbytes(x, binary=True)))
