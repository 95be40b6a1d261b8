"""`commlab doctor` and commlab.measure.doctor_report: exit 0 here, every field filled, JSON is plain data."""
from __future__ import annotations

import json
import platform

import pytest
import torch
import torch.distributed as dist

from commlab.cli import main
from commlab.measure import CopySweep, Skipped, SweepConfig, doctor_report


def test_report_without_measuring_describes_this_machine():
    report = doctor_report(measure=False)
    assert report.python.startswith(platform.python_version())
    assert report.torch == torch.__version__
    assert report.backends["gloo"] == dist.is_gloo_available()
    assert report.backends["nccl"] == dist.is_nccl_available()
    assert len(report.gpus) == (torch.cuda.device_count() if torch.cuda.is_available() else 0)
    assert report.nvml and report.roofs == ()
    if not torch.cuda.is_available():
        assert report.cuda.startswith("not available:")


def test_report_measures_the_cpu_copy_and_says_why_there_is_no_h2d():
    config = SweepConfig(min_nbytes=2**20, max_nbytes=2**22, repeats=2)
    report = doctor_report(measure=True, config=config)
    cpu, h2d = report.roofs
    assert isinstance(cpu, CopySweep) and cpu.peak_GBps > 0
    if not torch.cuda.is_available():
        assert isinstance(h2d, Skipped) and "no CUDA GPU" in h2d.reason
    text = report.to_text()
    assert "CPU memory copy (numpy)" in text and "torch" in text and "nvml" in text


def test_nvml_line_with_a_driver():
    import types

    import pynvml

    nv = types.ModuleType("fake_pynvml")
    nv.NVMLError = pynvml.NVMLError
    nv.nvmlInit = nv.nvmlShutdown = lambda: None
    nv.nvmlSystemGetDriverVersion = lambda: b"535.104.05"
    nv.nvmlDeviceGetCount = lambda: 2
    report = doctor_report(measure=False, nvml=nv)
    assert report.driver_version == "535.104.05" and report.nvml.startswith("driver 535.104.05, 2 GPU(s)")


@pytest.mark.parametrize("argv", [["doctor", "--no-measure"], ["doctor"]])
def test_cli_doctor_exits_0(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "python" in out and "backends" in out and "gloo" in out
    assert ("roofs" in out) == ("--no-measure" not in argv)


def test_cli_doctor_json(capsys):
    assert main(["doctor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"python", "os", "cpu_count", "torch", "backends", "cuda", "gpus", "nvml", "roofs"}
    assert data["roofs"][0]["what"] == "CPU memory copy (numpy)" and data["roofs"][0]["peak_GBps"] > 0
