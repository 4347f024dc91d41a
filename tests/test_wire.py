"""The plain-data protocol: round trips, and frames and values that lie.

Nothing here starts a worker: frames go through a real socketpair, values
through encode/decode. Whatever arrives, the trusted side gets plain Python
values and base-class numpy arrays, or a WireError/EOFError, and never
allocates what a frame merely declares.
"""
import json
import math
import socket
import struct
import threading
import tracemalloc

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker import wire
from checker.errors import WireError

PLAIN = (type(None), bool, int, float, str, list, tuple, dict, np.ndarray)


def trusted(value):
    obj, bufs = wire.encode(value)
    obj = json.loads(json.dumps(obj))  # exactly what the header carries
    return wire.decode_trusted(obj, [bytes(b) for b in bufs])


def assert_plain(v, depth=0):
    assert type(v) in PLAIN, type(v)
    if type(v) in (list, tuple):
        for x in v:
            assert_plain(x, depth + 1)
    elif type(v) is dict:
        for k, x in v.items():
            assert_plain(k, depth + 1)
            assert_plain(x, depth + 1)
    elif type(v) is np.ndarray:
        assert v.dtype.kind in "biuf"
        assert v.base is None or type(v.base) is np.ndarray


# --------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2**62, 1.5, -0.0, math.inf, "", "attention ∑ α", [], [1, [2, [3.5, None]]],
    (), (1, 2), [(1, 2), [3, 4]], ((1,), [2]), {"a": 1}, {1: "one", 2: [2.0]}, {(1, 2): "pair", None: 0},
    {"nested": {"t": (1, {"x": [True]})}},
])
def test_plain_values_round_trip(value):
    got, dtypes = trusted(value)
    assert got == value and type(got) is type(value) and dtypes == []
    assert_plain(got)


def test_tuples_stay_tuples_and_lists_stay_lists():
    got, _ = trusted({"shape": (3, 4), "list": [3, 4], "mixed": [(1,), [(2, [3])]]})
    assert type(got["shape"]) is tuple and type(got["list"]) is list
    assert type(got["mixed"][0]) is tuple and type(got["mixed"][1][0]) is tuple and type(got["mixed"][1][0][1]) is list


def test_nan_and_big_ints():
    got, _ = trusted([math.nan, 2**70])
    assert math.isnan(got[0]) and got[1] == float(2**70)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (0, 3), (2, 1, 3)])
def test_numpy_arrays_round_trip(dtype, shape):
    a = (np.arange(int(np.prod(shape))) % 7 - 3).reshape(shape).astype(dtype)
    got, dtypes = trusted(a)
    assert type(got) is np.ndarray and got.dtype == a.dtype and got.shape == shape
    np.testing.assert_array_equal(got, a)
    assert dtypes == [dtype]
    assert got.flags.writeable and got.flags.owndata


def test_zero_d_arrays_and_numpy_scalars():
    got, dtypes = trusted([np.array(2.5), np.float32(1.25), np.int64(-3), np.bool_(True)])
    assert [g.shape for g in got] == [()] * 4 and all(type(g) is np.ndarray for g in got)
    assert [g.item() for g in got] == [2.5, 1.25, -3, True]
    assert dtypes == ["float64", "float32", "int64", "bool"]


def test_numpy_scalar_dict_keys_arrive_as_the_numbers_they_equal():
    """itos = dict(zip(np.arange(3), chars)): the student's dict answers itos[2]; so does the one judged."""
    value = {np.int64(0): "a", np.uint8(1): "b", np.float32(2.5): "c", np.bool_(True): "d",
             (np.int32(1), np.int64(2)): "pair"}
    got, dtypes = trusted(value)
    assert got == {0: "a", 1: "d", 2.5: "c", (1, 2): "pair"} and dtypes == []  # True == 1, as in Python
    assert_plain(got)
    got, _ = trusted(dict(zip(np.arange(3), "xyz")))
    assert got == {0: "x", 1: "y", 2: "z"} and all(type(k) is int for k in got)


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="np.longdouble is float64 on this platform")
def test_longdouble_is_judged_by_its_values_as_float64():
    """A student who computes in np.longdouble gave correct values: they arrive as float64, not as an error."""
    got, dtypes = trusted([np.array([1.5, -2.25], dtype=np.longdouble), np.longdouble(0.125)])
    assert dtypes == ["float64", "float64"]
    assert got[0].tolist() == [1.5, -2.25] and got[1].item() == 0.125


def test_complex_arrays_are_refused_with_the_likely_cause():
    with pytest.raises(wire.EncodeError, match="square root or power of a negative number"):
        wire.encode(np.sqrt(np.array([-1.0 + 0j])))


def test_non_contiguous_and_fortran_arrays():
    a = np.arange(24.0).reshape(4, 6)
    for view in (a.T, a[::2, 1::3], np.asfortranarray(a), a[:, ::-1]):
        got, _ = trusted(view)
        np.testing.assert_array_equal(got, view)
        assert got.flags.c_contiguous


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32,
                                   torch.uint8, torch.bool, torch.bfloat16])
def test_torch_tensors_round_trip(dtype):
    t = (torch.arange(12) - 5).reshape(3, 4).to(dtype) / (3 if dtype.is_floating_point else 1)
    t = t.to(dtype)
    got, dtypes = trusted(t)
    assert type(got) is np.ndarray and got.shape == (3, 4)
    name = str(dtype).replace("torch.", "")
    assert dtypes == [name]
    if dtype == torch.bfloat16:
        assert got.dtype == np.float32  # exact widening
        np.testing.assert_array_equal(got, t.float().numpy())
    else:
        np.testing.assert_array_equal(got, t.numpy())
    # and back into a worker: the same torch dtype and bits
    obj, bufs = wire.encode(t)
    back = wire.decode_worker(json.loads(json.dumps(obj)), bufs)
    assert isinstance(back, torch.Tensor) and back.dtype == dtype and torch.equal(back, t)


def test_torch_specials():
    x = torch.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True) * 1
    got, _ = trusted({"size": torch.Size([2, 3]), "dtype": torch.float16, "max": torch.max(x, dim=0), "t": x})
    assert got["size"] == (2, 3) and got["dtype"] == "float16"
    assert type(got["max"]) is tuple and got["max"][1].tolist() == [1, 0]
    np.testing.assert_array_equal(got["t"], [[1.0, 5.0], [3.0, 2.0]])


def test_meta_tensors_reach_a_worker_but_not_the_trusted_side():
    obj, bufs = wire.encode(torch.empty(2, 3, device="meta"))
    back = wire.decode_worker(obj, bufs)
    assert back.device.type == "meta" and tuple(back.shape) == (2, 3)
    with pytest.raises(WireError, match="meta device"):
        wire.decode_trusted(obj, bufs)


def test_frames_through_a_socket():
    a, b = socket.socketpair()
    big = np.random.default_rng(0).standard_normal((700, 1000))  # 5.6 MB: more than a socket buffer
    obj, bufs = wire.encode({"x": big, "n": 3})
    sender = threading.Thread(target=wire.send_msg, args=(a, {"op": "call", "args": obj}, bufs))
    sender.start()
    header, rbufs = wire.recv_msg(b, timeout=10)
    sender.join()
    value, _ = wire.decode_trusted(header["args"], rbufs)
    np.testing.assert_array_equal(value["x"], big)
    assert value["n"] == 3
    a.close()
    with pytest.raises(EOFError):
        wire.recv_msg(b, timeout=1)
    b.close()


# --------------------------------------------------------------------------- what the sender cannot send

class AlwaysEqual(np.ndarray):
    def __eq__(self, other):
        return True

    def __array__(self, dtype=None, copy=None):
        return np.full(self.shape, 42.0)

    def tobytes(self, *a, **k):
        return b"\0" * self.nbytes

    def copy(self, *a, **k):
        return np.full(self.shape, 42.0)

    @property
    def T(self):
        return np.full(self.shape, 42.0)


def test_ndarray_subclass_is_sent_as_its_base_class_data():
    a = np.arange(6.0).reshape(2, 3).view(AlwaysEqual)
    got, _ = trusted([a, a[:, ::2]])
    assert all(type(g) is np.ndarray for g in got)
    np.testing.assert_array_equal(got[0], np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(got[1], [[0.0, 2.0], [3.0, 5.0]])
    assert not np.array_equal(got[0], np.zeros((2, 3)))


class LyingList(list):
    def __len__(self):
        return 0


class LyingDict(dict):
    pass


class LyingFloat(float):
    def __eq__(self, other):
        return True


class Liar:
    def __array__(self, dtype=None, copy=None):
        return np.zeros(3)

    def __float__(self):
        return 1.0

    def __len__(self):
        return 3


class LyingStr(str):
    def __str__(self):
        return "forged"

    def __eq__(self, other):
        return True


class LyingItems(dict):
    def items(self):
        return [("forged", 1)]

    def __iter__(self):
        return iter(["forged"])


def test_subclasses_of_plain_types_are_sent_as_their_base_class_data():
    """A student's OrderedDict, defaultdict, Counter, np.str_ keys or namedtuple is a right answer; what
    goes over the wire is the base-class data, so no override (the lies below) takes part."""
    import collections
    Pair = collections.namedtuple("Pair", "stoi itos")
    value = Pair(collections.OrderedDict(a=0, b=1), [np.str_("a"), LyingStr("b")])
    got, _ = trusted([value, collections.defaultdict(int, x=2), LyingList([1, 2]), LyingItems(k=3),
                      LyingFloat(0.5), np.array(["a", "bc"]), np.str_("z")])
    assert got == [({"a": 0, "b": 1}, ["a", "b"]), {"x": 2}, [1, 2], {"k": 3}, 0.5, ["a", "bc"], "z"]
    assert_plain(got)


@pytest.mark.parametrize("value", [
    Liar(), object(), b"bytes", {1, 2}, 1j,
    np.array([1, "x"], dtype=object), np.array([1 + 2j]), torch.tensor([1 + 1j]),
    [1, [2, Liar()]], {"k": Liar()}, np.array(["2020-01-01"], dtype="datetime64[D]"),
])
def test_values_that_are_not_plain_data_are_refused(value):
    with pytest.raises(wire.EncodeError):
        wire.encode(value)


def test_too_deep_values_are_refused():
    v = []
    for _ in range(wire.MAX_DEPTH + 5):
        v = [v]
    with pytest.raises(wire.EncodeError, match="nested"):
        wire.encode(v)


def test_lists_the_receiver_would_refuse_are_refused_by_the_sender():
    # a huge nested list used to be built into one 16 MiB+ JSON header and rejected as "frame header too large"
    n = wire.MAX_ITEMS
    rows = [[0.5] * 1000 for _ in range(n // 1000)]  # n numbers + n/1000 rows: over the limit
    with pytest.raises(wire.EncodeError, match="return an array"):
        wire.encode(rows)
    with pytest.raises(wire.EncodeError, match="return an array"):
        wire.encode({i: i for i in range(n // 2)})
    flat = [0.5] * (n - 1)  # the largest list both sides accept: n - 1 numbers and the list itself
    obj, bufs = wire.encode(flat)
    assert wire.decode_trusted(obj, bufs)[0] == flat
    with pytest.raises(wire.EncodeError):
        wire.encode(flat + [0.5])


def test_max_bytes_refuses_before_copying():
    huge = np.broadcast_to(np.zeros(1), (2**31,))  # 16 GiB of values, 8 bytes of memory
    tracemalloc.start()
    try:
        with pytest.raises(wire.EncodeError, match="more data than the grader accepts"):
            wire.encode({"a": [np.zeros(10), huge]}, max_bytes=2**20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    obj, bufs = wire.encode(np.zeros(100), max_bytes=800)
    assert sum(len(b) for b in bufs) == 800


# --------------------------------------------------------------------------- malformed frames

def _frame(header_bytes, buffers=(), nbuf=None, magic=wire.MAGIC):
    out = magic + struct.pack("!II", len(header_bytes), len(buffers) if nbuf is None else nbuf) + header_bytes
    for declared, data in buffers:
        out += struct.pack("!Q", declared) + data
    return out


def _recv(raw, close=True, **kw):
    a, b = socket.socketpair()
    try:
        a.sendall(raw)
        if close:
            a.close()
        return wire.recv_msg(b, timeout=2, **kw)
    finally:
        a.close()
        b.close()


def test_a_good_frame_parses():
    header, bufs = _recv(_frame(b'{"ok": true}', [(3, b"abc")]))
    assert header == {"ok": True} and bytes(bufs[0]) == b"abc"


@pytest.mark.parametrize("raw, error", [
    (_frame(b"{}", magic=b"HWC2"), "magic"),
    (b"GET / HTTP/1.1\r\n\r\n", "magic"),
    (wire.MAGIC + struct.pack("!II", wire.MAX_HEADER + 1, 0), "too large"),
    (wire.MAGIC + struct.pack("!II", 2, 5000) + b"{}", "too large"),
    (_frame(b"{not json"), "bad frame header"),
    (_frame(b"[1, 2]"), "not an object"),
    (_frame(b"[" * 100_000 + b"]" * 100_000), "bad frame header"),
    (_frame(b'{"n": ' + b"9" * 5000 + b"}"), "bad frame header"),
    (_frame(b"{}", [(2**40, b"")]), "larger than"),
    (_frame(b"{}", [(2**63, b"")]), "larger than"),
    (_frame(b"{}", [(600, b"x" * 600), (2**30, b"")], ), "larger than"),
])
def test_malformed_frames_raise_wire_error(raw, error):
    with pytest.raises(WireError, match=error):
        _recv(raw, max_total=2**30)


@pytest.mark.parametrize("raw", [
    b"",
    wire.MAGIC[:2],
    wire.MAGIC + struct.pack("!II", 100, 0) + b"{}",                 # header length lies
    _frame(b"{}", [(10, b"abc")]),                                    # buffer length lies
    _frame(b"{}", [(3, b"abc")], nbuf=2),                              # buffer count lies
])
def test_truncated_frames_raise_eof(raw):
    with pytest.raises(EOFError):
        _recv(raw)


@pytest.mark.parametrize("header", [b'{"ok": true}', b'{"ok": true, "id": 8}', b'{"ok": true, "id": "7"}',
                                    b'{"ok": true, "id": 7.0}', b'{"ok": true, "id": true}'])
def test_a_frame_for_another_call_is_refused_before_its_buffers(header):
    """A reply must echo its request's call id exactly: anything else was written by someone else."""
    with pytest.raises(wire.ChannelTampered):
        _recv(_frame(header, [(2**40, b"")]), close=False, call_id=7)  # its 1 TiB buffer is never waited for


def test_a_frame_for_this_call_is_read():
    header, bufs = _recv(_frame(b'{"ok": true, "id": 7}', [(3, b"abc")]), call_id=7)
    assert header["id"] == 7 and bytes(bufs[0]) == b"abc"


def test_oversized_frames_are_refused_before_reading():
    with pytest.raises(wire.FrameTooLarge):
        _recv(_frame(b"{}", [(2**20 + 1, b"")]), close=False, max_total=2**20)


def test_declared_sizes_are_never_allocated():
    """A frame that declares 900 MB (under the cap) and sends 10 bytes costs about 10 bytes."""
    tracemalloc.start()
    try:
        with pytest.raises(EOFError):
            _recv(_frame(b"{}", [(900 * 2**20, b"x" * 10)]))
        with pytest.raises(EOFError):
            _recv(wire.MAGIC + struct.pack("!II", wire.MAX_HEADER, 0) + b"{")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20, peak


def test_a_silent_sender_times_out():
    a, b = socket.socketpair()
    a.sendall(_frame(b"{}")[:7])
    with pytest.raises(TimeoutError):
        wire.recv_msg(b, timeout=0.2)
    a.close()
    b.close()


# --------------------------------------------------------------------------- malformed values

def _spec(**kw):
    base = {"$array": 0, "dtype": "float64", "shape": [2], "kind": "numpy", "device": "cpu"}
    base.update(kw)
    return base


@pytest.mark.parametrize("obj, bufs, error", [
    (_spec(), [b"\0" * 15], "do not match"),                        # buffer/shape mismatch
    (_spec(shape=[3]), [b"\0" * 16], "do not match"),
    (_spec(shape=[2**40, 2**40]), [b"\0" * 16], "do not match"),    # huge declared shape, tiny buffer
    (_spec(shape=[-2]), [b"\0" * 16], "shape"),
    (_spec(shape=[2.0]), [b"\0" * 16], "shape"),
    (_spec(shape="2"), [b"\0" * 16], "shape"),
    (_spec(shape=[1] * 17), [b"\0" * 8], "shape"),
    (_spec(dtype="object"), [b"\0" * 16], "unknown dtype"),
    (_spec(dtype="complex128"), [b"\0" * 32], "unknown dtype"),
    (_spec(dtype=None), [b"\0" * 16], "unknown dtype"),
    (_spec(shape=[0, 2**62]), [b""], "bad array spec"),             # no bytes, a shape numpy cannot make
    (_spec(shape=[0, 2**62, 2**62]), [b""], "bad array spec"),
    (_spec(**{"$array": 1}), [b"\0" * 16], "out of range"),
    (_spec(**{"$array": -1}), [b"\0" * 16], "out of range"),
    (_spec(**{"$array": True}), [b"\0" * 16], "out of range"),
    ({"$array": 0}, [b"\0" * 16], "bad array spec"),
    ({"$what": 1}, [], "unknown object"),
    ({"$dict": [[[1, 2], 3]]}, [], "hashable"),
    ({"$dict": [[1, 2, 3]]}, [], "bad dict item"),
    ({"$meta": [2, 3], "dtype": "float32"}, [], "meta device"),
])
def test_malformed_values_raise_wire_error(obj, bufs, error):
    with pytest.raises(WireError, match=error):
        wire.decode_trusted(obj, bufs)


def test_deep_and_wide_values_are_refused():
    v = 1
    for _ in range(wire.MAX_DEPTH + 2):
        v = [v]
    with pytest.raises(WireError, match="deeply"):
        wire.decode_trusted(v, [])
    with pytest.raises(WireError, match="too many"):
        wire.decode_trusted([0] * (wire.MAX_ITEMS + 1), [])


# --------------------------------------------------------------------------- whatever arrives

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5))
array_spec = st.fixed_dictionaries({
    "$array": st.integers(-1, 3), "dtype": st.sampled_from(sorted(wire.DTYPES) + ["object", "x"]),
    "shape": st.lists(st.integers(-1, 4), max_size=3), "kind": st.sampled_from(["numpy", "torch", "?"]),
    "device": st.sampled_from(["cpu", "cuda"])})
json_value = st.recursive(
    st.one_of(json_leaf, array_spec),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["$tuple", "$dict", "$meta", "a", "dtype"]), inner, max_size=3),
        st.builds(lambda xs: {"$tuple": xs}, st.lists(inner, max_size=3)),
        st.builds(lambda ps: {"$dict": ps}, st.lists(st.lists(inner, min_size=2, max_size=2), max_size=3)),
    ),
    max_leaves=20)
buffers = st.lists(st.binary(max_size=64), max_size=4)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_value, buffers)
def test_decode_trusted_returns_only_plain_data(obj, bufs):
    try:
        value, dtypes = wire.decode_trusted(obj, bufs)
    except WireError:
        return
    assert_plain(value)
    assert all(type(d) is str for d in dtypes)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_parse_into_anything_else(raw):
    try:
        header, bufs = _recv(wire.MAGIC + raw if raw[:1] == b"\0" else raw)
    except (WireError, EOFError):
        return
    assert type(header) is dict


def test_zero_dim_bfloat16_decodes_to_a_plain_array():
    # found by the property test above: a 0-d bfloat16 array came back as a numpy scalar
    value, dtypes = wire.decode_trusted({"$array": 0, "dtype": "bfloat16", "shape": [], "kind": "torch",
                                    "device": "cpu"}, [b"\x80\x3f"])
    assert type(value) is np.ndarray and value.shape == () and value == 1.0 and dtypes == ["bfloat16"]
