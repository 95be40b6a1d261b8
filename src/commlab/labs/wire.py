"""The messages between the grader and a student's sandbox: length-prefixed frames over a Unix socket.

A frame is a JSON header plus raw byte blobs (tensors and arrays travel as bytes, not as text). What comes
*from* a sandbox is decoded by :func:`decode` into plain values only: None, bool, int, float (NaN and the
infinities included), str, list, tuple, dict, set, numpy arrays of numeric dtypes, torch tensors, and the
dataclasses of the commlab package, rebuilt by their own constructors. Nothing the student sends is
unpickled or evaluated, so a returned object cannot carry its own ``__eq__`` (one that always says "equal")
or run code in the grader. What the grader sends *to* a sandbox may be pickled (:func:`pack_trusted`): the
arguments a check draws (topologies, models, regimes), which the student's process unpickles.

>>> decode(*split(encode(((1, 2.5), {"a": [None, True]}, {3: "x"}, float("nan"), {1, 2}))))[:3]
((1, 2.5), {'a': [None, True]}, {3: 'x'})
"""
from __future__ import annotations

import dataclasses
import json
import math
import socket
import struct
import sys

from commlab.errors import CommlabError

#: The largest frame either side accepts (a tensor of 64 M float32 elements and its header).
MAX_FRAME_BYTES = 256 * 2**20
#: The deepest nesting of lists, dicts and tuples a decoded value may have.
MAX_DEPTH = 64
#: numpy/torch dtypes that travel as bytes.
DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128")

_HEADER = struct.Struct("!Q")


def tensors_in(value, found: list | None = None) -> list:
    """Every torch tensor in ``value``, in the order the other side sees them: inside lists, tuples and dicts, a
    point-to-point op's tensor (torch's ``P2POp`` or the sandbox's), a module's parameters and buffers
    (``state_dict(keep_vars=True)``). Without torch loaded there can be none, and torch is not imported for it."""
    found = [] if found is None else found
    if "torch" not in sys.modules:
        return found
    import torch

    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            tensors_in(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            tensors_in(v, found)
    elif type(value).__name__ == "P2POp":
        found.append(value.tensor)
    elif isinstance(value, torch.nn.Module):
        found.extend(value.state_dict(keep_vars=True).values())
    return found


class WireError(CommlabError):
    """A frame or a value that breaks the rules of this module (too large, too deep, an unknown kind)."""


def _float(x: float):
    if math.isfinite(x):
        return x
    return {"$": "float", "v": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def _encode(value, blobs: list[bytes], depth: int):
    if depth > MAX_DEPTH:
        raise WireError(f"the value is nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -2**63 <= value < 2**63 else {"$": "bigint", "v": str(value)}
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_encode(v, blobs, depth + 1) for v in value]
        if isinstance(value, list):
            return items
        return {"$": type(value).__name__ if type(value) in (tuple, set, frozenset) else "tuple", "items": items}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: _encode(v, blobs, depth + 1) for k, v in value.items()}
        return {"$": "dict", "items": [[_encode(k, blobs, depth + 1), _encode(v, blobs, depth + 1)]
                                       for k, v in value.items()]}
    kind = type(value).__module__.split(".")[0]
    if kind == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            if value.dtype.name not in DTYPES:
                raise WireError(f"a numpy array of dtype {value.dtype} cannot be sent")
            blobs.append(np.ascontiguousarray(value).tobytes())
            return {"$": "ndarray", "dtype": value.dtype.name, "shape": list(value.shape), "blob": len(blobs) - 1}
        if isinstance(value, np.generic):
            return _encode(value.item(), blobs, depth)
    if kind == "torch":
        import torch

        if isinstance(value, torch.Tensor):
            t = value.detach().cpu().contiguous()
            name = str(t.dtype).removeprefix("torch.")
            if name not in DTYPES:
                raise WireError(f"a tensor of dtype {t.dtype} cannot be sent")
            raw = t.view(torch.uint8) if t.numel() and t.dtype != torch.bool else t
            blobs.append(raw.numpy().tobytes() if t.numel() else b"")
            return {"$": "tensor", "dtype": name, "shape": list(t.shape), "blob": len(blobs) - 1}
        if isinstance(value, torch.dtype):
            return {"$": "torch.dtype", "v": str(value).removeprefix("torch.")}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        fields = {f.name: _encode(getattr(value, f.name), blobs, depth + 1) for f in dataclasses.fields(value)
                  if f.init}
        return {"$": "dataclass", "cls": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    if hasattr(value, "name") and type(value).__name__ in ("RedOpType", "ReduceOp"):
        return {"$": "reduceop", "v": str(getattr(value, "name", value))}
    raise WireError(f"a value of type {type(value).__module__}.{type(value).__qualname__} cannot be sent back: "
                    "return plain values (numbers, strings, lists, tuples, dicts, arrays, tensors)")


def encode(value) -> bytes:
    """One frame's payload: the JSON header, then every blob."""
    blobs: list[bytes] = []
    header = json.dumps({"v": _encode(value, blobs, 0), "blobs": [len(b) for b in blobs]},
                        allow_nan=False).encode()
    return _HEADER.pack(len(header)) + header + b"".join(blobs)


def split(payload: bytes) -> tuple[dict, list[bytes]]:
    """The header and the blobs of a payload made by :func:`encode`."""
    if len(payload) < _HEADER.size:
        raise WireError("a frame shorter than its header")
    (n,) = _HEADER.unpack_from(payload)
    try:
        header = json.loads(payload[_HEADER.size:_HEADER.size + n])
        sizes = [int(s) for s in header["blobs"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise WireError(f"a frame whose header is not valid: {exc}") from None
    blobs, at = [], _HEADER.size + n
    for size in sizes:
        if size < 0 or at + size > len(payload):
            raise WireError("a frame whose blobs do not fit it")
        blobs.append(payload[at:at + size])
        at += size
    return header, blobs


def _dataclass(name: str, fields: dict):
    module, _, qualname = str(name).partition(":")
    if module != "commlab" and not module.startswith("commlab."):
        raise WireError(f"a dataclass of {module!r} cannot be received: only commlab's")
    cls = sys.modules.get(module)        # only a module the grader imported itself: nothing is imported here
    try:
        for part in qualname.split("."):
            cls = getattr(cls, part)
    except AttributeError:
        raise WireError(f"no dataclass {name!r} among the commlab modules the grader uses") from None
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise WireError(f"{name!r} is not a dataclass")
    try:
        return cls(**fields)
    except Exception as exc:  # noqa: BLE001 - the student's fields do not make the class: say so
        raise WireError(f"{cls.__qualname__}(...) rejects the fields sent: {type(exc).__name__}: {exc}") from None


def _decode(node, blobs: list[bytes], depth: int):
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_decode(v, blobs, depth + 1) for v in node]
    if not isinstance(node, dict):
        raise WireError(f"an unknown value {node!r}")
    kind = node.get("$")
    if kind is None:
        return {k: _decode(v, blobs, depth + 1) for k, v in node.items()}
    if kind in ("tuple", "set", "frozenset"):
        items = [_decode(v, blobs, depth + 1) for v in node["items"]]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[kind](items)
    if kind == "dict":
        return {_decode(k, blobs, depth + 1): _decode(v, blobs, depth + 1) for k, v in node["items"]}
    if kind == "float":
        return float(node["v"])
    if kind == "bigint":
        return int(node["v"])
    if kind in ("ndarray", "tensor"):
        return _array(kind, node, blobs)
    if kind == "torch.dtype":
        import torch

        if node["v"] not in DTYPES:
            raise WireError(f"an unknown dtype {node['v']!r}")
        return getattr(torch, node["v"])
    if kind == "reduceop":
        import torch.distributed as dist

        name = str(node["v"]).split(".")[-1]
        if name not in ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"):
            raise WireError(f"an unknown reduce op {name!r}")
        return getattr(dist.ReduceOp, name)
    if kind == "dataclass":
        fields = {str(k): _decode(v, blobs, depth + 1) for k, v in dict(node["fields"]).items()}
        return _dataclass(node["cls"], fields)
    raise WireError(f"an unknown kind of value {kind!r}")


def _array(kind: str, node: dict, blobs: list[bytes]):
    import numpy as np

    dtype, shape, raw = node["dtype"], tuple(int(s) for s in node["shape"]), blobs[int(node["blob"])]
    if dtype not in DTYPES or any(s < 0 for s in shape):
        raise WireError(f"an array of dtype {dtype!r} and shape {shape!r} cannot be received")
    if kind == "ndarray":
        if dtype == "bfloat16":
            raise WireError("a numpy array cannot be bfloat16")
        out = np.frombuffer(raw, dtype=dtype)
        if out.size != math.prod(shape):
            raise WireError(f"an array of shape {shape} with {out.size} elements")
        return out.reshape(shape).copy()
    import torch

    torch_dtype = getattr(torch, dtype)
    n = math.prod(shape)
    if n == 0:
        return torch.zeros(shape, dtype=torch_dtype)
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    if flat.numel() != n * torch.empty((), dtype=torch_dtype).element_size():
        raise WireError(f"a tensor of shape {shape} whose bytes do not match it")
    return flat.view(torch_dtype).reshape(shape).clone()


def decode(header: dict, blobs: list[bytes]):
    """The value of a frame, built from plain types only (see the module's docstring)."""
    try:
        return _decode(header["v"], blobs, 0)
    except WireError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, RecursionError) as exc:
        raise WireError(f"a value that does not follow the rules: {type(exc).__name__}: {exc}") from None


def tensor_from_bytes(dtype, shape: tuple, data: bytes, requires_grad: bool):
    """A tensor that :func:`pack_trusted` sent as its bytes (its own writable memory)."""
    import torch

    t = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape) if data else \
        torch.zeros(shape, dtype=dtype)
    return t.requires_grad_(requires_grad)


def _tensor_as_bytes(t):
    import torch

    whole = t.is_contiguous() and t.storage_offset() == 0 and t.untyped_storage().nbytes() == t.numel() * \
        t.element_size()
    if t.device.type != "cpu" or t.grad_fn is not None or not whole or str(t.dtype).removeprefix("torch.") \
            not in DTYPES or t.dtype == torch.bool:
        return t.__reduce_ex__(5)          # torch's own pickling
    raw = t.detach().view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return tensor_from_bytes, (t.dtype, tuple(t.shape), raw, t.requires_grad)


def pack_trusted(value) -> bytes:
    """The grader's arguments and answers for the student's process, pickled (only ever unpickled inside a
    sandbox). A CPU tensor that owns its whole storage travels as its bytes: torch's own pickling of a tensor
    saves and loads it through ``torch.save``, about 0.1 ms each way for a tensor of a few elements, which a
    ring step of the relay pays several times. Any other tensor (a view, one with a ``grad_fn``, a parameter)
    is pickled by torch. Neither way keeps two tensors that share memory sharing it on the other side."""
    import copyreg
    import io
    import pickle

    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    if "torch" in sys.modules:
        import torch

        pickler.dispatch_table = {**copyreg.dispatch_table, torch.Tensor: _tensor_as_bytes}
    pickler.dump(value)
    return out.getvalue()


# --- frames on a socket ---------------------------------------------------------------------------------------

def frame(kind: str, body: bytes) -> bytes:
    """One frame's bytes: its length, a one-letter kind ("J": an :func:`encode` payload, "P": pickled), the
    body. Frames written one after another on a stream are read back one by one (:func:`recv_frame`)."""
    return _HEADER.pack(len(body) + 1) + kind.encode()[:1] + body


def send_frame(sock: socket.socket, kind: str, body: bytes) -> None:
    """One frame (:func:`frame`) on ``sock``."""
    sock.sendall(frame(kind, body))


def _read(sock: socket.socket, n: int) -> bytes:
    parts, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def recv_frame(sock: socket.socket, accept: str = "J") -> tuple[str, bytes]:
    """The next frame's (kind, body); a frame larger than :data:`MAX_FRAME_BYTES` or of a kind not in
    ``accept`` is a :class:`WireError`."""
    (n,) = _HEADER.unpack(_read(sock, _HEADER.size))
    if not 1 <= n <= MAX_FRAME_BYTES:
        raise WireError(f"a frame of {n} bytes (the limit is {MAX_FRAME_BYTES})")
    kind = _read(sock, 1).decode("ascii", "replace")
    if kind not in accept:
        raise WireError(f"a frame of kind {kind!r} where {accept!r} was expected")
    return kind, _read(sock, n - 1)


def send_value(sock: socket.socket, value) -> None:
    send_frame(sock, "J", encode(value))


def recv_value(sock: socket.socket):
    """The next frame, decoded by :func:`decode` (the only way the grader reads what a sandbox sends)."""
    _, body = recv_frame(sock, "J")
    return decode(*split(body))
