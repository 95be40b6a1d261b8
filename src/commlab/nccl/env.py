"""The NCCL and torch environment variables the book teaches, and the torch-side names checked against the
installed torch's files.

The environment variables the book teaches: what NCCL reads and what torch's NCCL process group reads.

Sources: NCCL User Guide, "Environment Variables" (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html,
NCCL 2.19-2.23); PyTorch "ProcessGroupNCCL Environment Variables"
(pytorch.org/docs/stable/torch_nccl_environment_variables.html) and ``torch/csrc/distributed/c10d``. The
torch-side names were checked against an installed torch with :func:`commlab.nccl.env.check_torch_names`:
PyTorch renamed ``NCCL_ASYNC_ERROR_HANDLING`` to ``TORCH_NCCL_ASYNC_ERROR_HANDLING`` (and the other
``NCCL_*`` names it used to read) and still accepts the old names with a deprecation warning; recent releases
read the Flight Recorder settings under vendor-neutral ``TORCH_FR_*`` names first.

Check the torch-side names of :mod:`commlab.nccl.env` against the torch that is installed, without
importing torch.

torch's install folder comes from ``importlib.util.find_spec("torch")`` (which does not run torch); its
``.py`` files and its shared libraries (``torch/lib``, read as bytes through ``mmap``) are searched for each
name as a whole word. The names ProcessGroupNCCL reads are compiled into the CUDA build; a CPU-only wheel has
no NCCL process group, so a name may be missing there although the CUDA build of the same release reads it.
The result says which build it looked at. :func:`torch_version` reads the installed version the same way.
"""
from __future__ import annotations

import importlib.util
import mmap
import re
from dataclasses import dataclass
from pathlib import Path

from commlab.errors import CommlabError


SIDES = ("nccl", "torch")


@dataclass(frozen=True)
class EnvVar:
    """One environment variable."""

    name: str
    side: str
    """"nccl": read by the NCCL library itself (any framework); "torch": read by torch.distributed."""
    meaning: str
    values: str
    """Typical values, the default first where there is one."""
    old_names: tuple[str, ...] = ()
    """Earlier names still read, with a deprecation warning."""
    newer_names: tuple[str, ...] = ()
    """Names recent releases read first; this one is still accepted."""

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise CommlabError(f"side of {self.name} must be one of {SIDES}, got {self.side!r}")


def _nccl(name: str, meaning: str, values: str, old: tuple[str, ...] = ()) -> EnvVar:
    return EnvVar(name, "nccl", meaning, values, old_names=old)


def _torch(name: str, meaning: str, values: str, old: tuple[str, ...] = (), newer: tuple[str, ...] = ()) -> EnvVar:
    return EnvVar(name, "torch", meaning, values, old_names=old, newer_names=newer)


def catalogue() -> tuple[EnvVar, ...]:
    """Every variable, NCCL's first, in the order the book introduces them."""
    return (
        _nccl("NCCL_DEBUG", "How much NCCL prints: version, warnings, or the INFO log of its choices "
              "(topology, transports, rings and trees).", "unset (nothing), VERSION, WARN, INFO, TRACE"),
        _nccl("NCCL_DEBUG_SUBSYS", "Which subsystems INFO covers; ^ excludes.",
              "INIT,BOOTSTRAP,ENV (recent default; INIT before); INIT,GRAPH,NET,P2P,SHM,TUNING,NVLS; ALL; ^COLL"),
        _nccl("NCCL_DEBUG_FILE", "Write the debug log to a file per process (%h host, %p pid).",
              "unset (stdout); /tmp/nccl.%h.%p"),
        _nccl("NCCL_ALGO", "Restrict the algorithms NCCL may choose; its cost model picks among the rest.",
              "unset (all); Ring; Tree; NVLS; NVLSTree; CollNetDirect; CollNetChain; PAT; ^NVLS"),
        _nccl("NCCL_PROTO", "Restrict the protocols: LL (8-byte flag+data), LL128, Simple.",
              "unset (all); Simple; LL,LL128; ^LL128"),
        _nccl("NCCL_P2P_DISABLE", "Disable the P2P transport (direct GPU-to-GPU over NVLink or PCIe); traffic "
              "falls back to SHM through host memory or the network.", "0 (default), 1"),
        _nccl("NCCL_P2P_LEVEL", "The farthest topology distance at which P2P is still used.",
              "auto (default); LOC, NVL, PIX, PXB, PHB, SYS"),
        _nccl("NCCL_SHM_DISABLE", "Disable the shared-memory transport between processes of one host.",
              "0 (default), 1"),
        _nccl("NCCL_IB_DISABLE", "Do not use InfiniBand/RoCE verbs; fall back to sockets (NET/Socket).",
              "0 (default), 1"),
        _nccl("NCCL_IB_HCA", "Which RDMA devices and ports to use; ^ excludes, = exact match.",
              "unset (all); mlx5_0:1,mlx5_1:1; ^mlx5_4; =mlx5_0"),
        _nccl("NCCL_SOCKET_IFNAME", "Which IP interfaces bootstrap and NET/Socket use (prefix match).",
              "unset (auto, not lo or docker); eth0; ens; ^docker,lo; =eth0"),
        _nccl("NCCL_NET_GDR_LEVEL", "The farthest NIC-GPU distance at which GPUDirect RDMA is used.",
              "auto (default); LOC, PIX, PXB, PHB, SYS", old=("NCCL_IB_GDR_LEVEL",)),
        _nccl("NCCL_NET", "Force a network: the built-in IB or Socket, or a plugin by name.",
              "unset (first that works); IB; Socket; AWS Libfabric"),
        _nccl("NCCL_NET_PLUGIN", "Which network plugin library to load (libnccl-net-<name>.so).",
              "unset (libnccl-net.so if present); aws-ofi; none"),
        _nccl("NCCL_NVLS_ENABLE", "NVLink SHARP: let the NVSwitch reduce (H100 and later, NVSwitch systems).",
              "on where the system supports it (default), 0 turns it off"),
        _nccl("NCCL_COLLNET_ENABLE", "CollNet: in-network reduction in InfiniBand switches (SHARP plugin).",
              "0 (default), 1"),
        _nccl("NCCL_MIN_NCHANNELS", "Least number of channels (parallel rings/trees, one CUDA block each).",
              "auto (default); 4; 16", old=("NCCL_MIN_NRINGS",)),
        _nccl("NCCL_MAX_NCHANNELS", "Largest number of channels; fewer leaves SMs to compute kernels.",
              "auto (default); 8; 32", old=("NCCL_MAX_NRINGS",)),
        _nccl("NCCL_BUFFSIZE", "Bytes of buffer per channel and peer for the Simple protocol.",
              "4194304 (4 MiB, default); 8388608"),
        _nccl("NCCL_TOPO_DUMP_FILE", "Write the topology NCCL detected to an XML file.", "unset; /tmp/topo.xml"),
        _nccl("NCCL_TOPO_FILE", "Read the topology from an XML file instead of detecting it (VMs, clouds).",
              "unset; /etc/nccl/topo.xml"),
        _nccl("NCCL_CROSS_NIC", "Allow rings and trees to use different NICs on different nodes.",
              "2 (default, auto), 0, 1"),
        _torch("TORCH_NCCL_ASYNC_ERROR_HANDLING", "What the watchdog does when a collective fails or times "
               "out: 0 nothing, 1 abort the communicator and kill the process, 2 abort only, 3 kill only.",
               "3 (default), 1, 0", old=("NCCL_ASYNC_ERROR_HANDLING",)),
        _torch("TORCH_NCCL_BLOCKING_WAIT", "Make work.wait() block and raise after the process group timeout.",
               "0 (default), 1", old=("NCCL_BLOCKING_WAIT",)),
        _torch("TORCH_NCCL_TRACE_BUFFER_SIZE", "Entries in the Flight Recorder ring buffer of recent "
               "collectives; 0 turns it off.", "0 (off), 2000", newer=("TORCH_FR_BUFFER_SIZE",)),
        _torch("TORCH_NCCL_DUMP_ON_TIMEOUT", "Dump the Flight Recorder buffer when the watchdog sees a timeout "
               "or an error (needs a trace buffer size > 0).", "0, 1"),
        _torch("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "Path prefix of the Flight Recorder dumps (one per rank).",
               "/tmp/nccl_trace_rank_", newer=("TORCH_FR_DUMP_TEMP_FILE",)),
        _torch("TORCH_NCCL_TRACE_CPP_STACK", "Record C++ stack traces in the Flight Recorder.", "0 (default), 1",
               newer=("TORCH_FR_CPP_STACK",)),
        _torch("TORCH_NCCL_DESYNC_DEBUG", "On a timeout, report which rank is behind (desync).",
               "0 (default), 1", old=("NCCL_DESYNC_DEBUG",)),
        _torch("TORCH_NCCL_ENABLE_TIMING", "Record start events to time every collective.", "0 (default), 1",
               old=("NCCL_ENABLE_TIMING",)),
        _torch("TORCH_NCCL_ENABLE_MONITORING", "A monitor thread that kills the process when the watchdog "
               "itself hangs.", "1 (default), 0"),
        _torch("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "How long the monitor waits for a watchdog heartbeat.",
               "480 (default, seconds)"),
        _torch("TORCH_NCCL_HIGH_PRIORITY", "Run NCCL on a high-priority CUDA stream.", "0 (default), 1"),
        _torch("TORCH_NCCL_AVOID_RECORD_STREAMS", "Keep tensors alive by reference instead of "
               "recordStream (frees memory sooner).", "0 or 1 (the default changed between releases)"),
        _torch("TORCH_DISTRIBUTED_DEBUG", "torch.distributed's own checks: DETAIL verifies that all ranks call "
               "the same collectives with the same shapes, and DDP reports unused parameters.",
               "OFF (default), INFO, DETAIL"),
        _torch("TORCH_CPP_LOG_LEVEL", "Level of c10d's C++ log (set INFO with TORCH_DISTRIBUTED_DEBUG).",
               "WARNING (default), INFO, ERROR"),
    )


def names(side: str | None = None) -> tuple[str, ...]:
    """The variable names, of one side (``"nccl"`` or ``"torch"``) or of both."""
    if side is not None and side not in SIDES:
        raise CommlabError(f"unknown side {side!r}; expected one of: {', '.join(SIDES)}")
    return tuple(v.name for v in catalogue() if side is None or v.side == side)


def lookup(name: str) -> EnvVar:
    """The variable called ``name`` (an old or newer name finds it too)."""
    key = str(name).strip().upper()
    for var in catalogue():
        if key == var.name or key in var.old_names or key in var.newer_names:
            return var
    raise CommlabError(f"unknown environment variable {name!r}; known: {', '.join(names())}")


_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_PY_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(?:TORCH|NCCL)_[A-Z0-9_]+(?![A-Za-z0-9_])")
_LIB_SUFFIXES = (".so", ".dylib", ".dll")
STATUSES = ("found", "found under a newer name", "only the deprecated name found", "not found")


@dataclass(frozen=True)
class NameCheck:
    """What the installed torch says about one variable."""

    name: str
    status: str
    """One of STATUSES."""
    names_found: tuple[str, ...]
    """Which of the name, its old names and its newer names occur in the install."""


@dataclass(frozen=True)
class TorchNameReport:
    """The result of :func:`check_torch_names`."""

    torch_dir: str | None
    torch_version: str | None
    cuda_build: bool
    checks: tuple[NameCheck, ...]
    note: str


def tokens_in_bytes(buf) -> set[str]:
    """Every upper-case identifier starting ``NCCL_`` or ``TORCH_`` (possibly inside a longer one, such as
    ``TORCH_NCCL_...``) in a bytes-like object, as whole identifiers."""
    out: set[str] = set()
    for needle in (b"NCCL_", b"TORCH_"):
        pos = buf.find(needle)
        while pos != -1:
            start = pos
            while start > 0 and buf[start - 1] in _TOKEN_BYTES:
                start -= 1
            end = pos + len(needle)
            while end < len(buf) and buf[end] in _TOKEN_BYTES:
                end += 1
            out.add(bytes(buf[start:end]).decode("ascii"))
            pos = buf.find(needle, end)
    return out


def _library_tokens(lib_dir: Path) -> set[str]:
    found: set[str] = set()
    for path in sorted(lib_dir.glob("*")) if lib_dir.is_dir() else ():
        if not path.is_file() or not any(s in path.name for s in _LIB_SUFFIXES) or path.stat().st_size == 0:
            continue
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            found |= tokens_in_bytes(mm)
    return found


def _python_tokens(root: Path) -> set[str]:
    found: set[str] = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "NCCL_" in text or "TORCH_" in text:
            found.update(_PY_TOKEN.findall(text))
    return found


def torch_dir() -> Path | None:
    """torch's install folder, found without importing torch; None when torch is not installed."""
    found = importlib.util.find_spec("torch")
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0])


def _version_fields(root: Path) -> tuple[str | None, bool]:
    """(``__version__``, whether ``cuda`` is set) read from ``torch/version.py`` as text."""
    path = root / "version.py"
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    version = re.search(r"^__version__\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    cuda = re.search(r"^cuda\s*(?::[^=]*)?=\s*(.+)$", text, re.M)
    return (version.group(1) if version else None,
            cuda is not None and cuda.group(1).strip() not in ("None", "''", '""'))


def torch_version() -> str | None:
    """The installed torch's ``__version__`` ("2.13.0+cpu"), read from ``torch/version.py`` as text without
    importing torch; None when torch is not installed or the file names no version."""
    root = torch_dir()
    return None if root is None else _version_fields(root)[0]


def classify_name(var: EnvVar, present: set[str]) -> NameCheck:
    """The status of one variable given the identifiers present in the install."""
    names_found = tuple(n for n in (var.name, *var.old_names, *var.newer_names) if n in present)
    if var.name in present:
        status = "found"
    elif any(n in present for n in var.newer_names):
        status = "found under a newer name"
    elif any(n in present for n in var.old_names):
        status = "only the deprecated name found"
    else:
        status = "not found"
    return NameCheck(name=var.name, status=status, names_found=names_found)


def check_torch_names() -> TorchNameReport:
    """Look up every torch-side variable of the catalogue in the installed torch (see the module docstring)."""
    root = torch_dir()
    torch_vars = [v for v in catalogue() if v.side == "torch"]
    if root is None:
        checks = tuple(NameCheck(v.name, "not found", ()) for v in torch_vars)
        return TorchNameReport(None, None, False, checks, "torch is not installed: nothing to check against")
    version, cuda = _version_fields(root)
    present = _library_tokens(root / "lib") | _python_tokens(root)
    checks = tuple(classify_name(v, present) for v in torch_vars)
    missing = sum(c.status == "not found" for c in checks)
    note = (f"torch {version} ({'CUDA' if cuda else 'CPU-only'} build) at {root}: "
            f"{len(checks) - missing} of {len(checks)} names found.")
    if not cuda:
        note += (" A CPU-only wheel does not contain ProcessGroupNCCL, so names only it reads cannot be "
                 "found here; 'not found' is no proof that a CUDA build of this release ignores them.")
    return TorchNameReport(str(root), version, cuda, checks, note)
