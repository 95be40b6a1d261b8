"""MathJax for the static edition, offline when a local copy exists.

nbconvert's HTML pages load MathJax 2.7 from a CDN by default, so their formulas render only online. The
build copies a local MathJax 2.7 into ``_static/mathjax/`` instead when it finds one: a folder given with
``--mathjax DIR``, or the one shipped by the ``jupyter-server-mathjax`` package (PyPI). Without either the
pages keep the CDN address: the text reads fine offline and formulas show as their TeX source.
"""
from __future__ import annotations

import importlib.util
import posixpath
import shutil
from pathlib import Path

from commlab.errors import CommlabError
from commlab.output import copy_file

CDN_URL = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js?config=TeX-AMS_CHTML-full,Safe"
STATIC_DIR = "_static/mathjax"
#: Combined configurations in order of preference; the first one present in the copy is used.
CONFIGS = ("TeX-AMS_CHTML-full", "TeX-AMS-MML_HTMLorMML-full", "TeX-AMS_HTML-full", "TeX-AMS_HTML")
#: Not needed by the HTML-CSS/CommonHTML output in a browser: SVG output fonts, translations, sources.
_SKIP = ("SVG", "unpacked", "test", "docs", "*.md", "*.mp3", "*.ogg")


def packaged_mathjax() -> Path | None:
    """The MathJax folder of the ``jupyter_server_mathjax`` package, or None when it is not installed."""
    spec = importlib.util.find_spec("jupyter_server_mathjax")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "static"
    return folder if (folder / "MathJax.js").is_file() else None


def config_name(mathjax_dir: Path) -> str:
    """The first of :data:`CONFIGS` present under ``mathjax_dir/config``."""
    for name in CONFIGS:
        if (mathjax_dir / "config" / f"{name}.js").is_file():
            return name
    raise CommlabError(f"MathJax folder {str(mathjax_dir)!r} has none of the configurations "
                       f"{', '.join(CONFIGS)} under config/; expected a MathJax 2.7 folder")


def _ignore(folder: str, names: list[str]) -> set[str]:
    """Leave out SVG fonts and all translations but English."""
    skipped = set(shutil.ignore_patterns(*_SKIP)(folder, names))
    if Path(folder).name == "localization":
        skipped |= {name for name in names if name != "en"}
    return skipped


def install(out_dir: Path, mathjax_dir: Path | None = None) -> str | None:
    """Copy MathJax into ``out_dir/_static/mathjax`` and return its query string ("config=...,Safe").

    ``mathjax_dir`` (a MathJax 2.7 folder holding MathJax.js) wins over the packaged copy; None is
    returned when neither exists, and the pages then use :data:`CDN_URL`.
    """
    source = Path(mathjax_dir) if mathjax_dir is not None else packaged_mathjax()
    if source is None:
        return None
    if not (source / "MathJax.js").is_file():
        raise CommlabError(f"--mathjax {str(source)!r} holds no MathJax.js; expected a MathJax 2.7 folder")
    query = f"config={config_name(source)},Safe"
    target = Path(out_dir) / STATIC_DIR
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=_ignore, copy_function=copy_file)
    return query


def url_for(page: str, query: str | None) -> str:
    """The MathJax address for the page at ``page`` (posix, relative to the output folder).

    >>> url_for("chapters/05_ring.html", "config=TeX-AMS_CHTML-full,Safe")
    '../_static/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe'
    >>> url_for("index.html", None) == CDN_URL
    True
    """
    if query is None:
        return CDN_URL
    script = posixpath.relpath(f"{STATIC_DIR}/MathJax.js", posixpath.dirname(page) or ".")
    return f"{script}?{query}"
