"""Read the text of ``nvidia-smi topo -m`` into a :class:`~commlab.topology.model.Topology` (chapter 01).

Real outputs differ, and this reader takes them as published (tests/data/topo holds a dozen):

* fields separated by tabs (what nvidia-smi writes) or by spaces (a terminal's copy of the tabs);
* NIC rows and columns named ``NIC0``.. with a "NIC Legend" at the end (newer drivers) or ``mlx5_0``..;
* trailing "CPU Affinity", "NUMA Affinity" and "GPU NUMA ID" columns, any of them absent or empty;
* ANSI escapes (nvidia-smi underlines the header on a terminal), comment lines starting with ``#``, a shell
  prompt or a tool's banner before the header, the legends after the matrix, and "..." where an author elided
  columns.

Tab-separated rows are read field by field. nvidia-smi pads "GPU NUMA ID" with one more tab than the header
has, so an empty field just before the last one is that padding. In space-separated rows the trailing values
are taken in order when there is one per column, and otherwise by position (a value belongs to the header it
starts under), since an empty field leaves no token behind.

>>> t = parse_topo_text("\\tGPU0\\tGPU1\\tCPU Affinity\\nGPU0\\t X \\tNV4\\t0-7\\nGPU1\\tNV4\\t X \\t0-7\\n")
>>> t.matrix, t.gpus[1].cpu_affinity
((('X', 'NV4'), ('NV4', 'X')), '0-7')
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from commlab.errors import CommlabError
from commlab.topology.model import Gpu, Nic, Topology, is_relation

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_GPU_RE = re.compile(r"^GPU(\d+)$")
_LEGEND_RE = re.compile(r"^\s*(\S+):\s+(\S+)\s*$")
_EXTRA_NAMES = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_ELIDED = ("...", "\u2026")
_EXPECTED = ("the text of `nvidia-smi topo -m`: a header line (GPU0, GPU1, ... then NICs and CPU Affinity), "
             "one row per GPU, then the legends")


@dataclass(frozen=True)
class _Header:
    labels: tuple[str, ...]              # device columns: GPU0.., then NICs
    extras: tuple[tuple[str, int], ...]  # (name, start column) of "CPU Affinity" and friends


def parse_topo_text(text: str) -> Topology:
    """Parse the output of ``nvidia-smi topo -m``; CommlabError says what was expected and what was found."""
    if not isinstance(text, str):
        raise CommlabError(f"expected {_EXPECTED}; got a {type(text).__name__}")
    lines = [_ANSI_RE.sub("", line).rstrip("\r\n") for line in text.splitlines()]
    lines = [line for line in lines if not line.lstrip().startswith("#")]
    at = _find_header(lines)
    header = _parse_header(lines[at])
    rows, end = _read_rows(lines, at + 1, header)
    return _build(header, rows, _nic_legend(lines[end:]))


def _find_header(lines: list[str]) -> int:
    for at, line in enumerate(lines):
        tokens = line.split()
        if "GPU0" in tokens:
            k = tokens.index("GPU0")
            if k + 1 == len(tokens) or tokens[k + 1] != "X":
                return at
    raise CommlabError(f"expected {_EXPECTED}; found no header line with a GPU0 column")


def _parse_header(raw: str) -> _Header:
    if "\t" in raw:
        fields = [f.strip() for f in raw.split("\t")]
        first = next(k for k, f in enumerate(fields) if _GPU_RE.match(f))
        fields = [f for f in fields[first:] if f and f not in _ELIDED]
        labels = tuple(f for f in fields if " " not in f)
        extras = tuple((f, k) for k, f in enumerate(fields) if " " in f)
        return _check_labels(_Header(labels, extras))
    line = raw.expandtabs(8)
    gpu = re.search(r"(?<!\S)GPU\d+(?!\S)", line)
    if gpu is None:
        raise CommlabError(f"expected {_EXPECTED}; found no GPU column in the header {raw!r}")
    start = gpu.start()
    found = sorted((line.find(name, start), name) for name in _EXTRA_NAMES if line.find(name, start) >= 0)
    stop = found[0][0] if found else len(line)
    labels = tuple(tok for tok in line[start:stop].split() if tok not in _ELIDED)
    return _check_labels(_Header(labels, tuple((name, col) for col, name in found)))


def _check_labels(header: _Header) -> _Header:
    gpus = [label for label in header.labels if _GPU_RE.match(label)]
    want = [f"GPU{i}" for i in range(len(gpus))]
    if list(header.labels[:len(gpus)]) != want:
        raise CommlabError(f"expected the header to list GPU0, GPU1, ... first and in order; "
                           f"found {' '.join(header.labels)}")
    return header


def _read_rows(lines: list[str], at: int, header: _Header) -> tuple[dict, int]:
    """Rows keyed by label: (cells, extras); and the index of the first line after the matrix."""
    rows: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {}
    while at < len(lines):
        tokens = lines[at].split()
        if not tokens or tokens[0] not in header.labels or tokens[0] in rows:
            if rows or tokens:
                break
        else:
            rows[tokens[0]] = _parse_row(lines[at], header)
        at += 1
    return rows, at


def _parse_row(raw: str, header: _Header) -> tuple[tuple[str, ...], dict[str, str]]:
    n = len(header.labels)
    if "\t" in raw:
        fields = [f.strip() for f in raw.split("\t")]
        fields = [fields[0]] + [f for f in fields[1:] if f not in _ELIDED]
        cells, rest = fields[1:n + 1], fields[n + 1:]
        extras = _tab_extras(rest, [name for name, _ in header.extras])
    else:
        tokens = [(m.group(), m.start()) for m in re.finditer(r"\S+", raw.expandtabs(8))]
        tokens = [tokens[0]] + [t for t in tokens[1:] if t[0] not in _ELIDED]
        cells = [tok for tok, _ in tokens[1:n + 1]]
        extras = _positional_extras(tokens[n + 1:], header.extras)
    _check_cells(raw.split()[0], cells, header)
    return tuple(cells), extras


def _check_cells(label: str, cells: list[str], header: _Header) -> None:
    n = len(header.labels)
    bad = [cell for cell in cells if not is_relation(cell)]
    if len(cells) != n or bad:
        raise CommlabError(
            f"row {label}: expected {n} relations (X, NV#, PIX, PXB, PHB, NODE or SYS), one per column "
            f"{' '.join(header.labels)}; found {' '.join(cells) or 'none'}")
    if cells[header.labels.index(label)] != "X":
        raise CommlabError(f"row {label}: expected X where it meets its own column; "
                           f"found {cells[header.labels.index(label)]}")


def _tab_extras(rest: list[str], names: list[str]) -> dict[str, str]:
    if len(rest) == len(names) + 1 and len(names) >= 2 and rest[-2] == "":
        rest = rest[:-2] + rest[-1:]  # nvidia-smi's padding tab before "GPU NUMA ID"
    return {name: value for name, value in zip(names, rest) if value}


def _positional_extras(tokens: list[tuple[str, int]], extras: tuple[tuple[str, int], ...]) -> dict[str, str]:
    if len(tokens) == len(extras):  # one value per column: older drivers do not align values under headers
        return {name: value for (name, _), (value, _) in zip(extras, tokens)}
    out: dict[str, str] = {}
    for value, col in tokens:
        under = [name for name, start in extras if start <= col + 1] or [name for name, _ in extras[:1]]
        if under:
            out[under[-1]] = f"{out[under[-1]]} {value}" if under[-1] in out else value
    return out


def _nic_legend(lines: list[str]) -> dict[str, str]:
    """NIC label -> device name, from the "NIC Legend:" block of newer drivers."""
    try:
        start = next(k for k, line in enumerate(lines) if line.strip() == "NIC Legend:")
    except StopIteration:
        return {}
    pairs = (_LEGEND_RE.match(line) for line in lines[start + 1:])
    return {m.group(1): m.group(2) for m in pairs if m}


def _build(header: _Header, rows: dict, legend: dict[str, str]) -> Topology:
    gpu_labels = [label for label in header.labels if _GPU_RE.match(label)]
    missing = [label for label in gpu_labels if label not in rows]
    if not gpu_labels or missing:
        raise CommlabError(f"expected one row per GPU column ({' '.join(gpu_labels) or 'none'}); "
                           f"no row for {' '.join(missing) or 'any GPU'}")
    n = len(gpu_labels)
    gpus = tuple(_gpu(i, rows[label][1]) for i, label in enumerate(gpu_labels))
    matrix = tuple(tuple(rows[label][0][:n]) for label in gpu_labels)
    nics = tuple(Nic(label, legend.get(label, label), tuple(rows[gpu][0][n + k] for gpu in gpu_labels))
                 for k, label in enumerate(header.labels[n:]))  # a NIC's column, read down the GPU rows
    return Topology(gpus=gpus, matrix=matrix, nics=nics, source="nvidia-smi text")


def _gpu(index: int, extras: dict[str, str]) -> Gpu:
    affinity = extras.get("CPU Affinity")
    numa = extras.get("NUMA Affinity", "")
    return Gpu(index, cpu_affinity=None if affinity in (None, "N/A") else affinity,
               numa_node=int(numa) if numa.isdigit() else None)
