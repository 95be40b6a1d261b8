"""measure.recorded: the chapters quote the GPU session's figures from benchmarks/README.md, never retyped."""
from pathlib import Path

import pytest

from commlab.errors import CommlabError
from commlab.measure.recorded import gpu_session, parse_gpu_session

REPO = Path(__file__).resolve().parents[2]


def test_the_repository_record_has_every_figure_the_chapters_quote():
    session = gpu_session(REPO)
    assert session.date.count("-") == 2 and "H200" in session.device
    assert set(session.figures) == {"h2d_pinned_GBps", "h2d_pinned_share", "h2d_pageable_peak_GBps",
                                    "h2d_pageable_256MiB_GBps", "async_return_us", "wait_return_us",
                                    "synchronize_return_us", "gpu_work_us"}
    # the record's own percentage agrees with its bandwidth over PCIe 5.0 x16's 64 GB/s
    assert round(100 * session["h2d_pinned_GBps"] / 64) == session["h2d_pinned_share"]
    # stream order: the host came back long before the GPU work was done
    assert session["async_return_us"] + session["wait_return_us"] < session["gpu_work_us"] / 10


def test_lines_are_read_from_the_gpu_section_only():
    text = ("## GPU: one X1, measured 2030-01-02\nwork.wait() returned after 5.0 us\n"
            "## Elsewhere\nGPU time of the queued work (CUDA events): 9 us\n")
    session = parse_gpu_session(text)
    assert session.figures == {"wait_return_us": 5.0} and session.device == "one X1"
    with pytest.raises(CommlabError, match="gpu_work_us"):
        session["gpu_work_us"]


def test_a_record_without_a_gpu_section_or_a_missing_file_says_so(tmp_path):
    with pytest.raises(CommlabError, match="## GPU"):
        parse_gpu_session("# benchmarks\nnothing here\n")
    with pytest.raises(CommlabError, match="no benchmarks record"):
        gpu_session(tmp_path)
