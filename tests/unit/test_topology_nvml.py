"""commlab.topology.read against a FAKE pynvml module that answers like NVML on real machines.

The fake keeps the real pynvml's error classes and constants (they load without a driver) and replaces the
functions. Expected matrices come from the published `nvidia-smi topo -m` texts of the same kinds of machine
(the shipped examples), not from the reader.
"""
from __future__ import annotations

import subprocess
import sys
import types

import pynvml
import pytest

from commlab.topology import Topology, example, read
from commlab.topology.nvml import cpu_list, driver_status

_ANCESTOR = {"PIX": pynvml.NVML_TOPOLOGY_SINGLE, "PXB": pynvml.NVML_TOPOLOGY_MULTIPLE,
             "PHB": pynvml.NVML_TOPOLOGY_HOSTBRIDGE, "NODE": pynvml.NVML_TOPOLOGY_NODE,
             "SYS": pynvml.NVML_TOPOLOGY_SYSTEM}


class Machine:
    """What NVML would report: per GPU a dict, per (gpu, link) the remote (bus id, device type)."""

    def __init__(self, gpus, links, ancestors, p2p=None, remote_type=True, init_error=None):
        self.gpus, self.links, self.ancestors = gpus, links, ancestors
        self.p2p, self.remote_type, self.init_error = p2p or {}, remote_type, init_error
        self.calls = []


def fake_nvml(machine: Machine) -> types.ModuleType:
    nv = types.ModuleType("fake_pynvml")
    for name in dir(pynvml):
        if name.startswith(("NVML_", "NVMLError")):
            setattr(nv, name, getattr(pynvml, name))

    def init():
        machine.calls.append("init")
        if machine.init_error is not None:
            raise machine.init_error()

    def link_state(h, link):
        if (h, link) in machine.links:
            return pynvml.NVML_FEATURE_ENABLED
        if machine.links:
            raise pynvml.NVMLError_InvalidArgument() if link >= 18 else pynvml.NVMLError_NotSupported()
        raise pynvml.NVMLError_NotSupported()

    def remote_type(h, link):
        if not machine.remote_type:
            raise pynvml.NVMLError_NotSupported()
        return machine.links[h, link][1]

    def p2p(a, b, index):
        assert index == 0, "the caps index must be an int, not nvidia-ml-py's tuple"
        return machine.p2p.get((min(a, b), max(a, b)), pynvml.NVML_P2P_STATUS_OK)

    g = machine.gpus
    nv.nvmlInit = init
    nv.nvmlShutdown = lambda: machine.calls.append("shutdown")
    nv.nvmlSystemGetDriverVersion = lambda: "550.54.15"
    nv.nvmlDeviceGetCount = lambda: len(g)
    nv.nvmlDeviceGetHandleByIndex = lambda i: i
    nv.nvmlDeviceGetName = lambda h: g[h]["name"]
    nv.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=g[h]["memory"], free=0, used=0)
    nv.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: 1  # idle GPUs drop to gen 1
    nv.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: g[h]["gen"]
    nv.nvmlDeviceGetCurrPcieLinkWidth = lambda h: 16
    nv.nvmlDeviceGetMaxPcieLinkWidth = lambda h: 16
    nv.nvmlDeviceGetNumaNodeId = lambda h: g[h]["numa"]
    nv.nvmlDeviceGetCpuAffinity = lambda h, words: g[h]["mask"] + [0] * (words - len(g[h]["mask"]))
    nv.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=g[h]["bus"])
    nv.nvmlDeviceGetNvLinkState = link_state
    nv.nvmlDeviceGetNvLinkRemoteDeviceType = remote_type
    nv.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: types.SimpleNamespace(busId=machine.links[h, link][0])
    nv.nvmlDeviceGetTopologyCommonAncestor = lambda a, b: machine.ancestors[min(a, b), max(a, b)]
    nv.nvmlDeviceGetP2PStatus = p2p
    return nv


def _gpu(i, name, gen, numa, mask):
    return {"name": name, "memory": 80 * 2**30, "gen": gen, "numa": numa, "mask": mask,
            "bus": f"00000000:{0x18 + 0x10 * i:02X}:00.0"}


def dgx_h100(remote_type=True) -> Machine:
    """8 H100s, 18 NVLinks each, every link ending at one of 4 NVSwitches (as on an HGX H100 board)."""
    gpus = [_gpu(i, "NVIDIA H100 80GB HBM3", 5, i // 4, [0xFFFF << (16 * (i // 4))]) for i in range(8)]
    switches = [f"00000000:{b:02X}:00.0" for b in (5, 6, 7, 8)]
    links = {(i, link): (switches[link % 4], pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH)
             for i in range(8) for link in range(18)}
    ancestors = {(i, j): pynvml.NVML_TOPOLOGY_NODE if i // 4 == j // 4 else pynvml.NVML_TOPOLOGY_SYSTEM
                 for i in range(8) for j in range(i + 1, 8)}
    return Machine(gpus, links, ancestors, remote_type=remote_type)


def pcie_box() -> Machine:
    """The shipped pcie-4gpu example as NVML would see it: no NVLink, PHB in a socket, SYS across."""
    topo = example("pcie-4gpu")
    gpus = [_gpu(i, "NVIDIA GeForce GTX TITAN X", 3, i // 2, [0x3F << (6 * (i // 2))]) for i in range(4)]
    ancestors = {(i, j): _ANCESTOR[topo.relation(i, j)] for i in range(4) for j in range(i + 1, 4)}
    p2p = {(i, j): pynvml.NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED for (i, j) in ancestors if i // 2 != j // 2}
    return Machine(gpus, {}, ancestors, p2p=p2p)


def dgx1_v100(topo: Topology) -> Machine:
    """Direct NVLinks between GPUs, spread over link numbers, as the V100 hybrid cube mesh text shows them."""
    gpus = [_gpu(i, "Tesla V100-SXM2-16GB", 3, i // 4, [0xFFF]) for i in range(8)]
    links, used = {}, [0] * 8
    for i in range(8):
        for j in range(8):
            count = int(topo.relation(i, j)[2:]) if topo.relation(i, j).startswith("NV") else 0
            for _ in range(count):
                links[i, used[i]] = (gpus[j]["bus"].lower().replace("00000000:", "0000:"),
                                     pynvml.NVML_NVLINK_DEVICE_TYPE_GPU)
                used[i] += 1
    ancestors = {(i, j): pynvml.NVML_TOPOLOGY_SYSTEM for i in range(8) for j in range(i + 1, 8)}
    return Machine(gpus, links, ancestors)


@pytest.mark.parametrize("remote_type", [True, False], ids=["switch-type", "no-remote-type"])
def test_dgx_h100_reads_nv18_for_every_pair_like_nvidia_smi(remote_type):
    machine = dgx_h100(remote_type)
    topo = read(fake_nvml(machine))
    assert topo.source == "pynvml" and topo.reason == ""
    assert topo.matrix == example("h100-sxm-8").matrix
    assert machine.calls == ["init", "shutdown"]


def test_dgx_h100_gpu_details():
    topo = read(fake_nvml(dgx_h100()))
    gpu = topo.gpus[5]
    assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.memory_bytes == 80 * 2**30
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (1, 5, 16, 16)
    assert gpu.numa_node == 1 and gpu.cpu_affinity == "16-31" and gpu.pci_bus_id == "00000000:68:00.0"
    assert topo.p2p[0][1] == "OK" and topo.p2p[3][3] == "X"


def test_pcie_box_maps_common_ancestors_to_nvidia_smi_names_and_reports_p2p():
    topo = read(fake_nvml(pcie_box()))
    assert topo.matrix == example("pcie-4gpu").matrix
    assert topo.p2p[0][1] == "OK" and topo.p2p[0][2] == "CNS" and topo.p2p[3][1] == "CNS"
    assert [g.cpu_affinity for g in topo.gpus] == ["0-5", "0-5", "6-11", "6-11"]


def test_direct_nvlinks_are_counted_per_peer_by_bus_id():
    from pathlib import Path

    from commlab.topology import parse_topo_text

    text = (Path(__file__).resolve().parents[1] / "data/topo/v100_sxm2_8gpu_hybrid_cube_mesh.txt").read_text()
    published = parse_topo_text(text)
    assert read(fake_nvml(dgx1_v100(published))).matrix == published.matrix


@pytest.mark.parametrize("error, words", [
    (pynvml.NVMLError_LibraryNotFound, "library not found"),
    (pynvml.NVMLError_DriverNotLoaded, "driver not loaded"),
    (pynvml.NVMLError_NoPermission, "no permission"),
])
def test_a_machine_without_a_driver_gets_an_empty_topology_with_the_reason(error, words):
    machine = Machine([], {}, {}, init_error=error)
    topo = read(fake_nvml(machine))
    assert topo.empty and words in topo.reason.lower()
    assert machine.calls == ["init"]  # nothing to shut down after a failed init
    assert driver_status(fake_nvml(machine)) == (None, topo.reason)


def test_no_gpu_and_errors_while_reading_still_shut_nvml_down():
    machine = Machine([], {}, {})
    assert "0 devices" in read(fake_nvml(machine)).reason
    assert machine.calls == ["init", "shutdown"]
    lost = dgx_h100()
    nv = fake_nvml(lost)

    def gone(i):
        raise pynvml.NVMLError_GpuIsLost()

    nv.nvmlDeviceGetHandleByIndex = gone
    topo = read(nv)
    assert topo.empty and "GPU is lost" in topo.reason and lost.calls == ["init", "shutdown"]


def test_driver_status_names_the_driver():
    version, line = driver_status(fake_nvml(dgx_h100()))
    assert version == "550.54.15" and "8 GPU(s)" in line


def test_this_machine_is_read_without_raising():
    topo = read()
    assert isinstance(topo, Topology)
    assert topo.reason if topo.empty else topo.n_gpus >= 1


def test_cpu_list_writes_ranges_like_taskset():
    assert cpu_list([]) == "" and cpu_list([5]) == "5"
    assert cpu_list([0, 1, 2, 3, 96, 97, 98, 99, 50]) == "0-3,50,96-99"


def test_importing_commlab_topology_and_measure_touches_neither_nvml_nor_torch():
    code = ("import sys, commlab.topology, commlab.measure, commlab.cli.topo, commlab.cli.doctor; "
            "print('pynvml' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_every_nvml_topology_level_and_p2p_status_of_pynvml_has_nvidia_smis_label():
    from commlab.topology.nvml import LEVEL_LABELS, P2P_LABELS, labels

    for prefix, table in (("NVML_TOPOLOGY_", LEVEL_LABELS), ("NVML_P2P_STATUS_", P2P_LABELS)):
        values = {getattr(pynvml, name) for name in dir(pynvml) if name.startswith(prefix)}
        assert values and values <= set(labels(pynvml, table)), prefix
    assert labels(pynvml, P2P_LABELS)[pynvml.NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED] == "TNS"
    assert labels(pynvml, LEVEL_LABELS)[pynvml.NVML_TOPOLOGY_SYSTEM] == "SYS"
