"""This machine's topology through NVML (package nvidia-ml-py, imported as ``pynvml``), as nvidia-smi builds it.

Per GPU: name, memory, PCIe generation and width (current and max), NUMA node, CPU affinity and PCI bus id.
Per pair, the relation nvidia-smi prints:

* ``NV#`` where the GPUs share NVLinks. # counts the active links (``nvmlDeviceGetNvLinkState`` over
  ``NVML_NVLINK_MAX_LINKS``) whose remote end (``nvmlDeviceGetNvLinkRemotePciInfo``) is the other GPU. On
  NVSwitch systems every link ends at a switch (``nvmlDeviceGetNvLinkRemoteDeviceType`` says SWITCH, or the
  remote bus id is no GPU's: NCCL treats an NVLink peer NVML cannot identify as an invisible NVSwitch,
  NVIDIA/nccl issue #1182). Every pair then reaches the other through its switch links, and nvidia-smi
  prints NV18 for all pairs of an HGX H100. So # = direct links + min(switch links of i, of j).
* otherwise ``nvmlDeviceGetTopologyCommonAncestor``: SINGLE -> PIX, MULTIPLE -> PXB, HOSTBRIDGE -> PHB,
  NODE -> NODE, SYSTEM -> SYS (INTERNAL, two GPUs on one board, -> PIX).

P2P read status comes from ``nvmlDeviceGetP2PStatus`` with nvidia-smi's labels (OK, CNS, GNS, TNS, NS, DR, U).
Nothing here runs at import time; :func:`read` never raises for a missing library, driver or GPU and always
calls ``nvmlShutdown`` after a successful ``nvmlInit``. Pass ``nvml=`` a stand-in module to test it.
"""
from __future__ import annotations

import os
import re

from commlab.topology.model import Gpu, Topology

#: nvidia-smi's label for each level of ``nvmlDeviceGetTopologyCommonAncestor``, by pynvml's constant names.
LEVEL_LABELS = (("NVML_TOPOLOGY_INTERNAL", "PIX"), ("NVML_TOPOLOGY_SINGLE", "PIX"), ("NVML_TOPOLOGY_MULTIPLE", "PXB"),
                ("NVML_TOPOLOGY_HOSTBRIDGE", "PHB"), ("NVML_TOPOLOGY_NODE", "NODE"), ("NVML_TOPOLOGY_SYSTEM", "SYS"))
#: nvidia-smi's label for each ``nvmlDeviceGetP2PStatus`` answer; nvidia-ml-py spells CHIPSET_NOT_SUPPORED too.
P2P_LABELS = (("NVML_P2P_STATUS_OK", "OK"), ("NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED", "CNS"),
              ("NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED", "CNS"), ("NVML_P2P_STATUS_GPU_NOT_SUPPORTED", "GNS"),
              ("NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED", "TNS"), ("NVML_P2P_STATUS_DISABLED_BY_REGKEY", "DR"),
              ("NVML_P2P_STATUS_NOT_SUPPORTED", "NS"), ("NVML_P2P_STATUS_UNKNOWN", "U"))
_BUS_RE = re.compile(r"([0-9A-Fa-f]+):([0-9A-Fa-f]+):([0-9A-Fa-f]+)\.([0-9A-Fa-f]+)")
_SWITCH = "switch"


def read(nvml=None) -> Topology:
    """This machine's GPUs and their relations; an empty Topology with a ``reason`` when there are none."""
    nvml, reason = _load(nvml)
    if nvml is None:
        return Topology.unavailable(reason)
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        return Topology.unavailable(init_reason(nvml, exc))
    try:
        return _read_machine(nvml)
    except nvml.NVMLError as exc:
        return Topology.unavailable(f"NVML failed while reading the GPUs: {exc}")
    finally:
        _shutdown(nvml)


def driver_status(nvml=None) -> tuple[str | None, str]:
    """(driver version or None, one line for ``commlab doctor``): "driver 550.54.15, 8 GPUs" or why not."""
    nvml, reason = _load(nvml)
    if nvml is None:
        return None, reason
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        return None, init_reason(nvml, exc)
    try:
        version = _text(nvml.nvmlSystemGetDriverVersion())
        return version, f"driver {version}, {nvml.nvmlDeviceGetCount()} GPU(s) visible to NVML"
    except nvml.NVMLError as exc:
        return None, f"NVML started but failed: {exc}"
    finally:
        _shutdown(nvml)


def init_reason(nvml, exc: Exception) -> str:
    """Why ``nvmlInit`` failed, in words a reader can act on."""
    if isinstance(exc, getattr(nvml, "NVMLError_LibraryNotFound", ())):
        return "NVML library not found (libnvidia-ml.so): no NVIDIA driver is installed here"
    if isinstance(exc, getattr(nvml, "NVMLError_DriverNotLoaded", ())):
        return "NVIDIA driver not loaded: the library is there but the kernel module is not running"
    if isinstance(exc, getattr(nvml, "NVMLError_NoPermission", ())):
        return "no permission to talk to the NVIDIA driver"
    return f"NVML could not start: {exc}"


def _load(nvml):
    if nvml is not None:
        return nvml, ""
    try:
        import pynvml
    except ImportError:
        return None, "pynvml is not installed (pip install nvidia-ml-py)"
    return pynvml, ""


def _shutdown(nvml) -> None:
    try:
        nvml.nvmlShutdown()
    except nvml.NVMLError:
        pass  # the readings are taken; a failed shutdown changes none of them


def _read_machine(nvml) -> Topology:
    count = nvml.nvmlDeviceGetCount()
    if count == 0:
        return Topology.unavailable("no NVIDIA GPU: the driver is loaded but NVML sees 0 devices")
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    gpus = tuple(_gpu(nvml, i, handle) for i, handle in enumerate(handles))
    direct, switch = _nvlink_counts(nvml, handles, [_bus_key(gpu.pci_bus_id) for gpu in gpus])
    matrix, unknown = _matrix(nvml, handles, direct, switch)
    notes = (f"relation unknown to NVML for {unknown} pair(s), shown as SYS",) if unknown else ()
    return Topology(gpus=gpus, matrix=matrix, p2p=_p2p(nvml, handles), source="pynvml", notes=notes)


def labels(nvml, names: tuple[tuple[str, str], ...]) -> dict[int, str]:
    """{value of the constant: label} for the constants of ``names`` that the binding ``nvml`` defines.

    >>> import pynvml
    >>> labels(pynvml, LEVEL_LABELS)[pynvml.NVML_TOPOLOGY_HOSTBRIDGE]
    'PHB'
    """
    return {getattr(nvml, name): label for name, label in names if hasattr(nvml, name)}


def _optional(nvml, name: str, *args):
    """Call ``nvml.<name>(*args)``; None when the binding lacks it or NVML answers an error (NotSupported)."""
    fn = getattr(nvml, name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _gpu(nvml, index: int, handle) -> Gpu:
    memory = _optional(nvml, "nvmlDeviceGetMemoryInfo", handle)
    pci = _optional(nvml, "nvmlDeviceGetPciInfo", handle)
    numa = _optional(nvml, "nvmlDeviceGetNumaNodeId", handle)
    return Gpu(index, name=_text(_optional(nvml, "nvmlDeviceGetName", handle)),
               memory_bytes=int(memory.total) if memory is not None else None,
               pcie_gen_current=_optional(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", handle),
               pcie_gen_max=_optional(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", handle),
               pcie_width_current=_optional(nvml, "nvmlDeviceGetCurrPcieLinkWidth", handle),
               pcie_width_max=_optional(nvml, "nvmlDeviceGetMaxPcieLinkWidth", handle),
               numa_node=numa if isinstance(numa, int) and numa >= 0 else None,
               cpu_affinity=_cpu_affinity(nvml, handle),
               pci_bus_id=_text(pci.busId) if pci is not None else None)


def _cpu_affinity(nvml, handle) -> str | None:
    words = max(1, -(-(os.cpu_count() or 64) // 64))
    mask = _optional(nvml, "nvmlDeviceGetCpuAffinity", handle, words)
    if mask is None:
        return None
    cpus = [64 * w + bit for w, word in enumerate(mask) for bit in range(64) if int(word) >> bit & 1]
    return cpu_list(cpus) or None


def cpu_list(cpus: list[int]) -> str:
    """CPU numbers as nvidia-smi and taskset write them.

    >>> cpu_list([0, 1, 2, 3, 8, 10, 11])
    '0-3,8,10-11'
    """
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _bus_key(bus_id: str | None) -> tuple[int, ...] | None:
    """"00000000:1B:00.0" and "0000:1b:00.0" name the same device: compare them as numbers."""
    match = _BUS_RE.search(bus_id or "")
    return tuple(int(part, 16) for part in match.groups()) if match else None


def _nvlink_counts(nvml, handles, keys) -> tuple[list[list[int]], list[int]]:
    """direct[i][j]: active links from GPU i that end at GPU j; switch[i]: links from GPU i to NVSwitches."""
    n = len(handles)
    direct, switch = [[0] * n for _ in range(n)], [0] * n
    for i, handle in enumerate(handles):
        for link in range(nvml.NVML_NVLINK_MAX_LINKS):
            target = _link_target(nvml, handle, link, keys)
            if target == _SWITCH:
                switch[i] += 1
            elif target is not None:
                direct[i][target] += 1
    return direct, switch


def _link_target(nvml, handle, link: int, keys):
    """Index of the GPU at the far end of an active link, "switch", or None (inactive, or not a GPU)."""
    if _optional(nvml, "nvmlDeviceGetNvLinkState", handle, link) != nvml.NVML_FEATURE_ENABLED:
        return None
    kind = _optional(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
    if kind == nvml.NVML_NVLINK_DEVICE_TYPE_SWITCH:
        return _SWITCH
    pci = _optional(nvml, "nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
    key = _bus_key(_text(pci.busId)) if pci is not None else None
    if key is not None and key in keys:
        return keys.index(key)
    if kind in (nvml.NVML_NVLINK_DEVICE_TYPE_GPU, nvml.NVML_NVLINK_DEVICE_TYPE_IBMNPU):
        return None  # a GPU NVML does not list, or a POWER9 CPU: not a GPU-GPU path here
    return _SWITCH


def _matrix(nvml, handles, direct, switch) -> tuple[tuple[tuple[str, ...], ...], int]:
    n, unknown, rows, levels = len(handles), 0, [], labels(nvml, LEVEL_LABELS)
    for i in range(n):
        row = []
        for j in range(n):
            links = max(direct[i][j], direct[j][i]) + (min(switch[i], switch[j]) if i != j else 0)
            level = None if i == j or links else _optional(
                nvml, "nvmlDeviceGetTopologyCommonAncestor", handles[i], handles[j])
            unknown += int(i < j and not links and level not in levels)
            label = "SYS" if level is None else levels.get(level, "SYS")      # None: not asked, or NVML did not say
            row.append("X" if i == j else f"NV{links}" if links else label)
        rows.append(tuple(row))
    return tuple(rows), unknown


def _p2p(nvml, handles) -> tuple[tuple[str, ...], ...] | None:
    index = nvml.NVML_P2P_CAPS_INDEX_READ
    index = index[0] if isinstance(index, tuple) else index  # nvidia-ml-py spells it `= 0,` (a tuple)
    statuses = labels(nvml, P2P_LABELS)
    codes = [[None if i == j else _optional(nvml, "nvmlDeviceGetP2PStatus", a, b, index)
              for j, b in enumerate(handles)] for i, a in enumerate(handles)]
    if all(code is None for row in codes for code in row):
        return None
    return tuple(tuple("X" if i == j else "U" if code is None else statuses.get(code, "U")
                       for j, code in enumerate(row)) for i, row in enumerate(codes))
