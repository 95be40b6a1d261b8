"""Reference solutions of the NCCL debug and multi-node lab (labs/nccl_debug_multinode.ipynb).

The reader, like an engineer on a new cluster:

* :func:`answer_log_questions`: reads an NCCL_DEBUG=INFO log for the NCCL version, the channel count, the
  transport between ranks 0 and 1 and the number of hosts. Written here with plain regular expressions, on
  purpose independent of :func:`commlab.nccl.read_debug_log`, which the lab checks the answers against;
* :func:`env_for_goals`: names the environment variable for each debugging goal (chapter 08's table);
* :func:`peak_busbw_GBps` and :func:`classify_run`: judge an nccl-tests run against the link it should fill,
  busbw held against the link's one-way bandwidth (nccl-tests ``doc/PERFORMANCE.md``), with the thresholds of
  :mod:`commlab.nccl.summary` (healthy from 70 %, above the link over 100 %).
"""
from __future__ import annotations

import re
from types import MappingProxyType

from commlab.labs.checks.nccl_debug_multinode import ANSWER_KEY

#: NCCL's line prefix ``host:pid:tid [cudaDev] NCCL INFO ...`` (src/debug.cc)
_HOST = re.compile(r"^(?:\S*\s)?([^\s:]+):\d+:\d+ \[\d+\] (?:\S+ )?NCCL (?:INFO|WARN)")
_CONNECTION = re.compile(r"Channel \d+(?:/\d+)? : (\d+)\[[0-9a-fA-F]+\] -> (\d+)\[[0-9a-fA-F]+\]"
                         r"(?: \[\w+\])? via (.+?)\s*$")
#: a ring order line, ``Channel 00/02 :    0   1   2``: the second number is the channel count
_RING_ORDER = re.compile(r"Channel \d+/(\d+) :(?:\s+\d+)+\s*$")

#: The debugging goals of the lab and the setting that serves each: the lab's answer key
#: (:data:`commlab.labs.checks.nccl_debug_multinode.ANSWER_KEY`, with its sources). A hung collective needs two
#: things: the process group's own ``timeout`` (init_process_group / new_group), which says when the watchdog
#: gives up, and TORCH_NCCL_ASYNC_ERROR_HANDLING, which says what it does then.
GOALS = MappingProxyType(ANSWER_KEY)


def answer_log_questions(text: str) -> dict:
    """{"nccl_version", "n_channels", "transport_0_1", "n_hosts"} of an NCCL_DEBUG=INFO log.

    The version without its ``+cuda`` suffix; the channels from ``N coll channels`` (else from a ring order line
    ``Channel 00/02 : 0 1 ...``); the transport of the first
    connection between ranks 0 and 1 (either direction), as NCCL prints it; the distinct host names of the
    NCCL lines. None where the log does not say.
    """
    version = re.search(r"NCCL version (\d+\.\d+\.\d+)", text)
    channels = re.search(r"(\d+) coll channels", text) or re.search(_RING_ORDER.pattern, text, re.MULTILINE)
    transport, hosts = None, []
    for line in text.splitlines():
        host = _HOST.search(line)
        if host and host.group(1) not in hosts:
            hosts.append(host.group(1))
        link = _CONNECTION.search(line)
        if link and transport is None and {int(link.group(1)), int(link.group(2))} == {0, 1}:
            transport = link.group(3)
    return {"nccl_version": version.group(1) if version else None,
            "n_channels": int(channels.group(1)) if channels else None,
            "transport_0_1": transport, "n_hosts": len(hosts)}


def env_for_goals() -> dict:
    """{goal: variable name (or names)} for every goal of :data:`GOALS`."""
    return dict(GOALS)


def peak_busbw_GBps(rows) -> float:
    """The largest busbw of a run, out of place or in place (nccl-tests rows, commlab.nccl.Row)."""
    return max(m.busbw_GBps for row in rows for m in (row.oop, row.ip) if m is not None)


def classify_run(peak_busbw_GBps: float, link_unidir_GBps: float) -> str:
    """"above the link" over 100 % of the link's one-way bandwidth (the switch reduces: NVLS, SHARP), "healthy"
    from 70 % to 100 % inclusive, "low" below (P2P off, traffic through host memory, a wrong transport).

    >>> [classify_run(p, 100.0) for p in (69.99, 70.0, 100.0, 100.01)]
    ['low', 'healthy', 'healthy', 'above the link']
    """
    ratio = peak_busbw_GBps / link_unidir_GBps
    if ratio > 1.0:
        return "above the link"
    return "healthy" if ratio >= 0.70 else "low"
