"""One line of an nccl-tests log: what kind of line it is, a table row read with its header's units, and the
``#`` comments around the table.

Split an nccl-tests log into classified lines: launcher prefixes and Windows line ends removed.

Real logs arrive wrapped: ``mpirun --tag-output`` puts ``[1,0]<stdout>:`` before every line, ``srun -l`` puts
``0: ``, torchrun ``[default0]:`` or ``[rank0]:``, pdsh ``host: ``; NCCL_DEBUG=INFO interleaves ``NCCL INFO``
lines; a README may elide rows with ``...``. :func:`classify` says what each line is so that the table reader
only sees rows, the comments it understands, and what it must report.

Read one nccl-tests table row into a :class:`~commlab.nccl.records.Row`, modern or legacy layout.

Modern rows (nccl-tests 2.13 and later) are ``size count type redop root`` then ``time algbw busbw #wrong``
for out-of-place and in-place. Legacy rows (nccl-tests before 2.13) drop ``redop`` where the
collective does not reduce and ``root`` where it has none, and print an ``error`` column (the largest
absolute difference, e.g. ``2e-07``) instead of ``#wrong``. A :class:`Layout` says which columns a table has;
it comes from the header line when there is one, else from the row's own number of fields.

The units come from the header's third line (``(B) (elements) (us) (GB/s) (GB/s)``): nccl-tests always prints
microseconds and GB/s, but an edited or converted log may say ``(ms)`` or ``(MB/s)``; such values are converted
to microseconds and GB/s, and a unit commlab does not know is refused. A row whose time or bandwidths are
not finite numbers >= 0 (``nan``, ``inf``, ``-3.2``) is not read: strict JSON has no NaN, and a negative time
is no measurement.

Read the ``#`` lines of an nccl-tests log: fixture metadata, the preamble, the device list, the footer.

The fixtures under ``commlab/data/nccl/nccl-tests`` open with ``# source:``, ``# command:``, ``# nranks:``,
``# collective:``, ``# hardware:`` and ``# format:`` lines that are not nccl-tests output; they are read as
metadata. Everything else follows nccl-tests' ``printf`` formats (``src/common.cu``, ``src/util.cu``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from commlab.errors import CommlabError
from commlab.nccl.records import Measure, Row


#: Launcher prefixes, tried in order; the first that matches is removed.
_PREFIXES = (
    re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:"),  # mpirun --tag-output
    re.compile(r"^\[(?:default|rank)?\d+\]:"),  # torchrun --tee / torch's rank prefix
    re.compile(r"^\s*\d+:\s"),  # srun -l task label
)
#: A markdown or e-mail quote (``> `` once or nested), as where a log is re-quoted in an issue thread; removed
#: before the launcher prefixes.
_QUOTE = re.compile(r"^(?:[ \t]*>)+ ?")
#: A host label (pdsh, clush): only removed when what is left is a table line.
_HOST_PREFIX = re.compile(r"^[A-Za-z][\w.\-]*:\s")
_NCCL_DEBUG = re.compile(r"\bNCCL (?:INFO|WARN|TRACE|ABORT)\b")
_ELISION = re.compile(r"^\s*(?:\.\.\.+|\u2026)\s*$")
_ROW_START = re.compile(r"^\s*\d")
#: A table row begins with two whole numbers (size, count); an NCCL debug line with ``host:pid:tid``.
_ROW_HEAD = re.compile(r"^\s*\d+\s+\d+\s")

#: The kinds :func:`classify` returns.
KINDS = ("blank", "comment", "row", "nccl_debug", "elision", "other")


@dataclass(frozen=True)
class Line:
    """One line of the log: its 1-based number in the original text, the text without prefix, its kind."""

    number: int
    text: str
    kind: str
    raw: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"line kind must be one of {KINDS}, got {self.kind!r}")


def strip_prefix(raw: str) -> str:
    """The line without a launcher prefix and trailing blanks (``\\r`` included).

    >>> strip_prefix("[1,0]<stdout>:#       size"), strip_prefix("0:            8  2  float")
    ('#       size', '           8  2  float')
    >>> strip_prefix(">            8  2  float"), strip_prefix("> > # Avg bus bandwidth : 1")
    ('           8  2  float', '# Avg bus bandwidth : 1')
    """
    text = _QUOTE.sub("", raw.rstrip(), count=1)
    for pattern in _PREFIXES:
        match = pattern.match(text)
        if match:
            return text[match.end():]
    match = _HOST_PREFIX.match(text)
    if match and (text[match.end():].startswith("#") or _ROW_START.match(text[match.end():])):
        return text[match.end():]
    return text


def kind_of(text: str) -> str:
    """What a prefix-free line is: blank, comment (``#``), row (starts with a digit), nccl_debug, elision,
    or other (launcher noise, warnings from other tools). A row with an NCCL message glued to its end (two
    processes writing to one stream) is a row: :func:`glued_message` finds the message.

    >>> kind_of("  8  2  float  sum  -1  9.1  0.00  0.00  0 host:1:2 [0] NCCL WARN x"), kind_of("h:1:2 [0] NCCL INFO y")
    ('row', 'nccl_debug')
    """
    stripped = text.strip()
    if not stripped:
        return "blank"
    if _NCCL_DEBUG.search(text) and not _ROW_HEAD.match(text):
        return "nccl_debug"
    if stripped.startswith("#"):
        return "comment"
    if _ELISION.match(text):
        return "elision"
    if _ROW_START.match(text):
        return "row"
    return "other"


def split_glued(text: str) -> tuple[str, str | None]:
    """(the row, the NCCL debug message glued to its end, from its ``host:pid:tid`` token on, or None).

    >>> split_glued("  8  2  float  sum  -1  9.1  0.00  0.00  0 node7:11:12 [0] NCCL WARN Call to ibv failed")
    ('  8  2  float  sum  -1  9.1  0.00  0.00  0', 'node7:11:12 [0] NCCL WARN Call to ibv failed')
    """
    match = _NCCL_DEBUG.search(text)
    if match is None or not _ROW_HEAD.match(text):
        return text, None
    cut = match.start()
    while True:  # back over the message's own "host:pid:tid [dev]" prefix
        head = text[:cut].rstrip()
        last = head.split()[-1] if head.split() else ""
        if not (last.startswith("[") or ":" in last):
            break
        cut = len(head) - len(last)
    return text[:cut].rstrip(), text[cut:].strip()


def classify(text: str) -> list[Line]:
    """Every line of ``text`` with its number, prefix-free text and kind (any line-end convention)."""
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        clean = strip_prefix(raw)
        out.append(Line(number=number, text=clean, kind=kind_of(clean), raw=raw))
    return out


#: Time units of the header -> microseconds; bandwidth units -> GB/s (1e9 bytes per second).
TIME_UNITS_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6}
BW_UNITS_GBPS = {"B/s": 1e-9, "KB/s": 1e-6, "MB/s": 1e-3, "GB/s": 1.0, "TB/s": 1e3, "KiB/s": 1024 / 1e9,
                 "MiB/s": 1024**2 / 1e9, "GiB/s": 1024**3 / 1e9}

#: Element sizes of the data types nccl-tests names (``-d``), for the size/count consistency checks.
ITEMSIZE = {"int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8,
            "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2,
            "fp8_e4m3": 1, "fp8_e5m2": 1, "f8e4m3": 1, "f8e5m2": 1}
_EXPONENT_ONLY = re.compile(r"^\d(?:\.\d+)?e[+-]\d+$")


@dataclass(frozen=True)
class Layout:
    """Which optional columns a table has and what its check column holds."""

    has_redop: bool = True
    has_root: bool = True
    legacy_error: bool = False
    """True where the fourth measure column is legacy ``error`` (a float), False for ``#wrong`` (a count)."""
    has_check: bool = True
    """False where the header names no ``#wrong``/``error`` column (a table trimmed to time, algbw, busbw)."""
    time_scale_us: float = 1.0
    """Microseconds per unit of the time columns (1 for nccl-tests' ``(us)``)."""
    bw_scale_GBps: float = 1.0
    """GB/s per unit of the bandwidth columns (1 for nccl-tests' ``(GB/s)``)."""

    @property
    def n_head(self) -> int:
        """Columns before the first measure block."""
        return 3 + int(self.has_redop) + int(self.has_root)

    @property
    def measure_width(self) -> int:
        """Columns of one measure block: time, algbw, busbw and, when the table has it, the check column."""
        return 4 if self.has_check else 3


MODERN = Layout()


def layout_from_header(text: str) -> Layout | None:
    """The layout named by a ``#  size  count  type ...`` header line, or None if ``text`` is not one.

    >>> layout_from_header("#  size  count  type  redop  root  time  algbw  busbw #wrong") == Layout()
    True
    >>> layout_from_header("#  size  count  type  time  algbw  busbw  error").legacy_error
    True
    >>> layout_from_header("#  size  count  type  redop  root  time  algbw  busbw").measure_width
    3
    """
    words = text.lstrip("#").split()
    if len(words) < 3 or words[:2] != ["size", "count"]:
        return None
    has_check = any(w.lstrip("#") in ("wrong", "error") for w in words)
    return Layout(has_redop="redop" in words, has_root="root" in words, legacy_error="error" in words,
                  has_check=has_check)


def units_from_header(text: str) -> tuple[float, float] | None:
    """(microseconds per time unit, GB/s per bandwidth unit) of a ``# (B) (elements) (us) (GB/s) ...`` line,
    None when ``text`` is not the units line; CommlabError for a unit that is not known.

    >>> units_from_header("#  (B)  (elements)  (us)  (GB/s)  (GB/s)   (us)  (GB/s)  (GB/s)")
    (1.0, 1.0)
    >>> units_from_header("#  (B)  (elements)  (ms)  (MB/s)  (MB/s)")
    (1000.0, 0.001)
    """
    units = re.findall(r"\(([^)]*)\)", text)
    if len(units) < 3 or units[:2] != ["B", "elements"]:
        return None
    times, rates = set(units[2::3]), set(units[3::3]) | set(units[4::3])
    unknown = sorted((times - set(TIME_UNITS_US)) | (rates - set(BW_UNITS_GBPS)))
    if unknown or len(times) != 1 or len(rates) != 1:
        raise CommlabError(
            f"the table header gives units {', '.join('(' + u + ')' for u in units[2:])}: commlab reads one time "
            f"unit of {', '.join(TIME_UNITS_US)} and one bandwidth unit of {', '.join(BW_UNITS_GBPS)}"
            + (f"; {', '.join(unknown)} is not one of them" if unknown else ""))
    return TIME_UNITS_US[times.pop()], BW_UNITS_GBPS[rates.pop()]


def layout_from_tokens(tokens: list[str]) -> Layout:
    """Guess the layout of a row seen without a header: the measure blocks come in fours, so the number of
    leading columns is what is left over; ``redop`` is the non-numeric one."""
    n_head = 3 + (len(tokens) - 3) % 4
    has_redop = n_head >= 4 and not _is_number(tokens[3])
    has_root = n_head == 5 or (n_head == 4 and not has_redop)
    legacy = bool(_EXPONENT_ONLY.match(tokens[-1])) if len(tokens) > n_head else False
    return Layout(has_redop=has_redop, has_root=has_root, legacy_error=legacy)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _wrong(token: str, legacy: bool) -> tuple[int | None, float | None]:
    """(#wrong, legacy error) from the check column."""
    if token.upper() == "N/A":
        return None, None
    if legacy:
        return None, float(token)
    value = float(token)
    if not (value >= 0) or value == float("inf") or value != int(value):
        raise ValueError(f"#wrong must be a whole count, got {token!r}")
    return int(value), None


def _finite(token: str, what: str) -> float:
    value = float(token)
    if not (value >= 0.0 and value != float("inf")):
        raise ValueError(f"{what} {token!r} is not a finite number >= 0")
    return value


def _measure(tokens: list[str], layout: Layout) -> tuple[Measure, float | None]:
    time_us = _finite(tokens[0], "time") * layout.time_scale_us
    algbw, busbw = (_finite(t, name) * layout.bw_scale_GBps for t, name in zip(tokens[1:3], ("algbw", "busbw")))
    if not layout.has_check:
        return Measure(time_us=time_us, algbw_GBps=algbw, busbw_GBps=busbw, wrong=None), None
    wrong, error = _wrong(tokens[3], layout.legacy_error)
    if error is not None and error != error:
        raise ValueError(f"error {tokens[3]!r} is not a number")
    return Measure(time_us=time_us, algbw_GBps=algbw, busbw_GBps=busbw, wrong=wrong), error


@dataclass(frozen=True)
class ParsedRow:
    """A row with what the Row record does not hold: the printed tokens and the legacy error values."""

    row: Row
    tokens: tuple[str, ...]
    errors: tuple[float | None, ...]


def parse_row(text: str, layout: Layout, in_place: bool = True) -> ParsedRow:
    """Read one row; raise ValueError (with the reason) when it does not have the layout's columns.

    ``in_place`` says the table has in-place columns, so a row with only the out-of-place block is a row
    cut off, not a complete one.
    """
    tokens = text.split()
    n_measures = 2 if in_place else 1
    width = layout.measure_width
    expected = layout.n_head + width * n_measures
    if len(tokens) != expected:
        raise ValueError(f"expected {expected} columns, found {len(tokens)}")
    size, count = int(tokens[0]), int(tokens[1])
    redop = tokens[3] if layout.has_redop else "none"
    if _is_number(redop):
        raise ValueError(f"redop column holds a number ({redop!r})")
    root = int(tokens[layout.n_head - 1]) if layout.has_root else -1
    measures, errors = [], []
    for k in range(n_measures):
        start = layout.n_head + width * k
        m, e = _measure(tokens[start:start + width], layout)
        measures.append(m)
        errors.append(e)
    row = Row(size_bytes=size, count=count, type=tokens[2], redop=redop, root=root, oop=measures[0],
              ip=measures[1] if n_measures == 2 else None)
    return ParsedRow(row=row, tokens=tuple(tokens), errors=tuple(errors))


#: Metadata keys of the fixtures' leading comments.
METADATA_KEYS = ("source", "command", "nranks", "collective", "hardware", "format")
_METADATA = re.compile(r"^#\s*(" + "|".join(METADATA_KEYS) + r"):\s*(.*)$")
_PREAMBLE_FIELDS = (
    ("n_threads", r"nThread\s+(\d+)", int), ("n_gpus", r"nGpus\s+(\d+)", int),
    ("min_bytes", r"minBytes\s+(\d+)", int), ("max_bytes", r"maxBytes\s+(\d+)", int),
    ("step", r"step:\s*(\S+)", str), ("warmup_iters", r"warmup iters:\s*(\d+)", int),
    ("iters", r"(?<!warmup )(?<!agg )\biters:\s*(\d+)", int), ("agg_iters", r"agg iters:\s*(\d+)", int),
    ("validation", r"validation:\s*(\d+)", int), ("graph", r"graph:\s*(\d+)", int),
    ("unalign", r"unalign:\s*(\d+)", int),
)
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\b")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([-+0-9.eE]+|nan|inf)")


@dataclass
class Comments:
    """What the ``#`` lines said."""

    metadata: dict[str, str] = field(default_factory=dict)
    preamble: dict = field(default_factory=dict)
    ranks: list[int] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw_GBps: float | None = None
    texts: list[str] = field(default_factory=list)


def parse_preamble(text: str) -> dict:
    """The fields of a ``# nThread ...`` line, keyed as :func:`commlab.nccl.format.format_preamble` takes them.

    >>> parse_preamble("# nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20")
    {'n_threads': 1, 'n_gpus': 2, 'min_bytes': 8, 'max_bytes': 64, 'step': '2(factor)', 'warmup_iters': 5, 'iters': 20}
    """
    out = {}
    for key, pattern, kind in _PREAMBLE_FIELDS:
        match = re.search(pattern, text)
        if match:
            out[key] = kind(match.group(1))
    return out


def read_comment(text: str, into: Comments) -> None:
    """Record what one ``#`` line says in ``into``."""
    into.texts.append(text)
    match = _METADATA.match(text)
    if match:
        into.metadata.setdefault(match.group(1), match.group(2).strip())
        return
    if re.match(r"^#\s*nThread\s", text):
        into.preamble.update(parse_preamble(text))
        return
    match = _RANK.match(text)
    if match:
        into.ranks.append(int(match.group(1)))
        into.devices.append(text.lstrip("#").strip())
        return
    match = _OOB.match(text)
    if match:
        into.out_of_bounds = int(match.group(1))
        return
    match = _AVG.match(text)
    if match:
        into.avg_busbw_GBps = float(match.group(1))
