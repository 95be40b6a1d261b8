"""Speed and size of the ring animation: per-frame render time for N = 8 and the static HTML's size.

    .venv/bin/python benchmarks/viz.py [--repeats 3]

A frame is what the widget does on each Play tick: update the artists for the step, draw (blitted) and
encode the PNG the ipywidgets.Image shows (its caption is HTML text under the image, not drawn), at the
widget's dpi (commlab.viz.animation.LIVE_DPI); the same frame at 80 dpi, the former default, is timed beside
it. The target is under 50 ms a frame for N = 8; the static HTML of an 8-rank all-reduce must stay under
2 MB. Printed numbers are measured here, on this machine, with the load average they ran under.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import matplotlib

matplotlib.use("Agg")

from commlab.units import format_nbytes  # noqa: E402
from commlab.viz import RingAnimation, TreeAnimation, to_html  # noqa: E402
from commlab.viz.animation import LIVE_DPI  # noqa: E402
from commlab.viz.export import STATIC_DPI  # noqa: E402
from commlab.viz.widget import LIVE_COMPRESS_LEVEL  # noqa: E402

TARGET_MS = 50.0
HTML_LIMIT_NBYTES = 2_000_000


LIVE = {"compress_level": LIVE_COMPRESS_LEVEL, "caption": False, "palette": True}   # what the widget asks
STATIC = {"dpi": STATIC_DPI}                                                       # what save_pngs asks
#: The widget's dpi before it followed the static exports to 96.
FORMER_DPI = 80


def frame_times_ms(anim, repeats: int, options: dict) -> tuple[list[float], list[float]]:
    """Render every step `repeats` times (forward, then back): (wall, CPU) milliseconds per frame.

    CPU time (this process only) is printed too because the book's machines are shared: under load the wall
    time includes waiting for a core."""
    anim.set_step(0).to_png_bytes(**options)  # the first frame also draws the cached background
    wall, cpu = [], []
    order = list(range(1, anim.n_steps + 1)) + list(range(anim.n_steps - 1, -1, -1))
    for _ in range(repeats):
        for k in order:
            t0, c0 = time.perf_counter(), time.process_time()
            anim.set_step(k).to_png_bytes(**options)
            wall.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    return wall, cpu


def report(name: str, anim, repeats: int, options: dict = LIVE) -> None:
    wall, cpu = frame_times_ms(anim, repeats, options)
    median = statistics.median(wall)
    print(f"{name}: {len(wall)} frames, wall median {median:.1f} ms (worst {max(wall):.1f}), CPU median "
          f"{statistics.median(cpu):.1f} ms; wall / target {median / TARGET_MS:.2f} (target {TARGET_MS:.0f} ms)")


def load() -> str:
    return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()) + f", {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"before: {load()}")
    t0 = time.perf_counter()
    anim = RingAnimation("ring-all-reduce", 8)
    print(f"build RingAnimation(ring-all-reduce, 8) at {LIVE_DPI:g} dpi: {(time.perf_counter() - t0) * 1e3:.0f} ms")
    report(f"ring-all-reduce N=8 frame at {LIVE_DPI:g} dpi", anim, args.repeats)
    report(f"ring-all-reduce N=8 frame at {FORMER_DPI} dpi", RingAnimation("ring-all-reduce", 8, dpi=FORMER_DPI),
           args.repeats)
    report(f"ring-all-reduce N=8 frame at {STATIC_DPI:g} dpi, caption drawn, full colour (save_pngs)", anim, 1,
           STATIC)
    report(f"ring-all-reduce N=16 frame at {LIVE_DPI:g} dpi", RingAnimation("ring-all-reduce", 16), 1)
    report(f"double-tree-all-reduce N=8 frame at {LIVE_DPI:g} dpi", TreeAnimation("double-tree-all-reduce", 8),
           args.repeats)
    t0 = time.perf_counter()
    html = to_html(anim)
    nbytes = len(html.encode("utf-8"))
    print(f"to_html(ring-all-reduce, 8): {format_nbytes(nbytes)} in {time.perf_counter() - t0:.1f} s; "
          f"size / limit {nbytes / HTML_LIMIT_NBYTES:.2f} (limit {format_nbytes(HTML_LIMIT_NBYTES)})")
    print(f"after: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
