"""``commlab animate ALGO --ranks N --out FILE``: write a schedule's animation without a notebook.

``FILE`` ending in ``.html`` gets a self-contained player (nothing loaded from the network), ``.gif`` an animated
GIF, and a path ending in ``/`` (or an existing directory) one PNG per step (step_000.png is the input). The
destination is checked before anything is drawn, and a file is written whole or not at all. Bad values, a
folder that cannot be written and a full disk are one line naming the value or file, exit 2. matplotlib is
imported only when the command runs, so ``commlab --help`` stays fast.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from commlab.errors import CommlabError
from commlab.output import check_writable_dir, describe, write_atomic
from commlab.cli.simulate import algorithm_name, algorithms_help
from commlab.units import format_nbytes

KINDS = ".html, .htm, .gif, or a directory (a path ending in '/', or one that exists)"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "animate", help="write a schedule's step-by-step animation (HTML, GIF or PNGs)",
        description="Animate a collective's schedule step by step: each rank's buffer, the chunks it holds, "
                    "and the transfers of each step.")
    p.add_argument("algorithm", metavar="ALGO", help=algorithms_help())
    p.add_argument("--ranks", default="4", metavar="N", help="number of ranks, 2 to 16 (default 4)")
    p.add_argument("--out", metavar="FILE", help=f"where to write (required): {KINDS}")
    p.add_argument("--interval-ms", default="900", metavar="MS",
                   help="time per frame (HTML, GIF), 20 to 60000, default 900")
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


def _interval_ms(text: str) -> int:
    from commlab.viz.export import MAX_INTERVAL_MS, MIN_INTERVAL_MS

    interval_ms = _whole(text, "--interval-ms")
    if not MIN_INTERVAL_MS <= interval_ms <= MAX_INTERVAL_MS:
        raise CommlabError(f"--interval-ms must be {MIN_INTERVAL_MS} to {MAX_INTERVAL_MS} milliseconds per frame "
                           f"(one frame a minute at most), got {text}")
    return interval_ms


def _destination(out: str, kind: str) -> Path:
    """The checked destination: a writable folder for PNGs, else a file path in a writable folder."""
    if kind == "pngs":
        return check_writable_dir(out, f"--out {out!r}")
    path = Path(out)
    if not path.parent.is_dir():
        raise CommlabError(f"the directory of --out {out!r} does not exist")
    check_writable_dir(path.parent, f"--out {out!r}")
    return path


def _save_gif(anim, path: Path, interval_ms: int) -> None:
    """The GIF through a temporary file in the same folder, so a failure leaves no half-written file."""
    import tempfile

    from commlab.viz.export import save_gif

    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".gif", dir=path.parent)
    os.close(fd)
    try:
        save_gif(anim, tmp, interval_ms=interval_ms)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise CommlabError(describe(exc, path)) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def run(args: argparse.Namespace) -> int:
    args.algorithm = algorithm_name(args.algorithm)
    if not args.out:
        raise CommlabError(f"--out FILE is required: {KINDS}")
    n_ranks = _whole(args.ranks, "--ranks")
    interval_ms = _interval_ms(args.interval_ms)
    kind = output_kind(args.out)
    path = _destination(args.out, kind)
    from commlab.viz.animation import ScheduleAnimation
    from commlab.viz.export import save_pngs, to_html

    anim = ScheduleAnimation(args.algorithm, n_ranks)
    if kind == "pngs":
        paths = save_pngs(anim, path)
        print(f"wrote {len(paths)} PNGs (step_000.png to {paths[-1].name}) to {args.out}")
        return 0
    if kind == "html":
        write_atomic(path, to_html(anim, interval_ms=interval_ms))
    else:
        _save_gif(anim, path, interval_ms)
    print(f"wrote {path} ({anim.n_steps + 1} frames, {format_nbytes(path.stat().st_size)})")
    return 0
