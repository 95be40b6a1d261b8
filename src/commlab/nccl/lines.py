"""Split an nccl-tests log into classified lines: launcher prefixes and Windows line ends removed.

Real logs arrive wrapped: ``mpirun --tag-output`` puts ``[1,0]<stdout>:`` before every line, ``srun -l`` puts
``0: ``, torchrun ``[default0]:`` or ``[rank0]:``, pdsh ``host: ``; NCCL_DEBUG=INFO interleaves ``NCCL INFO``
lines; a README may elide rows with ``...``. :func:`classify` says what each line is so that the table reader
only sees rows, the comments it understands, and what it must report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

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
