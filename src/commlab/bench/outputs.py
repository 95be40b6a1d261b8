"""Where ``commlab bench`` writes its results: checked before the sweep, written after it (or after what of it
ran: a partial sweep is saved, marked partial).

* ``--json-out FILE``: commlab's own JSON (:meth:`BenchResult.to_json`);
* ``-J FILE``: nccl-tests' JSON (:mod:`commlab.bench.nccl_json`), never overwriting, as nccl-tests;
* ``--csv FILE``: one line per size, the table's columns with units in their names;
* ``--plot FILE``: busbw and time against size, log-log, with the link's one-way bandwidth as the roof of the
  busbw panel when ``--link`` names one (nccl-tests' doc/PERFORMANCE.md: busbw is what to hold against it).

:func:`check_writable` runs before any rank starts, so that a typo in a path costs a second, not a sweep.
"""
from __future__ import annotations

import csv
import io
import json
import os

from commlab.errors import CommlabError

CSV_COLUMNS = ("size_bytes", "count", "type", "redop", "root",
               "oop_time_us", "oop_algbw_GBps", "oop_busbw_GBps", "oop_wrong",
               "ip_time_us", "ip_algbw_GBps", "ip_busbw_GBps", "ip_wrong")


def check_writable(flag: str, path: str, suffixes: tuple[str, ...] = ()) -> None:
    """CommlabError naming ``flag`` and ``path`` when a file cannot be written there (a folder that does not
    exist or is read-only, a directory in the way, a file without write permission, a suffix not in
    ``suffixes``)."""
    where = os.path.dirname(os.path.abspath(path))
    problem = None
    if suffixes and not path.lower().endswith(suffixes):
        problem = f"the file name must end in {' or '.join(suffixes)}"
    elif os.path.isdir(path):
        problem = "it is a directory"
    elif not os.path.isdir(where):
        problem = f"the folder {where} does not exist"
    elif not os.access(where, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        problem = "it is not writable (read-only folder or file)"
    if problem:
        raise CommlabError(f"cannot write {flag} {path!r}: {problem}")


def plot_suffixes() -> tuple[str, ...]:
    """The file types matplotlib can write (png, pdf, svg, ...), as suffixes."""
    from matplotlib.backend_bases import FigureCanvasBase

    return tuple("." + kind for kind in FigureCanvasBase.get_supported_filetypes())


def write_text(flag: str, path: str, text: str) -> None:
    """Write ``text`` to ``path``; CommlabError naming the flag when the system refuses (a full disk)."""
    try:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except OSError as exc:
        raise CommlabError(f"cannot write {flag} {path!r}: {exc.strerror or exc}") from None


def json_text(obj) -> str:
    """Strict JSON (no NaN or Infinity), indented."""
    return json.dumps(obj, indent=2, allow_nan=False) + "\n"


def csv_text(result) -> str:
    """The rows as CSV; a partial sweep's first line is its ``# partial:`` comment."""
    out = io.StringIO()
    if result.partial_line():
        out.write(result.partial_line() + "\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in result.rows:
        cells = [r.size_bytes, r.count, r.type, r.redop, r.root]
        for m in (r.oop, r.ip):
            cells += ["", "", "", ""] if m is None else [m.time_us, m.algbw_GBps, m.busbw_GBps,
                                                         "" if m.wrong is None else m.wrong]
        writer.writerow(cells)
    return out.getvalue()


def plot_figure(result, link=None):
    """busbw (with ``link``'s roof) and time against size, two log-log panels."""
    import numpy as np

    from commlab.units import format_nbytes
    from commlab.viz.render import new_figure
    from commlab.viz.style import MUTED, RANK_COLORS

    rows = [r for r in result.rows if r.size_bytes > 0]
    if not rows:
        raise CommlabError("--plot needs at least one size above 0 bytes; the sweep measured none")
    sizes = np.array([r.size_bytes for r in rows], dtype=float)
    fig = new_figure(10.0, 4.2, layout="constrained")
    busbw_ax, time_ax = fig.subplots(1, 2)
    for k, (label, pick) in enumerate((("out of place", lambda r: r.oop), ("in place", lambda r: r.ip))):
        measures = [pick(r) for r in rows]
        if any(m is None for m in measures):
            continue
        busbw = np.array([m.busbw_GBps for m in measures])
        busbw_ax.plot(sizes, np.where(busbw > 0, busbw, np.nan), marker="o", ms=3, color=RANK_COLORS[k], label=label)
        time_ax.plot(sizes, [m.time_us for m in measures], marker="o", ms=3, color=RANK_COLORS[k], label=label)
    if link is not None:
        busbw_ax.axhline(link.unidir_GBps, color=MUTED, linestyle=":", linewidth=2,
                         label=f"roof: {link.name}, {link.unidir_GBps:g} GB/s one way")
    for ax, ylabel in ((busbw_ax, "busbw (GB/s)"), (time_ax, "time per operation (us)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("size (nccl-tests `size`)")
        ax.set_ylabel(ylabel)
        ax.xaxis.set_major_formatter(lambda x, _pos: format_nbytes(x, binary=True))
        ax.tick_params(axis="x", labelrotation=45)
        ax.legend(loc="best")
    title = f"commlab bench: {result.op} on {result.n_ranks} ranks ({result.backend})"
    fig.suptitle(title + (" - partial" if result.partial else ""))
    return fig


def write_plot(path: str, result, link=None) -> None:
    fig = plot_figure(result, link)
    try:
        fig.savefig(path)
    except OSError as exc:
        raise CommlabError(f"cannot write --plot {path!r}: {exc.strerror or exc}") from None
