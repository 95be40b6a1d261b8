"""``commlab nccl-tests`` through ``commlab.cli.main``."""
from __future__ import annotations

import io
import json
import re

import pytest

from commlab.cli import main
from commlab.nccl.examples import nccl_tests_log


def strip_meta(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines()
                     if not re.match(r"#\s*(source|command|nranks|collective|hardware|format):", ln))


def test_text_report(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(7)), "--link", "nvlink4"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^collective\s+all_reduce$", out, re.M)
    assert re.search(r"^ranks\s+8$", out, re.M)
    assert "483.35 GB/s" in out and "above the link" in out and "107.4 %" in out
    assert re.search(r"^half peak from\s+32 MiB$", out, re.M)
    assert re.search(r"^avg busbw\s+156.742 GB/s$", out, re.M)


def test_json_report(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(14)), "--json", "--link", "pcie3"]) == 0
    obj = json.loads(capsys.readouterr().out)
    for key in ("collective", "n_ranks", "format", "peak_busbw_GBps", "half_peak_size_bytes", "alpha_s",
                "beta_s_per_byte", "avg_busbw_GBps", "verdict", "unreadable", "rows"):
        assert key in obj
    assert (obj["collective"], obj["n_ranks"], obj["format"]) == ("all_reduce", 2, "modern")
    assert obj["peak_busbw_GBps"] == 4.0 and obj["half_peak_size_bytes"] == 131072
    assert obj["verdict"]["verdict"] == "low" and obj["verdict"]["percent"] == pytest.approx(25.0)
    assert len(obj["rows"]) == 28 and obj["rows"][0]["oop"]["time_us"] == 12.25 and obj["unreadable"] == []


def test_json_without_link_has_a_null_verdict(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(19)), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["verdict"] is None and obj["format"] == "legacy" and obj["bandwidth_rule"] == "legacy"


def test_stdin(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(nccl_tests_log(3).read_text()))
    assert main(["nccl-tests", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_ranks"] == 4


def test_unreadable_rows_are_listed(capsys, tmp_path):
    lines = nccl_tests_log(14).read_text().splitlines()
    cut = [i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit()][-1]
    lines = lines[:cut] + [lines[cut][:40]]
    path = tmp_path / "cut.txt"
    path.write_text("\n".join(lines))
    assert main(["nccl-tests", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unreadable"] == [{"line": cut + 1, "text": lines[cut]}]


def test_ranks_from_the_caller(capsys, tmp_path):
    path = tmp_path / "bare.txt"
    path.write_text(strip_meta(nccl_tests_log(1).read_text()))
    assert main(["nccl-tests", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ranks" in err and err.startswith("commlab nccl-tests: error:")
    assert main(["nccl-tests", str(path), "--ranks", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_ranks"] == 4


@pytest.mark.parametrize("argv, words", [
    (["nccl-tests", "/no/such/file.txt"], "cannot read LOG"),
    (["nccl-tests", "LOG", "--link", "nvlink9"], "unknown link"),
    (["nccl-tests", "LOG", "--ranks", "0"], "n_ranks"),
])
def test_user_errors_are_one_line_and_exit_2(argv, words, capsys):
    argv = [str(nccl_tests_log(1)) if a == "LOG" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_a_file_without_rows(capsys, tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("nothing to see\n")
    assert main(["nccl-tests", str(path)]) == 2
    assert "no nccl-tests table rows" in capsys.readouterr().err


# --- the protocol-aware model, the prediction, NCCL's own choices, the plot ---------------------------------

def test_json_rows_carry_the_fitted_model(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(7)), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    params = obj["model"]["params"]
    assert 0 < len(params) <= 8 and all(set(p) == {"value", "unit"} for p in params.values())
    assert obj["model"]["median_error"] <= 0.05 and obj["prediction"] is None
    for row in obj["rows"]:
        assert row["model_time_us"] == pytest.approx(row["oop"]["time_us"], rel=0.45)
        assert row["chosen"] == {"algo": None, "proto": None, "source": "model"}       # no log lines, no replay
        assert row["regime"] in ("small", "medium", "large")
        assert "predicted_time_us" not in row
    errors = [abs(r["model_time_us"] / r["oop"]["time_us"] - 1) for r in obj["rows"]]
    assert sorted(errors)[len(errors) // 2] <= 0.05


def test_machine_adds_the_prediction(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(7)), "--json", "--machine", "gpu=h100,gpus_per_node=8"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["prediction"]["machine"].startswith("gpu=h100,gpus_per_node=8")
    last = obj["rows"][-1]
    assert last["predicted_algo"] == "NVLS" and last["predicted_proto"] == "Simple"
    assert last["predicted_time_us"] == pytest.approx(last["oop"]["time_us"], rel=0.05)
    assert obj["rows"][0]["predicted_proto"] == "LL"
    assert obj["rows"][0]["chosen"] == {"algo": "Ring", "proto": "LL", "source": "predicted"}


def test_text_shows_the_regimes_and_the_prediction(capsys):
    assert main(["nccl-tests", str(nccl_tests_log(8)), "--machine",
                 "gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=4,nic_Gbps=100,net=efa"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^model\s+3 regime\(s\), 8 numbers", out, re.M)
    assert len(re.findall(r"^  regime\s+(small|medium|large)\s", out, re.M)) == 3
    assert re.search(r"^predicted\s+gpu=a100.*median error \d+\.\d%$", out, re.M)


def test_strict_json_when_a_regime_is_flat(capsys, tmp_path):
    head = "# nranks: 2\n# collective: all_reduce\n"
    rows = [(8, 10.0), (16, 10.0), (32, 10.0), (1048576, 40.0), (2097152, 60.0), (4194304, 100.0)]
    path = tmp_path / "flat.txt"
    path.write_text(head + "".join(f" {s} {s // 4} float sum -1 {t} 0.1 0.1 0 {t} 0.1 0.1 0\n" for s, t in rows))
    assert main(["nccl-tests", str(path), "--json"]) == 0
    text = capsys.readouterr().out
    obj = json.loads(text)
    assert "NaN" not in text and "Infinity" not in text
    assert obj["model"]["params"]["bw_LL_GBps"]["value"] is None


def test_a_log_too_short_for_the_model_still_reports(capsys, tmp_path):
    path = tmp_path / "one.txt"
    path.write_text("# nranks: 2\n# collective: all_reduce\n"
                    " 1073741824 268435456 float sum -1 22661 47.38 47.38 0 22658 47.39 47.39 0\n")
    assert main(["nccl-tests", str(path), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["model"]["params"] is None and "different sizes" in obj["model"]["error"]
    assert obj["rows"][0]["model_time_us"] is None and obj["peak_busbw_GBps"] == 47.39


def test_nccl_debug_tuning_lines_name_what_nccl_chose(capsys, tmp_path):
    lines = nccl_tests_log(14).read_text().splitlines()
    out = []
    for ln in lines:
        if ln.strip()[:1].isdigit():
            size = int(ln.split()[0])
            algo, proto = ("RING", "LL") if size < 65536 else ("RING", "SIMPLE")
            out.append(f"host:1:1 [0] NCCL INFO AllReduce: {size} Bytes -> Algo {algo} proto {proto} "
                       "channel{Lo..Hi}={0..1}")
        out.append(ln)
    path = tmp_path / "tuned.txt"
    path.write_text("\n".join(out) + "\n")
    assert main(["nccl-tests", str(path), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["model"]["choice_source"] == "nccl_debug"
    assert obj["rows"][0]["chosen"] == {"algo": "Ring", "proto": "LL", "source": "nccl_debug"}
    assert obj["rows"][-1]["chosen"] == {"algo": "Ring", "proto": "Simple", "source": "nccl_debug"}
    assert obj["rows"][-1]["regime"] in ("small", "medium", "large")         # the fit names sizes only


def test_several_logs_and_the_plot(capsys, tmp_path):
    png = tmp_path / "two.png"
    argv = ["nccl-tests", str(nccl_tests_log(7)), str(nccl_tests_log(3)), "--plot", str(png), "--link", "nvlink4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("== ") == 2 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(argv[:3] + ["--json"]) == 0
    assert [o["n_ranks"] for o in json.loads(capsys.readouterr().out)] == [8, 4]


@pytest.mark.parametrize("argv, words", [
    (["nccl-tests", "LOG", "--machine", "gpu=h100,gpus=8"], "the fields are: gpu, gpus_per_node"),
    (["nccl-tests", "LOG", "--machine", "help"], "field=value pairs"),
    (["nccl-tests", "LOG", "--machine", "gpu=h100,gpus_per_node=8"], "has 4 ranks but --machine describes 8"),
    (["nccl-tests", "LOG", "--plot", "out.gif"], "--plot FILE must end in"),
])
def test_model_flag_errors(argv, words, capsys):
    argv = [str(nccl_tests_log(1)) if a == "LOG" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err
