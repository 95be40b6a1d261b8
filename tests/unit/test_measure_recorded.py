"""measure.recorded: the chapters quote the GPU session's figures from the data file the session wrote
(benchmarks/gpu_session.json), never retyped and never read out of prose."""
import json
import re
from pathlib import Path

import pytest

from commlab.errors import CommlabError
from commlab.measure.recorded import FIGURES, gpu_session, main, read_gpu_session

REPO = Path(__file__).resolve().parents[2]


def test_the_repository_record_has_every_figure_the_chapters_quote():
    session = gpu_session(REPO)
    assert session.date.count("-") == 2 and "H200" in session.device
    assert set(session.figures) == set(FIGURES)
    # the record's own percentage agrees with its bandwidth over PCIe 5.0 x16's 64 GB/s
    assert round(100 * session["h2d_pinned_GBps"] / 64) == session["h2d_pinned_share"]
    # stream order: the host came back long before the GPU work was done
    assert session["async_return_us"] + session["wait_return_us"] < session["gpu_work_us"] / 10


def test_the_record_is_the_session_the_benchmarks_readme_shows():
    """The README's GPU section prints what the session measured; the data file holds the same numbers."""
    text = (REPO / "benchmarks" / "README.md").read_text()
    session = gpu_session(REPO)
    assert f"## GPU: {session.device}, measured {session.date}" in text
    for name in ("h2d_pinned_GBps", "wait_return_us", "gpu_work_us"):
        assert re.search(rf"\b{session[name]:g}\b", text), name


def test_a_bad_record_says_what_is_wrong(tmp_path):
    with pytest.raises(CommlabError, match="device, date and figures"):
        read_gpu_session({"figures": {}})
    with pytest.raises(CommlabError, match="unknown figures \\['nope'\\]"):
        read_gpu_session({"device": "x", "date": "2030-01-02", "figures": {"nope": 1}})
    with pytest.raises(CommlabError, match="YYYY-MM-DD"):
        read_gpu_session({"device": "x", "date": "yesterday", "figures": {}})
    session = read_gpu_session({"device": "one X1", "date": "2030-01-02", "figures": {"wait_return_us": 5}})
    with pytest.raises(CommlabError, match="gpu_work_us"):
        session["gpu_work_us"]
    with pytest.raises(CommlabError, match="no GPU session record"):
        gpu_session(tmp_path)


def test_the_parts_a_session_writes_join_into_one_record(tmp_path, capsys):
    (tmp_path / "roofs.json").write_text(json.dumps({"figures": {"h2d_pinned_GBps": 55.2}}))
    (tmp_path / "stream.json").write_text(json.dumps({"figures": {"gpu_work_us": 27226.3}}))
    out = tmp_path / "gpu_session.json"
    assert main([str(out), str(tmp_path / "roofs.json"), str(tmp_path / "stream.json"), str(tmp_path / "gone")]) == 0
    record = read_gpu_session(json.loads(out.read_text()))
    assert record.figures == {"h2d_pinned_GBps": 55.2, "gpu_work_us": 27226.3}
    assert "gone" in capsys.readouterr().err
