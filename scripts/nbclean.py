#!/usr/bin/env python3
"""git's clean filter for the book's notebooks: ``python3 scripts/nbclean.py < notebook > committed``.

``make git-filter`` (run by ``make lab`` and ``make install``) registers it for ``*.ipynb`` (``.gitattributes``):
git then reads a notebook as the book commits it (:func:`commlab.book.hygiene.clean`), whatever JupyterLab
saved around it. It loads ``src/commlab/book/hygiene.py`` by its path (standard library only), so any
``python3`` runs it, with or without commlab installed. Input that is not a notebook passes through unchanged.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HYGIENE = Path(__file__).resolve().parents[1] / "src" / "commlab" / "book" / "hygiene.py"


def main() -> int:
    sys.dont_write_bytecode = True   # a filter git runs writes nothing into the work tree
    spec = importlib.util.spec_from_file_location("commlab_hygiene", HYGIENE)
    assert spec is not None and spec.loader is not None, HYGIENE
    hygiene = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hygiene)
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        sys.stdout.buffer.write(data)
        return 0
    sys.stdout.buffer.write(hygiene.clean_text(text).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
