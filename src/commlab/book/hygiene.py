"""The notebooks as the book commits them, whatever JupyterLab saves around them (standard library only).

JupyterLab rewrites a notebook's metadata on every save: the running kernel's display name ("Python 3
(ipykernel)") and the whole ``language_info`` with the kernel's Python version; a run adds outputs and
execution counts. Opening a chapter and letting autosave run would leave it modified in git. Two hooks keep
the committed form, which :func:`clean` defines (outputs, execution counts, saved widget state and per-cell
view state removed, as nbstripout does; the python3 kernelspec and ``language_info`` as the book writes them;
cell ids and everything else kept):

* :func:`pre_save`, JupyterLab's save hook (``make lab`` starts JupyterLab with
  ``--ContentsManager.pre_save_hook=commlab.book.hygiene.pre_save``): the metadata is put back as committed
  before the file is written, so a notebook opened and saved without an edit is byte for byte the committed
  one. A reader's outputs are kept in the file.
* ``scripts/nbclean.py``, git's clean filter for ``*.ipynb`` (``.gitattributes``, registered by ``make
  git-filter``, which ``make lab`` and ``make install`` run): what git reads of a notebook is :func:`clean_text`
  of it, so a run's outputs are no change to commit either.
"""
from __future__ import annotations

import json

#: The notebook metadata the book commits (tests/notebooks/test_notebook_hygiene.py checks every notebook).
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
#: Per-cell state JupyterLab and its extensions save that says nothing an author wrote.
VOLATILE_CELL_KEYS = ("collapsed", "scrolled", "execution", "ExecuteTime", "jp-MarkdownHeadingCollapsed")


def clean(nb: dict) -> dict:
    """``nb`` (parsed notebook JSON) as the book commits it; changed in place and returned.

    >>> nb = {"metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "name": "python3"},
    ...                    "language_info": {"name": "python", "version": "3.12.1"}},
    ...       "cells": [{"cell_type": "code", "execution_count": 3, "metadata": {"scrolled": True}, "outputs": [1]}]}
    >>> clean(nb)["metadata"]["kernelspec"]["display_name"], nb["metadata"]["language_info"], nb["cells"][0]
    ('Python 3', {'name': 'python'}, {'cell_type': 'code', 'execution_count': None, 'metadata': {}, 'outputs': []})
    """
    metadata = nb.setdefault("metadata", {})
    metadata.pop("widgets", None)
    _commit_metadata(metadata)
    for cell in nb.get("cells", []):
        if not isinstance(cell, dict):
            continue
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell_metadata = cell.get("metadata")
        if isinstance(cell_metadata, dict):
            for key in VOLATILE_CELL_KEYS:
                cell_metadata.pop(key, None)
    return nb


def _commit_metadata(metadata: dict) -> None:
    """A notebook's metadata as committed, in place: the shared Python kernelspec, the language's name alone."""
    kernel = metadata.get("kernelspec")
    if isinstance(kernel, dict) and kernel.get("name") == "python3":
        metadata["kernelspec"] = dict(KERNELSPEC)
    language = metadata.get("language_info")
    if isinstance(language, dict):
        metadata["language_info"] = {"name": language.get("name", "python")}


def clean_text(text: str) -> str:
    """The committed form of the notebook ``text``; ``text`` itself when it is not a notebook's JSON."""
    try:
        nb = json.loads(text)
    except ValueError:
        return text
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list) or nb.get("nbformat") != 4:
        return text
    return json.dumps(clean(nb), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def pre_save(model: dict, **kwargs) -> None:
    """jupyter_server's ``pre_save_hook``: a notebook's metadata as committed (its outputs left alone)."""
    if not isinstance(model, dict) or model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    metadata = model["content"].get("metadata")
    if not isinstance(metadata, dict):
        return
    _commit_metadata(metadata)
