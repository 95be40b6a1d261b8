"""References that do not depend on the code being graded, computed once per grading run instead of once per
student: DDP's rebuilt buckets on the ddp_overlap lab's models, the find-the-hang lab's faults run live.

``commlab labs check`` gives each grader process (trusted: the grader's own code, never a student's sandbox)
a folder of the run in ``COMMLAB_GRADING_CACHE``; :func:`cached` keeps a value there as JSON (plain data only,
nothing that runs code when read back) and hands every later grader process of the run the same value.
Outside a grading run (a notebook, a lab's script) :func:`cached` simply computes.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_VAR = "COMMLAB_GRADING_CACHE"


def cached(key: str, compute: Callable[[], Any], keep: Callable[[Any], bool] = lambda value: True) -> Any:
    """``compute()`` as JSON gives it back (the same types on the first call as on every later one), kept in
    the grading run's folder under ``key`` when ``keep(value)``."""
    folder = os.environ.get(ENV_VAR)
    path = Path(folder) / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', key)}.json" if folder else None
    if path is not None:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    value = json.loads(json.dumps(compute()))
    if path is not None and keep(value):
        try:
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(value))
            os.replace(tmp, path)              # two grader processes that computed it at once: either one wins
        except OSError:
            pass
    return value
