"""``commlab animate ALGO --ranks N --out FILE``: write a schedule's animation without a notebook.

``FILE`` ending in ``.html`` gets a self-contained player, ``.gif`` an animated GIF, and a path ending in ``/``
(or an existing directory) one PNG per step (step_000.png is the input). Bad values are one line, exit 2.
matplotlib is imported only when the command runs, so ``commlab --help`` stays fast.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from commlab.errors import CommlabError, check_choice
from commlab.schedules import ALGORITHMS
from commlab.units import format_nbytes

KINDS = ".html, .htm, .gif, or a directory (a path ending in '/', or one that exists)"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "animate", help="write a schedule's step-by-step animation (HTML, GIF or PNGs)",
        description="Animate a collective's schedule step by step: each rank's buffer, the chunks it holds, "
                    "and the transfers of each step.")
    p.add_argument("algorithm", metavar="ALGO", help=f"one of: {', '.join(ALGORITHMS)}")
    p.add_argument("--ranks", default="4", metavar="N", help="number of ranks, 2 to 16 (default 4)")
    p.add_argument("--out", metavar="FILE", help=f"where to write (required): {KINDS}")
    p.add_argument("--interval-ms", default="900", metavar="MS", help="time per frame (HTML, GIF), default 900")
    return p


def _whole(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CommlabError(f"{what} must be a whole number, got {text!r}") from None


def output_kind(out: str) -> str:
    """"html", "gif" or "pngs" for the --out value, or CommlabError naming what is accepted.

    >>> output_kind("ring.html"), output_kind("ring.GIF"), output_kind("frames/")
    ('html', 'gif', 'pngs')
    """
    if out.endswith(("/", os.sep)) or Path(out).is_dir():
        return "pngs"
    suffix = Path(out).suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix == ".gif":
        return "gif"
    raise CommlabError(f"cannot tell what to write for --out {out!r}; expected {KINDS}")


def run(args: argparse.Namespace) -> int:
    check_choice("algorithm", args.algorithm, ALGORITHMS)
    if not args.out:
        raise CommlabError(f"--out FILE is required: {KINDS}")
    n_ranks = _whole(args.ranks, "--ranks")
    interval_ms = _whole(args.interval_ms, "--interval-ms")
    kind = output_kind(args.out)
    from commlab.viz.animation import ScheduleAnimation
    from commlab.viz.export import save_gif, save_pngs, to_html

    anim = ScheduleAnimation(args.algorithm, n_ranks)
    if kind == "pngs":
        paths = save_pngs(anim, args.out)
        print(f"wrote {len(paths)} PNGs (step_000.png to {paths[-1].name}) to {args.out}")
        return 0
    path = Path(args.out)
    if not path.parent.is_dir():
        raise CommlabError(f"the directory of --out {args.out!r} does not exist")
    if kind == "html":
        path.write_text(to_html(anim, interval_ms=interval_ms), encoding="utf-8")
    else:
        save_gif(anim, path, interval_ms=interval_ms)
    print(f"wrote {path} ({anim.n_steps + 1} frames, {format_nbytes(path.stat().st_size)})")
    return 0
