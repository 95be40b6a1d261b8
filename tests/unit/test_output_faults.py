"""Where `commlab animate` and `commlab book build` write, probed as users hit it (issue 18): a read-only
folder, a file or /dev/null where a folder belongs, a full disk, an absurd --interval-ms, a manifest that is
binary or unreadable, listed notebooks that are JSON but no notebook. Each is one line on stderr naming the
file or value, exit 2, no traceback and no half-written file.

Faults are injected at the operating system's calls (``os.mkdir``, ``tempfile.mkstemp``, a write), so they hold
for root too, who ignores permission bits; one test repeats the probes on real file systems (a read-only and a
64 KiB tmpfs, mounted in a user namespace with ``unshare``) where the machine allows it.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell, new_notebook

from commlab.cli import main

MANIFEST = '[book]\ntitle = "Faults"\n[[part]]\ntitle = "P"\nchapters = ["chapters/00_a.ipynb"]\n'


def one_line_error(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"commlab {command}: error: "), err
    assert "Traceback" not in err
    return err


def small_book(root: Path) -> Path:
    (root / "chapters").mkdir(parents=True)
    (root / "book.toml").write_text(MANIFEST)
    nbformat.write(new_notebook(cells=[new_markdown_cell("# A\nText.")]), root / "chapters" / "00_a.ipynb")
    return root / "book.toml"


def fake_mathjax(folder: Path) -> Path:
    """A folder that passes for MathJax 3 (the static edition's --mathjax)."""
    folder.mkdir(parents=True)
    (folder / "tex-chtml.js").write_text("/* MathJax 3 */")
    return folder


@pytest.fixture
def read_only(monkeypatch):
    """Make a folder read-only as the system would (EROFS on creating anything in it), root or not."""
    def apply(folder: Path) -> Path:
        folder = folder.resolve()
        real_mkdir, real_mkstemp = os.mkdir, tempfile.mkstemp

        def inside(path) -> bool:
            return Path(os.path.abspath(path)).is_relative_to(folder)

        def mkdir(path, *args, **kwargs):
            if inside(path):
                raise OSError(errno.EROFS, "Read-only file system", str(path))
            return real_mkdir(path, *args, **kwargs)

        def mkstemp(*args, dir=None, **kwargs):
            if dir is not None and inside(dir):
                raise OSError(errno.EROFS, "Read-only file system", str(dir))
            return real_mkstemp(*args, dir=dir, **kwargs)

        monkeypatch.setattr(os, "mkdir", mkdir)
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
        return folder
    return apply


@pytest.fixture
def full_disk(monkeypatch):
    """Writes of more than a few bytes through commlab.output into a folder fail with ENOSPC."""
    def apply(folder: Path) -> Path:
        folder = folder.resolve()
        real_fdopen = os.fdopen

        class Full:
            def __init__(self, fh):
                self.fh = fh

            def write(self, data):
                if len(data) > 16:
                    raise OSError(errno.ENOSPC, "No space left on device")
                return self.fh.write(data)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.fh.close()

        def fdopen(fd, *args, **kwargs):
            fh = real_fdopen(fd, *args, **kwargs)
            target = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists(f"/proc/self/fd/{fd}") else ""
            return Full(fh) if Path(target).is_relative_to(folder) else fh

        monkeypatch.setattr(os, "fdopen", fdopen)
        return folder
    return apply


# --- animate ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, words", [("99999999999999", "got 99999999999999"), ("19", "got 19"),
                                          ("-5", "got -5"), ("1.5", "'1.5'"), ("60001", "got 60001")])
def test_animate_refuses_an_interval_out_of_range(value, words, tmp_path, capsys):
    out = tmp_path / "ring.html"
    assert main(["animate", "ring-all-reduce", "--out", str(out), "--interval-ms", value]) == 2
    err = one_line_error(capsys, "animate")
    assert "--interval-ms" in err and words in err and not out.exists()


@pytest.mark.parametrize("name", ["ring.html", "ring.gif", "frames/"])
def test_animate_into_a_read_only_folder_names_it(name, tmp_path, read_only, capsys):
    (tmp_path / "ro").mkdir()
    folder = read_only(tmp_path / "ro")
    assert main(["animate", "ring-all-reduce", "--ranks", "3", "--out", f"{folder}/{name}"]) == 2
    err = one_line_error(capsys, "animate")
    assert str(folder) in err and "Read-only file system" in err


def test_animate_on_a_full_disk_leaves_no_half_file(tmp_path, full_disk, monkeypatch, capsys):
    folder = full_disk(tmp_path)
    assert main(["animate", "ring-all-reduce", "--ranks", "3", "--out", str(folder / "ring.html")]) == 2
    err = one_line_error(capsys, "animate")
    assert "ring.html" in err and "No space left on device" in err and "disk is full" in err

    import commlab.viz.export as export

    def save_gif_half(anim, path, interval_ms=900, dpi=None):
        Path(path).write_bytes(b"GIF89a half")
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(export, "save_gif", save_gif_half)
    assert main(["animate", "ring-all-reduce", "--ranks", "3", "--out", str(folder / "ring.gif")]) == 2
    err = one_line_error(capsys, "animate")
    assert "ring.gif" in err and "No space left" in err
    assert sorted(p.name for p in folder.iterdir()) == []   # neither file, nor a temporary one


def test_animate_html_loads_nothing_from_the_network(tmp_path):
    out = tmp_path / "ring.html"
    assert main(["animate", "ring-all-reduce", "--ranks", "3", "--out", str(out)]) == 0
    html = out.read_text()
    assert "font-awesome" not in html and "http://" not in html and "https://" not in html.replace(
        "https://matplotlib.org", "")   # matplotlib's player names no other address
    assert 'class="fa fa-play"' in html and ".animation .fa-play::before" in html   # icons drawn by CSS


# --- book ------------------------------------------------------------------------------------------------

def test_book_build_out_an_existing_file_or_dev_null_is_refused(tmp_path, capsys):
    manifest = small_book(tmp_path / "book")
    target = tmp_path / "taken.html"
    target.write_text("mine")
    for out in (str(target), "/dev/null"):
        assert main(["book", "--manifest", str(manifest), "build", "--out", out]) == 2
        err = one_line_error(capsys, "book")
        assert f"--out {out!r} is not a folder" in err
    assert target.read_text() == "mine"


def test_book_build_with_a_file_as_its_cache_is_refused_before_executing(tmp_path, capsys):
    manifest = small_book(tmp_path / "book")
    (tmp_path / "cache").write_text("not a folder")
    assert main(["book", "--manifest", str(manifest), "build", "--execute", "--out", str(tmp_path / "html"),
                 "--cache", str(tmp_path / "cache")]) == 2
    err = one_line_error(capsys, "book")
    assert "(--cache) is not a folder" in err and str(tmp_path / "cache") in err


def test_book_build_into_a_read_only_folder_names_it_before_any_work(tmp_path, read_only, capsys):
    manifest = small_book(tmp_path / "book")
    (tmp_path / "ro").mkdir()
    folder = read_only(tmp_path / "ro")
    assert main(["book", "--manifest", str(manifest), "build", "--out", str(folder / "html")]) == 2
    err = one_line_error(capsys, "book")
    assert str(folder / "html") in err and "Read-only file system" in err


def test_book_build_on_a_full_disk_names_the_file_and_leaves_no_half_page(tmp_path, monkeypatch, capsys):
    import builtins

    manifest = small_book(tmp_path / "book")
    out = (tmp_path / "html").resolve()
    real_open = builtins.open

    def full_open(file, mode="r", *args, **kwargs):   # Sphinx writes its pages with open(), not commlab.output
        if any(m in mode for m in "wax") and Path(str(file)).resolve().is_relative_to(out):
            raise OSError(errno.ENOSPC, "No space left on device", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", full_open)
    status = main(["book", "--manifest", str(manifest), "build", "--out", str(out),
                   "--mathjax", str(fake_mathjax(tmp_path / "mj"))])
    err = one_line_error(capsys, "book")
    assert status == 2 and "No space left on device" in err and str(out) in err and len(err) < 400
    leftovers = [p for p in out.rglob("*") if p.name.endswith(".tmp") or (p.is_file() and p.stat().st_size == 0)]
    assert leftovers == []


def test_book_manifest_that_is_binary_or_unreadable_is_one_line(tmp_path, monkeypatch, capsys):
    binary = tmp_path / "book.toml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert main(["book", "--manifest", str(binary), "toc"]) == 2
    err = one_line_error(capsys, "book")
    assert str(binary) in err and "not UTF-8" in err

    unreadable = tmp_path / "locked.toml"
    unreadable.write_text(MANIFEST)
    real_read_bytes = Path.read_bytes

    def read_bytes(self):
        if self == unreadable:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    assert main(["book", "--manifest", str(unreadable), "build", "--out", str(tmp_path / "html")]) == 2
    err = one_line_error(capsys, "book")
    assert str(unreadable) in err and "Permission denied" in err


@pytest.mark.parametrize("content, words", [
    ({"hello": 1}, "no 'nbformat' version number"),
    ({"nbformat": 3, "nbformat_minor": 0}, "no 'worksheets' list"),
    ({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "weird", "source": "x", "metadata": {}, "id": "a"}]}, "cell 1 has cell_type 'weird'"),
    ({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": 5}, "no 'cells' list"),
    ({"nbformat": 9, "cells": []}, "nbformat 9"),
    ([1, 2], "JSON is a list"),
    ({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": "x", "metadata": {}, "id": "a"}]}, "is not a valid notebook"),
])
def test_a_listed_file_that_is_json_but_no_notebook_is_named(content, words, tmp_path, capsys):
    manifest = small_book(tmp_path / "book")
    (tmp_path / "book" / "chapters" / "00_a.ipynb").write_text(json.dumps(content))
    assert main(["book", "--manifest", str(manifest), "build", "--out", str(tmp_path / "html")]) == 2
    err = one_line_error(capsys, "book")
    assert "chapters/00_a.ipynb" in err and words in err


def test_a_valid_nbformat_3_notebook_is_upgraded_and_built(tmp_path):
    manifest = small_book(tmp_path / "book")
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Old\nFrom nbformat 3."}]}]}
    (tmp_path / "book" / "chapters" / "00_a.ipynb").write_text(json.dumps(v3))
    assert main(["book", "--manifest", str(manifest), "build", "--out", str(tmp_path / "html")]) == 0
    assert "From nbformat 3." in (tmp_path / "html" / "chapters" / "00_a.html").read_text()


def test_book_build_without_the_book_extra_names_it(tmp_path, monkeypatch, capsys):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "myst_nb" else real_find_spec(name, *a))
    manifest = small_book(tmp_path / "book")
    assert main(["book", "--manifest", str(manifest), "build", "--out", str(tmp_path / "html")]) == 2
    err = one_line_error(capsys, "book")
    assert "myst_nb" in err and "pip install 'commlab[book]'" in err and not (tmp_path / "html").exists()


# --- the same on real file systems -----------------------------------------------------------------------

PROBES = """set -u
mount -t tmpfs -o size=64k tmpfs "$FULL" && mount -t tmpfs -o ro,size=64k tmpfs "$RO" || exit 99
n=0
probe() { n=$((n + 1)); "$PY" -m commlab "$@" >/dev/null 2>"$ERRS/$n.err"; echo "$? $*"; }
probe animate ring-all-reduce --ranks 3 --out "$RO/ring.html"
probe animate ring-all-reduce --ranks 3 --out "$RO/ring.gif"
probe animate ring-all-reduce --ranks 3 --out "$RO/frames/"
probe animate ring-all-reduce --ranks 8 --out "$FULL/ring.html"
probe book --manifest "$MANIFEST" build --out "$RO/html"
probe book --manifest "$MANIFEST" build --out "$FULL/html" --mathjax "$MJ"
ls -A "$FULL" "$FULL/html" "$FULL/html/chapters" 2>/dev/null | grep -c '\\.tmp$' || true
"""


def test_the_probes_on_a_real_read_only_and_a_real_full_file_system(tmp_path):
    if not shutil.which("unshare") or not shutil.which("mount"):
        pytest.skip("no unshare/mount here to make a read-only and a full tmpfs")
    dirs = {name: tmp_path / name.lower() for name in ("FULL", "RO", "ERRS")}
    for folder in dirs.values():
        folder.mkdir()
    env = {**os.environ, **{k: str(v) for k, v in dirs.items()}, "PY": sys.executable,
           "MANIFEST": str(small_book(tmp_path / "book")), "MJ": str(fake_mathjax(tmp_path / "mj"))}
    done = subprocess.run(["unshare", "-r", "-m", "bash", "-c", PROBES], env=env, capture_output=True, text=True,
                          timeout=240)
    if done.returncode == 99 or "Operation not permitted" in done.stderr:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {done.stderr.strip()[:200]}")
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["2"] * 6, done.stdout + done.stderr
    assert lines[-1] == "0", "a temporary file was left on the full disk"
    for err_file in sorted(dirs["ERRS"].iterdir()):
        err = err_file.read_text()
        assert err.count("\n") == 1 and "Traceback" not in err and "error: " in err, (err_file.name, err)
        assert len(err) < 400 and ".commlab-probe" not in err, err   # one readable line, no scratch names
        assert "Read-only file system" in err or "No space left on device" in err, err
