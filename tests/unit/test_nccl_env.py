"""The environment-variable catalogue, and the check of its torch-side names against the installed torch."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from commlab.errors import CommlabError
from commlab.nccl.env import SIDES, catalogue, lookup, names
from commlab.nccl.env import STATUSES, check_torch_names, classify_name, tokens_in_bytes, torch_dir

BOOK_NAMES = {
    "nccl": ["NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
             "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_NET_GDR_LEVEL",
             "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
             "NCCL_BUFFSIZE", "NCCL_TOPO_DUMP_FILE"],
    "torch": ["TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT", "TORCH_NCCL_TRACE_BUFFER_SIZE",
              "TORCH_NCCL_DUMP_ON_TIMEOUT", "TORCH_DISTRIBUTED_DEBUG"],
}


@pytest.mark.parametrize("side", SIDES)
def test_the_book_names_are_catalogued_on_the_right_side(side):
    assert set(BOOK_NAMES[side]) <= set(names(side))


def test_catalogue_is_well_formed():
    all_names = [v.name for v in catalogue()]
    assert len(all_names) == len(set(all_names))
    for var in catalogue():
        assert re.fullmatch(r"(NCCL|TORCH)_[A-Z0-9_]+", var.name)
        assert var.meaning and var.values
        assert var.name.startswith("NCCL_") == (var.side == "nccl")


def test_lookup_finds_old_and_newer_names():
    assert lookup("NCCL_ASYNC_ERROR_HANDLING").name == "TORCH_NCCL_ASYNC_ERROR_HANDLING"
    assert lookup("torch_fr_buffer_size").name == "TORCH_NCCL_TRACE_BUFFER_SIZE"
    assert lookup("NCCL_IB_GDR_LEVEL").name == "NCCL_NET_GDR_LEVEL"
    with pytest.raises(CommlabError):
        lookup("NCCL_NOPE")
    with pytest.raises(CommlabError):
        names("cuda")


def test_tokens_are_whole_identifiers():
    buf = b"\x00xxTORCH_NCCL_BLOCKING_WAIT\x00NCCL_DEBUG_SUBSYS\x00L31TORCH_NCCL_ASYNC_ERROR_HANDLINGE\x00"
    found = tokens_in_bytes(buf)
    assert {"TORCH_NCCL_BLOCKING_WAIT", "NCCL_DEBUG_SUBSYS"} <= found
    assert "NCCL_BLOCKING_WAIT" not in found and "NCCL_DEBUG" not in found


def test_classify_name():
    var = lookup("TORCH_NCCL_ASYNC_ERROR_HANDLING")
    assert classify_name(var, {"TORCH_NCCL_ASYNC_ERROR_HANDLING"}).status == "found"
    assert classify_name(var, {"NCCL_ASYNC_ERROR_HANDLING"}).status == "only the deprecated name found"
    assert classify_name(var, set()).status == "not found"
    fr = lookup("TORCH_NCCL_TRACE_BUFFER_SIZE")
    assert classify_name(fr, {"TORCH_FR_BUFFER_SIZE"}).status == "found under a newer name"


@pytest.mark.skipif(torch_dir() is None, reason="torch is not installed")
def test_check_against_the_installed_torch():
    """Cross-check: every torch-side name that a plain text search finds in torch's .py files must be
    reported found (the shared libraries can only add to that)."""
    report = check_torch_names()
    root = torch_dir()
    assert report.torch_dir == str(root) and report.checks
    assert {c.status for c in report.checks} <= set(STATUSES)
    py_text = "\n".join(p.read_text(errors="replace") for p in root.rglob("*.py")
                        if "distributed" in p.parts or p.name == "version.py")
    for check in report.checks:
        if re.search(rf"(?<![A-Z0-9_]){check.name}(?![A-Z0-9_])", py_text):
            assert check.status == "found", check.name
    if not report.cuda_build:
        assert "CPU-only" in report.note and "ProcessGroupNCCL" in report.note


def test_checking_does_not_import_torch():
    code = ("import sys; from commlab.nccl.env import check_torch_names; check_torch_names(); "
            "import commlab.nccl, commlab.cli.nccl_tests; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
