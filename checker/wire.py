"""Plain-data messages between the trusted side and a worker, never pickle.

What it is for: framing a message on a socket (a JSON header plus raw byte
buffers) and turning values into that form and back. Arrays travel as raw
bytes with dtype, shape, kind (numpy or torch) and device. Decoding on the
trusted side is strict: a value is rebuilt only from JSON and validated
bytes, and arrays come back as plain `numpy.ndarray` (never a subclass).

What it is not: a general serializer. Only None, bool, int, float, str,
lists, tuples, dicts, numpy arrays/scalars and torch tensors cross. Subclasses
of list/tuple/dict/int/float/str are refused (their methods could lie); an
ndarray subclass is sent as the base-class array holding the same values. A
tensor on the meta device (a shape, no values) reaches a worker as a meta
tensor and is refused by `decode_trusted`.

Receiving never trusts a declared length: buffers grow as bytes actually
arrive, so a lying frame costs at most what was really sent. Nor does it parse
whatever header arrives: the header's bytes count against the frame's bound
(`max_total`), and a header with more JSON values than an answer the encoder
sends (MAX_HEADER_VALUES, counted before parsing) is refused unparsed.

Frame: b"HWC1" | u32 header length | u32 buffer count | header JSON |
(u64 length | bytes) per buffer.

Every request carries a call id ("id") that its reply, and every event sent
while answering it, must echo: `recv_msg(..., call_id=...)` refuses a frame
with another id (`ChannelTampered`) after reading its header and before its
buffers. Student code can write to the worker's end of the socket (a
descriptor is a number), so a frame the trusted side did not ask for ends
that worker; it is never read as the answer of a later call.

Asks sent together (checker.running.together): the trusted side may write several
requests before reading the first reply; the worker reads and answers them
one at a time, in order, as always, and each reply echoes its own request's
id. A request may carry "after": the id of the request just before it; the
worker then runs it only if that one was answered ok, and otherwise answers
{"ok": false, "error": {"type": "NotRun"}} without running it. A module
request's "handle" may be {"made_by": id}: the module made by that earlier
"new" request of the same worker.
"""

import json
import math
import socket
import struct
import time

import numpy as np

from checker.errors import WireError

__all__ = [
    "MAX_HEADER", "MAX_HEADER_VALUES", "MAX_TOTAL", "EncodeError", "FrameTooLarge", "ChannelTampered", "send_msg", "recv_msg", "frame",
    "encode", "decode_trusted", "decode_worker", "DTYPES", "CHANNEL_LOST_EXIT",
]

# A worker whose reply could not be sent (its end of the socket is gone: student code closed file
# descriptors it did not open) exits with this code, so the trusted side can say so.
CHANNEL_LOST_EXIT = 86

MAGIC = b"HWC1"
MAX_HEADER = 16 * 1024 * 1024
MAX_TOTAL = 1024 * 1024 * 1024
MAX_DEPTH = 32
MAX_ITEMS = 1_000_000
# Of one header, `{`, `[` and `,` bytes, counted before it is parsed: every JSON value but the first follows one
# (a key and its value follow one), and parsing costs 40 to 130 bytes a value whatever the header's length (16 MiB
# of `[],` cost the trusted side 275 MB). The encoder stops at MAX_ITEMS items, and an item encodes to at most
# 1.5 of these bytes: a list's element its comma; a dict's pair, two items, `[k,v],`; a tuple `{"$tuple":[` and
# its elements' commas; an array's spec some twenty, but a frame carries at most 4096 arrays; the output kept,
# 64 K characters. Only a value of nothing but empty lists or tuples, by the hundred thousand, needs more.
MAX_HEADER_VALUES = MAX_ITEMS * 3 // 2

# dtype name -> the numpy dtype of its bytes on the wire (bfloat16 travels as raw uint16 bit patterns)
DTYPES = {
    "bool": np.dtype(np.bool_), "uint8": np.dtype(np.uint8), "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16), "int32": np.dtype(np.int32), "int64": np.dtype(np.int64),
    "float16": np.dtype(np.float16), "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64), "bfloat16": np.dtype(np.uint16),
}


class EncodeError(ValueError):
    """A value cannot be sent as plain data."""


class FrameTooLarge(WireError):
    """A frame declares more bytes than the receiver accepts (nothing of it was read)."""


class ChannelTampered(WireError):
    """A frame that answers no request of the trusted side (another call id, or none): something else wrote
    to the worker's socket, so nothing more read from it can be matched to a call."""


# ---------------------------------------------------------------- framing

def frame(header, buffers=()):
    """The bytes of one frame (see the module's docstring), to write with others in one sendall."""
    head = json.dumps(header, allow_nan=True).encode()
    parts = [MAGIC, struct.pack("!II", len(head), len(buffers)), head]
    for b in buffers:
        parts.append(struct.pack("!Q", len(b)))
        parts.append(b)
    return b"".join(parts)


def send_msg(sock, header, buffers=()):
    head = json.dumps(header, allow_nan=True).encode()
    parts = [MAGIC, struct.pack("!II", len(head), len(buffers)), head]
    for b in buffers:
        parts.append(struct.pack("!Q", len(b)))
        parts.append(b)
    small = b"".join(p for p in parts if len(p) < (1 << 16))
    if len(small) == sum(len(p) for p in parts):
        sock.sendall(small)
    else:
        for p in parts:
            sock.sendall(p)


_CHUNK = 1 << 20


def _recv_exact(sock, n, deadline):
    """Read exactly n bytes. Memory grows with the bytes received, never with n itself."""
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out waiting for the worker")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            chunk = sock.recv(min(n - len(buf), _CHUNK))
        except socket.timeout:
            raise TimeoutError("timed out waiting for the worker") from None
        if not chunk:
            raise EOFError("the worker closed its end")
        buf += chunk
    return buf


def recv_msg(sock, timeout=None, max_total=MAX_TOTAL, call_id=None):
    """Read one frame; raise TimeoutError, EOFError, or WireError when malformed.

    With `call_id`, a frame whose header does not carry exactly that "id" raises ChannelTampered before
    any of its buffers is read; with `max_total`, one whose header and buffers add up to more raises
    FrameTooLarge before the header, or the buffer that crosses it, is read. A header holding more JSON
    values than MAX_HEADER_VALUES raises WireError before it is parsed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pre = _recv_exact(sock, 12, deadline)
    if pre[:4] != MAGIC:
        raise WireError("bad frame magic")
    hlen, nbuf = struct.unpack("!II", pre[4:])
    if hlen > MAX_HEADER or nbuf > 4096:
        raise WireError("frame header too large")
    if hlen > max_total:
        raise FrameTooLarge(f"the answer is larger than the {_size(max_total)} one answer may be")
    header = _header(_recv_exact(sock, hlen, deadline))
    if not isinstance(header, dict):
        raise WireError("frame header is not an object")
    if call_id is not None and (type(header.get("id")) is not int or header.get("id") != call_id):
        raise ChannelTampered("a message that answers no request of the grader's (another call id, or none)")
    buffers, total = [], hlen
    for _ in range(nbuf):
        (blen,) = struct.unpack("!Q", _recv_exact(sock, 8, deadline))
        total += blen
        if total > max_total:
            raise FrameTooLarge(f"the answer is larger than the {_size(max_total)} one answer may be")
        buffers.append(_recv_exact(sock, blen, deadline))
    return header, buffers


def _header(raw):
    """A frame's header parsed, its values counted first (MAX_HEADER_VALUES); raises WireError. The raw bytes
    are never left in an error's traceback: a failure is kept (in a scorecard's report), and each refused
    16 MiB header stayed in memory with it."""
    values = raw.count(b"{") + raw.count(b"[") + raw.count(b",")
    error = None
    if values > MAX_HEADER_VALUES:
        error = (f"it holds more values than the grader reads in one answer (about {values:,} JSON values; at "
                 f"most {MAX_HEADER_VALUES:,}): return an array (np.array / torch.tensor) instead of nested lists")
    else:
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as e:
            error = f"bad frame header: {str(e)[:200]}"
    del raw
    raise WireError(error)


def _size(n):
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


# ---------------------------------------------------------------- encoding

class _Budget:
    def __init__(self, max_bytes):
        self.max = self.left = max_bytes
        self.items = 0

    def item(self, n=1):
        """Count list/tuple entries and dict keys and values: the receiver reads at most MAX_ITEMS values
        (these plus the outermost one), so stop before building an answer it would refuse."""
        self.items += n
        if self.items >= MAX_ITEMS:
            raise EncodeError(f"the value holds more than {MAX_ITEMS:,} numbers in (nested) lists, more than "
                              "the grader reads in one answer; return an array (np.array / torch.tensor) instead")

    def take(self, nbytes):
        if self.left is None:
            return
        self.left -= nbytes
        if self.left < 0:
            raise EncodeError(f"the value holds more data than the grader accepts in one answer "
                              f"(at most {_size(self.max)}); an array of {_size(nbytes)} did not fit")


def encode(value, max_bytes=None):
    """Return (json_obj, buffers) for a plain value; raise EncodeError otherwise.

    Buffers are bytes-like (memoryviews of private copies). With `max_bytes`,
    a value holding more array data is refused before anything is copied.
    """
    buffers = []
    return _enc(value, buffers, 0, _Budget(max_bytes)), buffers


def _enc(v, bufs, depth, budget=None):
    if budget is None:
        budget = _Budget(None)
    if depth > MAX_DEPTH:
        raise EncodeError("value nested too deeply")
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v if abs(v) < 2**63 else float(v)
    if t is float:
        return v
    if t is list:
        budget.item(len(v))
        return [_enc(x, bufs, depth + 1, budget) for x in v]
    if t is tuple:
        budget.item(len(v))
        return {"$tuple": [_enc(x, bufs, depth + 1, budget) for x in v]}
    if t is dict:
        budget.item(2 * len(v))
        return {"$dict": [[_enc(k, bufs, depth + 1, budget), _enc(x, bufs, depth + 1, budget)]
                          for k, x in v.items()]}
    if isinstance(v, np.generic) and not isinstance(v, np.ndarray):
        return _enc_array(np.asarray(v), bufs, "numpy", "cpu", budget)
    if isinstance(v, np.ndarray):
        return _enc_array(v, bufs, "numpy", "cpu", budget)
    mod = getattr(t, "__module__", "") or ""
    if mod.startswith("torch"):
        import torch
        if isinstance(v, torch.Size):
            return {"$tuple": [int(x) for x in v]}
        if isinstance(v, torch.Tensor):
            return _enc_tensor(v, bufs, budget)
        if isinstance(v, torch.dtype):
            return str(v).replace("torch.", "")
    if isinstance(v, (list, tuple)) and t.__module__ == "torch.return_types":
        return {"$tuple": [_enc(x, bufs, depth + 1, budget) for x in v]}
    # Subclasses of the plain types (OrderedDict, defaultdict, Counter, a namedtuple, np.str_, an IntEnum) are
    # answers too: read through the base class's own methods, so no override of the subclass takes part.
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, int):
        return _enc(int.__int__(v), bufs, depth, budget)
    if isinstance(v, float):
        return float.__float__(v)
    if isinstance(v, dict):
        return _enc(dict(dict.items(v)), bufs, depth, budget)
    if isinstance(v, list):
        return _enc(list(list.__iter__(v)), bufs, depth, budget)
    if isinstance(v, tuple):
        return _enc(tuple(tuple.__iter__(v)), bufs, depth, budget)
    raise EncodeError(f"a value of type {t.__module__}.{t.__qualname__} is not plain data "
                      "(expected a number, a numpy array, a torch tensor or a nested list)")


def _as_buffer(a):
    """A bytes-like view of a C-contiguous array that this module owns."""
    return memoryview(a.reshape(-1).view(np.uint8))


def _enc_array(a, bufs, kind, device, budget=None):
    # the base-class view of the same memory: no method of a subclass takes part from here on
    base = np.ndarray.view(a, np.ndarray) if isinstance(a, np.ndarray) else np.asarray(a)
    if base.dtype.kind == "f" and base.dtype.itemsize > 8:  # np.longdouble: judged by its values, as float64
        base = base.astype(np.float64)
    name = base.dtype.name
    if base.dtype.kind == "U":  # characters (np.unique of a text): a nested list of str, as .tolist() gives
        if budget is not None:
            budget.take(int(base.nbytes))
        return _enc(np.array(base, copy=True, subok=False).tolist(), [], 0, budget)
    if name not in DTYPES or name == "bfloat16":
        if base.dtype.kind == "c":
            raise EncodeError(f"arrays of dtype {name} (complex numbers) are not supported: the answers are real, "
                              "so a complex value usually comes from the square root or power of a negative number")
        if base.dtype.kind == "f":
            raise EncodeError(f"arrays of dtype {name} are not supported")
        raise EncodeError(f"arrays of dtype {name} are not numbers (object/str arrays are not plain data)")
    if budget is not None:
        budget.take(int(base.nbytes))
    a = np.array(base, copy=True, subok=False, order="C")  # own the memory
    bufs.append(_as_buffer(a))
    return {"$array": len(bufs) - 1, "dtype": name, "shape": list(a.shape), "kind": kind, "device": device}


def _enc_tensor(t, bufs, budget=None):
    import torch
    t = t.detach()
    device = str(t.device)
    if t.device.type == "meta":
        return {"$meta": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
    if t.is_sparse or t.is_complex() or getattr(t, "is_quantized", False):
        raise EncodeError(f"tensors of layout/dtype {t.layout}/{t.dtype} are not supported")
    if budget is not None:
        budget.take(t.numel() * t.element_size())
    t = t.to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        bufs.append(_as_buffer(t.view(torch.int16).numpy().copy()))
        return {"$array": len(bufs) - 1, "dtype": "bfloat16", "shape": list(t.shape),
                "kind": "torch", "device": device}
    spec = _enc_array(t.numpy(), bufs, "torch", device)
    return spec


# ---------------------------------------------------------------- decoding

def _array_from(spec, bufs):
    try:
        idx = spec["$array"]
        name = spec["dtype"]
        shape = spec["shape"]
        if type(idx) is not int or not 0 <= idx < len(bufs):
            raise WireError("array buffer index out of range")
        if name not in DTYPES:
            raise WireError(f"unknown dtype {name!r}")
        if type(shape) is not list or not all(type(s) is int and s >= 0 for s in shape) or len(shape) > 16:
            raise WireError("bad array shape")
        dt = DTYPES[name]
        n = math.prod(shape)
        buf = bufs[idx]
        if n * dt.itemsize != len(buf):
            raise WireError("array bytes do not match its shape and dtype")
        arr = np.frombuffer(buf, dtype=dt).reshape(shape).copy()
        return name, arr
    except (KeyError, TypeError, ValueError, OverflowError) as e:  # a shape numpy cannot make: [0, 2**62]
        raise WireError(f"bad array spec: {str(e)[:200]}") from None


def bf16_to_float32(raw_uint16):
    """Exact widening of bfloat16 bit patterns (as uint16) to float32."""
    wide = np.array(raw_uint16, dtype=np.uint32)  # an array even when 0-d (a shift would give a scalar)
    wide <<= 16
    return wide.view(np.float32)


class _Counter:
    def __init__(self):
        self.n = 0

    def tick(self):
        self.n += 1
        if self.n > MAX_ITEMS:
            raise WireError("value has too many items")


def decode_trusted(obj, bufs):
    """Rebuild a value on the trusted side: plain Python and base-class numpy only.

    The result holds only None, bool, int, float, str, list, tuple, dict and
    base-class `numpy.ndarray`s built from validated bytes. bfloat16 arrays
    come back as float32 (exact). Returns (value, dtypes) where dtypes lists
    the original dtype names of arrays in order of appearance.
    """
    dtypes = []
    return _dec(obj, bufs, 0, _Counter(), dtypes, worker=False), dtypes


def decode_worker(obj, bufs):
    """Rebuild a value in the worker: torch kind becomes a torch tensor on its device."""
    return _dec(obj, bufs, 0, _Counter(), [], worker=True)


def _dec(o, bufs, depth, counter, dtypes, worker):
    counter.tick()
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    t = type(o)
    if o is None or t in (bool, int, float, str):
        return o
    if t is list:
        return [_dec(x, bufs, depth + 1, counter, dtypes, worker) for x in o]
    if t is dict:
        if "$array" in o:
            name, arr = _array_from(o, bufs)
            dtypes.append(name)
            if worker and o.get("kind") == "torch":
                return _to_torch(name, arr, o.get("device", "cpu"))
            if name == "bfloat16":
                return bf16_to_float32(arr)
            return arr
        if "$tuple" in o and type(o["$tuple"]) is list:
            return tuple(_dec(x, bufs, depth + 1, counter, dtypes, worker) for x in o["$tuple"])
        if "$dict" in o and type(o["$dict"]) is list:
            out = {}
            for pair in o["$dict"]:
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("bad dict item")
                # a numpy scalar key (dict(zip(np.arange(n), ...)), alone or in a tuple): the Python number
                # it equals, as in the student's own dict (np.int64(2) == 2, the same hash)
                k = _scalar_keys(_dec(pair[0], bufs, depth + 1, counter, [], worker))
                if type(k) not in (str, int, float, bool, tuple) and k is not None:
                    raise WireError("dict key is not hashable plain data")
                try:
                    hash(k)  # a tuple key holding a list or an array
                except TypeError:
                    raise WireError("dict key is not hashable plain data") from None
                out[k] = _dec(pair[1], bufs, depth + 1, counter, dtypes, worker)
            return out
        if "$meta" in o:
            shape = o["$meta"]
            if type(shape) is not list or len(shape) > 16 or not all(type(s) is int and s >= 0 for s in shape):
                raise WireError("bad meta shape")
            if not worker:
                raise WireError(f"a tensor of shape {tuple(shape)} on the meta device (it has a shape "
                                "but no values)")
            return _meta_tensor(shape, str(o.get("dtype")))
        raise WireError("unknown object in message")
    raise WireError(f"unexpected JSON value of type {t.__name__}")


def _scalar_keys(k):
    if type(k) is np.ndarray and k.ndim == 0 and k.dtype.kind in "biuf":
        return k.item()
    if type(k) is tuple:
        return tuple(_scalar_keys(x) for x in k)
    return k


def _meta_tensor(shape, dtype):
    import torch
    dt = getattr(torch, dtype, None)
    if not isinstance(dt, torch.dtype):
        raise WireError(f"unknown dtype {dtype!r}")
    return torch.empty(shape, dtype=dt, device="meta")


def _to_torch(name, arr, device):
    import torch
    if name == "bfloat16":
        t = torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(arr)
    return t.to(device) if device != "cpu" else t
