"""Each nccl-tests fixture's roof (commlab/data/nccl/roofs.json) against the fixtures' own '# hardware:' lines
and the verdicts chapter 8 draws from the real logs; torch_version against the installed distribution."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys

import pytest

from commlab import hardware, nccl
from commlab.errors import CommlabError
from commlab.nccl import env as envcheck


def hardware_line(path) -> str:
    found = re.search(r"^# hardware: (.*)$", path.read_text(), re.M)
    assert found, path.name
    return found.group(1)


def roof_from_hardware(line: str) -> str | None:
    """An independent reading of the header: several nodes or a bridge outside the catalogue have no single
    link; otherwise the GPU family says which NVSwitch generation (DGX-2, DGX A100, H100 boxes) or PCIe."""
    if "per node" in line or "nodes" in line or "NVLink bridge" in line:
        return None
    if "PCIe Gen3" in line:
        return "pcie3"
    if "A40 PCIe" in line:                                  # the A40 is a PCIe 4.0 x16 card
        return "pcie4"
    families = {"V100": "nvswitch1", "A100": "nvswitch2", "H100": "nvswitch3"}
    matched = [link for family, link in families.items() if family in line and ("NVSwitch" in line or "DGX" in line)]
    assert len(matched) == 1, line
    return matched[0]


@pytest.mark.parametrize("path", nccl.nccl_tests_logs(), ids=lambda p: p.name[:2])
def test_every_fixture_has_the_roof_its_hardware_line_implies(path):
    roof = nccl.fixture_roof(path.name)
    assert roof.number == int(path.name[:2])
    assert roof.link == roof_from_hardware(hardware_line(path))
    assert roof.why.strip()
    if roof.link is not None:
        assert hardware.link(roof.link).name == roof.link


def test_one_entry_per_fixture():
    assert len(nccl.nccl_tests_logs()) == 23
    assert {nccl.fixture_roof(p.name).number for p in nccl.nccl_tests_logs()} == set(range(1, 24))


def test_keys_like_nccl_tests_log():
    assert nccl.fixture_link(7) == nccl.fixture_link("07") == nccl.fixture_link("H100-p5-NVSwitch") == "nvswitch3"
    assert nccl.fixture_link(9) is None and "EFA" in nccl.fixture_roof(9).why


@pytest.mark.parametrize("key", [0, 24, "no-such-machine", "H100-p5"])
def test_unknown_or_ambiguous_keys_are_errors(key):
    with pytest.raises(CommlabError, match="nccl-tests log"):
        nccl.fixture_link(key)


@pytest.mark.parametrize("number, expected", [
    (7, "above the link"), (3, "healthy"), (1, "healthy"), (20, "healthy"), (2, "low"), (14, "low"), (5, "low"),
])
def test_chapter_8_verdicts_follow_from_the_real_logs(number, expected):
    log = nccl.parse_log(nccl.nccl_tests_log(number).read_text())
    assert nccl.verdict(nccl.peak_busbw_GBps(log.rows), nccl.fixture_link(number)).verdict == expected


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_version_is_the_installed_distribution():
    # the distribution's metadata may leave out the local label ("2.11.0" for torch.__version__ "2.11.0+cu130")
    assert nccl.torch_version().split("+")[0] == importlib.metadata.version("torch").split("+")[0]


def test_torch_version_does_not_import_torch():
    code = "import sys; from commlab import nccl; nccl.torch_version(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_torch_version_reads_the_file(monkeypatch, tmp_path):
    (tmp_path / "version.py").write_text("from typing import Optional\n__version__: str = '9.8.7a0+cu999'\n"
                                         "cuda: Optional[str] = '99.9'\n")
    monkeypatch.setattr(envcheck, "torch_dir", lambda: tmp_path)
    assert nccl.torch_version() == "9.8.7a0+cu999"
    (tmp_path / "version.py").write_text("debug = False\n")
    assert nccl.torch_version() is None
    monkeypatch.setattr(envcheck, "torch_dir", lambda: None)
    assert nccl.torch_version() is None
