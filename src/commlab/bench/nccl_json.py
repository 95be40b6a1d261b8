"""``commlab bench -J FILE``: the JSON document nccl-tests writes with ``-J`` (``--output_file``), key for key.

The schema is the one of nccl-tests 2.19 (``src/util.cu``: ``jsonOutputInit``, ``writeDeviceReport``,
``writeBenchmarkLinePreamble`` / ``Body`` / ``Terminator``, ``writeResultFooter``, ``writeErrors``,
``jsonOutputFinalize``; ``JSON_FILE_VERSION 3``), in the order nccl-tests writes the keys::

    {"version": 3, "start_time": "%Y-%m-%d %H:%M:%S", "args": [argv...], "env": ["NAME=value", ...],
     "nccl_version": int,
     "config": {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor" | "step_bytes",
                "warmup_iters", "iterations", "aggregated_iterations", "validation", "graph",
                "blocking_collectives", "per_iter_timing", "per_iter_skip", "parallel_init",
                "devices": [{"rank", "group", "pid", "hostname", "device", "device_hex", "device_info"}]},
     "results": [{"size", "count", "type", "redop", "root": "%6i",
                  "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"}, "in_place": {...},
                  "actual_iterations", "experiment_name": ""}],
     "out_of_bounds": {"count", "okay"}, "average_bus_bandwidth": {"bandwidth", "okay"},
     "errors": [...], "end_time": "..."}

nccl-tests' own quirks are kept: booleans are the strings ``"true"`` / ``"false"`` (its ``jsonBool`` writes a
string), ``root`` is the printed ``%6i`` text, ``nwrong`` is a number (null without checking), doubles have
6 decimals (``%lf``), ``average_bus_bandwidth.okay`` is ``"unchecked"`` without ``NCCL_TESTS_MIN_BW``. Where
commlab differs it says so in the data, not by new keys: ``nccl_version`` is null when NCCL did not run (gloo),
a CPU rank's ``device`` is -1 with an empty ``device_hex``, a collective without an in-place form has
``"in_place": null`` (nccl-tests writes null the same way for a missing out-of-place block), a partial sweep
lists why it stopped in ``errors``. ``env`` lists the environment as nccl-tests does, with the values of
variables whose names suggest a secret (TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL) replaced by ``<redacted>``.
"""
from __future__ import annotations

import os
import re

JSON_FILE_VERSION = 3
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH", re.IGNORECASE)


def now_text() -> str:
    """Local time as nccl-tests' ``formatNow`` writes it."""
    import time

    return time.strftime(TIME_FORMAT, time.localtime())


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _double(value: float) -> float:
    return round(float(value), 6)


def environment(env: dict | None = None) -> list[str]:
    """``NAME=value`` for every variable, secrets redacted (see the module docstring)."""
    env = dict(os.environ) if env is None else env
    return [f"{k}={'<redacted>' if _SECRET.search(k) else v}" for k, v in env.items()]


def _device(rank: int, device) -> dict:
    d = device if isinstance(device, dict) else {}
    index = d.get("device")
    return {"rank": rank, "group": 0, "pid": int(d.get("pid", -1)), "hostname": str(d.get("host", "")),
            "device": index if isinstance(index, int) else -1, "device_hex": str(d.get("bus_id", "")),
            "device_info": str(d.get("name", ""))}


def _config(result) -> dict:
    c = result.config
    step = {"step_bytes": c.step_nbytes} if c.step_nbytes else {"step_factor": c.factor}
    devices = list(result.devices) or [None] * result.n_ranks
    return {"nthreads": 1, "ngpus": 1, "minimum_bytes": c.min_nbytes, "maximum_bytes": c.max_nbytes, **step,
            "warmup_iters": c.warmup, "iterations": c.iters, "aggregated_iterations": 1, "validation": c.check,
            "graph": 0, "blocking_collectives": _bool(False), "per_iter_timing": _bool(False), "per_iter_skip": 0,
            "parallel_init": _bool(False), "devices": [_device(r, d) for r, d in enumerate(devices)]}


def _measure(m) -> dict | None:
    if m is None:
        return None
    return {"time": _double(m.time_us), "alg_bw": _double(m.algbw_GBps), "bus_bw": _double(m.busbw_GBps),
            "nwrong": None if m.wrong is None else float(m.wrong)}


def _result(row, iters: int) -> dict:
    return {"size": row.size_bytes, "count": row.count, "type": row.type, "redop": row.redop,
            "root": "%6i" % row.root, "out_of_place": _measure(row.oop), "in_place": _measure(row.ip),
            "actual_iterations": iters, "experiment_name": ""}


def nccl_version(backend: str) -> int | None:
    """NCCL_VERSION_CODE of the NCCL that ran, or None (gloo)."""
    if backend != "nccl":
        return None
    import torch

    major, minor, patch = torch.cuda.nccl.version()[:3]
    return major * 10000 + minor * 100 + patch


def document(result, argv: list[str], start_time: str, min_busbw_GBps: float | None = None,
             env: dict | None = None) -> dict:
    """The ``-J`` document of ``result`` (a BenchResult), keys in nccl-tests' order."""
    avg_ok = "unchecked" if min_busbw_GBps is None else _bool(not result.below_min_bw(min_busbw_GBps))
    return {
        "version": JSON_FILE_VERSION, "start_time": start_time, "args": list(argv), "env": environment(env),
        "nccl_version": nccl_version(result.backend), "config": _config(result),
        "results": [_result(row, result.config.iters) for row in result.rows],
        "out_of_bounds": {"count": result.wrong, "okay": _bool(result.wrong == 0)},
        "average_bus_bandwidth": {"bandwidth": _double(result.avg_busbw_GBps), "okay": avg_ok},
        "errors": [] if result.partial is None else [result.partial_line().removeprefix("# ")],
        "end_time": now_text(),
    }


def free_path(path: str) -> str:
    """``path``, or ``path.0``, ``path.1``, ... when it exists: nccl-tests never overwrites a -J file
    (``jsonOutputInit`` opens with ``"wx"`` and probes these names)."""
    candidate, k = path, 0
    while os.path.lexists(candidate):
        candidate, k = f"{path}.{k}", k + 1
    return candidate
