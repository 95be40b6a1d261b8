"""Shared helpers of the distributed tests: every launch must leave no child process behind."""
from __future__ import annotations

import os
import time

import pytest


def child_pids() -> set[int]:
    """Live (not zombie) processes whose parent is this test process, read from /proc."""
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, ppid = fields[0], int(fields[1])
        if ppid == me and state != "Z":
            found.add(int(entry))
    return found


@pytest.fixture
def no_child_left():
    """Fails the test if a process it started is still alive afterwards (after a short grace)."""
    before = child_pids()
    yield
    deadline = time.monotonic() + 2.0
    while (left := child_pids() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"child processes left running: {sorted(left)}"
