"""The NCCL_DEBUG=INFO reader on real logs from public GitHub issues (commlab/data/nccl); the expected
values are read off the files by eye."""
from __future__ import annotations

import pytest

from commlab.nccl.debuglog import read_debug_log
from commlab.nccl.examples import DATA_DIR, debug_logs


def log_of(part: str):
    return read_debug_log((DATA_DIR / [p.name for p in debug_logs() if part in p.name][0]).read_text())


def test_every_shipped_log_names_its_source():
    assert len(debug_logs()) >= 3
    for path in debug_logs():
        assert path.read_text().startswith("# source: https://github.com/")


def test_single_host_a800_issue_1027():
    log = log_of("issue1027")
    assert log.hosts == ["UIBE-DC-GPUSVR-01"]
    assert log.rings == {0: tuple(range(8)), 1: tuple(range(8))}
    assert log.n_ranks == 8 and log.n_channels == 2
    assert log.transports == {"P2P": 6, "SHM": 1}
    shm = [c for c in log.connections if c.kind == "SHM"]
    assert [(c.channel, c.src, c.dst, c.transport) for c in shm] == [(0, 3, 4, "SHM/direct/direct")]
    root = [t for t in log.trees if t.rank == 0 and t.channel == 0][0]
    assert root.parent == -1 and root.children == (1,)
    assert log.warnings == [] and log.network is None and log.nccl_version is None


def test_two_hosts_h100_cumem_issue_252():
    log = log_of("issue252")
    assert log.nccl_version == "2.21.5+cuda12.4"
    assert log.hosts == ["kolyoz1", "kolyoz2"]
    assert log.n_ranks == 8
    assert log.devices[4] == {"host": "kolyoz2", "cuda_dev": 0, "bus_id": "42000"}
    assert log.transports == {"P2P": 17} and {c.transport for c in log.connections} == {"P2P/CUMEM"}
    assert (log.n_channels, log.collnet_channels, log.nvls_channels) == (8, 8, 0)
    assert not log.uses_nvls and log.uses_collnet


def test_two_hosts_infiniband_issue_133():
    log = log_of("issue133")
    assert log.hosts == ["nodea", "nodeb"]
    assert log.transports == {"P2P": 6, "NET/IB": 3}
    net = [c for c in log.connections if c.kind == "NET/IB"]
    assert {c.direction for c in net} == {"send", "receive"} and all(c.transport.endswith("GDRDMA") for c in net)
    assert len(log.warnings) == 1 and "CollNet is not supported" in log.warnings[0]
    assert log.warnings[0].startswith("graph/tuning.cc:187")


@pytest.mark.parametrize("path", debug_logs(), ids=lambda p: p.name)
def test_prefixes_and_windows_line_ends_change_nothing(path):
    text = path.read_text()
    wrapped = "\r\n".join("[1,0]<stdout>:" + ln for ln in text.splitlines())
    assert vars(read_debug_log(wrapped)) == vars(read_debug_log(text))


def test_old_style_lines():
    """NCCL 2.5 printed 'Ring 00 : 3[b0] -> 0[80] via direct shared memory' (NVIDIA/nccl#300)."""
    text = ("73e9f9f45158:6243:6442 [3] NCCL INFO Ring 00 : 3[b0] -> 0[80] via direct shared memory\n"
            "[1,0]<stdout>:NCCL version 2.5.6+cuda10.2\n")
    log = read_debug_log(text)
    assert log.nccl_version == "2.5.6+cuda10.2"
    assert log.transports == {"SHM": 1} and log.connections[0].src == 3
