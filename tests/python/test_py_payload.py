"""vh5.decode_payload against independent decoders (cbor2, msgpack, numpy).

Every shared test vector (../shared/data/payloads) and random messages built with cbor2 /
msgpack are decoded both by vh5 and by a reference written here with cbor2 + numpy; values
are compared bit for bit (byte order included), counts as int64, masks, zero-copy and the
lifetime of the caller's buffer.
"""

import gc
import json
import os
import re
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

import vh5  # noqa: E402
from vh5.compat.pyactivestorage import decode_result  # noqa: E402

cbor2 = pytest.importorskip("cbor2")
msgpack = pytest.importorskip("msgpack")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SHARED = Path(os.environ.get("VH5_SHARED_DATA", REPO.parent / "shared" / "data"))
PAYLOADS = SHARED / "payloads"
NATIVE = sys.byteorder


def need_shared():
    if not PAYLOADS.is_dir():
        pytest.skip(f"shared payload vectors not found at {PAYLOADS} (set VH5_SHARED_DATA)")


# ----------------------------------------------------------------------------- reference


def _flatten(x):
    if isinstance(x, list):
        out = []
        for v in x:
            out.extend(_flatten(v))
        return out
    return [x]


def reference_reductionist(body: bytes):
    """Independent decoding of a Reductionist CBOR body with cbor2 + numpy.

    Returns (values as a C-order array with the wire byte order, count array or None,
    shape or None when the message has no shape at all)."""
    m = cbor2.loads(body)
    order = "<" if m.get("byte_order", "little") == "little" else ">"
    dt = np.dtype(m["dtype"]).newbyteorder(order)
    sab = m.get("shape_as_bytes", b"")
    if sab:
        shape = tuple(int(v) for v in np.frombuffer(sab, dtype=order + "u8"))
    elif "shape" in m:
        shape = tuple(m["shape"])
    else:
        shape = None
    flat = np.frombuffer(m["bytes"], dtype=dt)
    values = flat.reshape(shape if shape is not None else -1)
    cab = m.get("count_as_bytes", b"")
    if cab:
        count = np.frombuffer(cab, dtype=order + "i8").astype(np.int64)
    elif "count" in m:
        count = np.asarray(_flatten(m["count"]), dtype=np.int64).reshape(-1)
        if count.size == 0:
            count = None  # an empty count (Reductionist's [] next to count_as_bytes) is none
    else:
        count = None
    return values, count, shape


def assert_same_array(got: np.ndarray, want: np.ndarray):
    """Same shape, same dtype (byte order included), same bits."""
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.tobytes(order="C") == want.tobytes(order="C")


def assert_zero_copy(p: vh5.Payload, buf):
    raw = np.frombuffer(buf, dtype=np.uint8)
    if p.data.size:
        assert np.shares_memory(p.data, raw), "data is a copy, not a view of the buffer"
        addr = p.data.__array_interface__["data"][0]
        assert addr - raw.__array_interface__["data"][0] == p.data_offset
    # the base chain ends at the caller's object
    b = p.data
    while isinstance(b, np.ndarray):
        b = b.base
    if isinstance(b, memoryview):
        b = b.obj
    assert b is buf


# ----------------------------------------------------------------------------- shared vectors


def load_vectors():
    path = PAYLOADS / "reductionist_vectors.json"
    if not path.exists():
        return []
    return list(json.loads(path.read_text()).items())


VECTORS = load_vectors()


@pytest.mark.parametrize("name,vec", VECTORS or [("absent", None)], ids=[v[0] for v in VECTORS] or ["absent"])
def test_reductionist_vectors(name, vec):
    need_shared()
    body = bytes.fromhex(vec["hex"])
    assert len(body) == vec["len"]
    if name.startswith("rs_test_cbor_response"):
        # 3 data bytes for int32 x [3,2,1]: must be refused, naming both numbers.
        with pytest.raises(vh5.MalformedError) as ei:
            vh5.decode_payload(body)
        assert ei.value.status == 3 and ei.value.status_name == "VH5_ERR_MALFORMED"
        assert "3" in ei.value.message and "24" in ei.value.message, ei.value.message
        return
    values, count, shape = reference_reductionist(body)
    p = vh5.decode_payload(body)
    assert p.format == "reductionist"
    assert p.layout in ("reductionist-0.12", "reductionist-0.13.0", "reductionist-0.13.1", "client")
    if name.startswith("pyas_"):
        assert p.layout == "client"
    elif name.startswith("v012_"):
        assert p.layout == "reductionist-0.12"
    assert_zero_copy(p, body)
    if shape is None:  # client fixture without 'shape': any shape holding the elements
        assert p.data.size == values.size
        assert p.data.tobytes() == values.tobytes()
    else:
        assert_same_array(p.data, values)
    assert p.data.flags.writeable is False
    if count is None:
        assert p.count is None
    else:
        assert p.count.dtype == np.int64 and p.count.ndim == 1
        np.testing.assert_array_equal(p.count, count)
    assert p.byte_order == wire_order(values.dtype)


def wire_order(dt: np.dtype) -> str:
    if dt.itemsize == 1:
        return "none"
    bo = dt.byteorder
    return "little" if bo == "<" or (bo == "=" and NATIVE == "little") else "big"


def server_cases():
    idx = PAYLOADS / "server" / "index.json"
    if not idx.exists():
        return [], []
    d = json.loads(idx.read_text())
    return d["cases"], d["errors"]


SERVER_CASES, SERVER_ERRORS = server_cases()


def _expected_value(v):
    return {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}.get(v, v) if isinstance(v, str) else v


@pytest.mark.parametrize("case", SERVER_CASES or [None], ids=[c["name"] for c in SERVER_CASES] or ["absent"])
def test_real_server_responses(case):
    need_shared()
    body = (PAYLOADS / "server" / case["file"]).read_bytes()
    exp = case["expected"]
    p = vh5.decode_payload(body)
    values, count, shape = reference_reductionist(body)
    assert_same_array(p.data, values)
    assert p.shape == tuple(exp["shape"])
    assert p.dtype == np.dtype(exp["dtype"]).newbyteorder("<" if exp["byte_order"] == "little" else ">")
    assert p.data_offset == case["cbor_layout"]["bytes_data_offset"]
    addr = p.data.__array_interface__["data"][0]
    assert p.aligned == (addr % p.dtype.alignment == 0) == p.data.flags.aligned
    if "values" in exp and "server_observed" not in case and exp["result_layout"] == "C":
        want = np.array([_expected_value(v) for v in exp["values"]], dtype=p.dtype.newbyteorder("="))
        np.testing.assert_array_equal(p.data.ravel(), want)
    if "count" in exp:
        np.testing.assert_array_equal(p.count, np.asarray(exp["count"], dtype=np.int64))
    assert len(p.count) == exp["count_len"] == p.count_len
    assert p.count_is_view == (exp["count_in"] == "count_as_bytes")
    # native copy: aligned, same values
    c = p.copy_native()
    assert c.flags.aligned and c.flags.owndata and c.dtype.isnative
    np.testing.assert_array_equal(c, p.data)
    # mask: count 0 <=> masked
    m = p.masked()
    if len(p.count) == p.data.size:
        np.testing.assert_array_equal(np.ma.getmaskarray(m), (p.count == 0).reshape(p.shape))
    assert np.shares_memory(m.data, p.data) or p.data.size == 0


@pytest.mark.parametrize("err", SERVER_ERRORS or [None], ids=[e["name"] for e in SERVER_ERRORS] or ["absent"])
def test_server_error_bodies(err):
    need_shared()
    body = (PAYLOADS / "server" / err["file"]).read_bytes()
    with pytest.raises(vh5.ServerError) as ei:
        vh5.decode_payload(body)
    assert ei.value.status == 15
    assert err["body_json"]["error"]["message"] in ei.value.message


# ----------------------------------------------------------------------------- random messages

RED_DTYPES = ["int32", "int64", "uint32", "uint64", "float32", "float64"]


@st.composite
def reductionist_message(draw):
    dtype = draw(st.sampled_from(RED_DTYPES))
    order = draw(st.sampled_from(["little", "big"]))
    o = "<" if order == "little" else ">"
    shape = draw(st.lists(st.integers(0, 5), min_size=0, max_size=3))
    n = int(np.prod(shape, dtype=np.int64))
    itemsize = np.dtype(dtype).itemsize
    data = draw(st.binary(min_size=n * itemsize, max_size=n * itemsize))
    version = draw(st.sampled_from(["0.12", "0.13.0", "0.13.1"]))
    shape_bytes = version != "0.12" and draw(st.booleans())
    count_kind = draw(st.sampled_from(["per_element", "single", "as_bytes", "bare", "nested", "absent"]))
    counts = (
        draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n))
        if count_kind != "single"
        else [draw(st.integers(0, 2**40))]
    )
    if count_kind in ("bare",):
        counts = counts[:1] or [0]
    if count_kind == "as_bytes" and version == "0.12":
        count_kind = "per_element"
    m = {"bytes": data, "dtype": dtype}
    if shape_bytes:
        m["shape"] = []
        m["shape_as_bytes"] = np.asarray(shape, dtype=o + "u8").tobytes()
    else:
        m["shape"] = shape
        if version == "0.13.1":
            m["shape_as_bytes"] = b""
    if count_kind == "as_bytes":
        m["count"] = []
        m["count_as_bytes"] = np.asarray(counts, dtype=o + "i8").tobytes()
    elif count_kind == "bare":
        m["count"] = counts[0]
    elif count_kind == "nested":
        m["count"] = np.asarray(counts, dtype=np.int64).reshape(shape).tolist() if shape else [counts[:1] or [0]]
    elif count_kind != "absent":
        m["count"] = counts
    if version == "0.13.1" and "count_as_bytes" not in m:
        m["count_as_bytes"] = b""
    m["byte_order"] = order
    keys = draw(st.permutations(list(m)))
    return cbor2.dumps({k: m[k] for k in keys})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reductionist_message())
def test_random_reductionist_messages(body):
    values, count, shape = reference_reductionist(body)
    p = vh5.decode_payload(body)
    assert_same_array(p.data, values)
    assert_zero_copy(p, body)
    if count is None:
        assert p.count is None
    else:
        np.testing.assert_array_equal(p.count, count)
        assert p.count.dtype == np.int64
        if count.size == values.size:
            np.testing.assert_array_equal(np.ma.getmaskarray(p.masked()), (count == 0).reshape(values.shape))
        elif count.size == 1:
            assert np.ma.getmaskarray(p.masked()).all() == (count[0] == 0) or values.size == 0
    np.testing.assert_array_equal(p.copy_native(), values)
    # same bytes in a bytearray: writable views of it
    ba = bytearray(body)
    q = vh5.decode_payload(ba)
    assert q.data.flags.writeable or q.data.size == 0
    assert_same_array(q.data, values)


# RFC 8746 typed arrays: tag = 64 + 16*float + 8*signed + 4*little + ll
def typed_tag(dt: np.dtype) -> int:
    little = 4 if dt.byteorder == "<" or (dt.byteorder in "=|" and NATIVE == "little") else 0
    if dt.itemsize == 1:
        little = 0
    if dt.kind == "f":
        return 64 + 16 + little + {2: 0, 4: 1, 8: 2}[dt.itemsize]
    signed = 8 if dt.kind == "i" else 0
    return 64 + signed + little + {1: 0, 2: 1, 4: 2, 8: 3}[dt.itemsize]


TYPED = ["u1", "i1"] + [o + t for o in "<>" for t in ["u2", "u4", "u8", "i2", "i4", "i8", "f2", "f4", "f8"]]


@st.composite
def typed_message(draw):
    dt = np.dtype(draw(st.sampled_from(TYPED)))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    n = int(np.prod(shape))
    data = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
    kind = draw(st.sampled_from(["typed", "multidim_c", "multidim_f"]))
    flat = np.frombuffer(data, dtype=dt)
    if kind == "typed":
        body = cbor2.dumps(cbor2.CBORTag(typed_tag(dt), data))
        want = flat
    elif kind == "multidim_c":
        body = cbor2.dumps(cbor2.CBORTag(40, [list(shape), cbor2.CBORTag(typed_tag(dt), data)]))
        want = flat.reshape(shape)
    else:
        body = cbor2.dumps(cbor2.CBORTag(1040, [list(shape), cbor2.CBORTag(typed_tag(dt), data)]))
        want = flat.reshape(shape, order="F")
    return body, kind, want


@settings(max_examples=300, deadline=None)
@given(typed_message())
def test_random_rfc8746_messages(msg):
    body, kind, want = msg
    p = vh5.decode_payload(body)
    assert p.format == {"typed": "typed_array"}.get(kind, "multidim_array")
    assert_same_array(p.data, want)
    assert p.order == ("F" if kind == "multidim_f" else "C")
    assert p.layout == "none"
    if kind == "multidim_f" and want.ndim > 1 and want.size > 1:
        assert p.data.flags.f_contiguous
    assert_zero_copy(p, body)
    assert p.count is None
    c = p.copy_native()
    assert c.dtype.isnative or c.dtype.itemsize == 1
    np.testing.assert_array_equal(c, want)


MSGPACK_TYPES = ["|u1", "|i1", "|b1", "<u2", ">u2", "<i4", ">i8", "<f2", "<f4", ">f4", "<f8", ">f8", "<c8", "<c16"]


@st.composite
def msgpack_message(draw):
    dt = np.dtype(draw(st.sampled_from(MSGPACK_TYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        data = bytes(draw(st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n)))
    else:
        data = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
    str_keys = draw(st.booleans())
    k = (lambda s: s) if str_keys else (lambda s: s.encode())
    m = {k("nd"): True, k("type"): dt.str, k("kind"): b"", k("shape"): list(shape), k("data"): data}
    keys = draw(st.permutations(list(m)))
    body = msgpack.packb({key: m[key] for key in keys}, use_bin_type=True)
    return body, np.frombuffer(data, dtype=dt).reshape(shape)


@settings(max_examples=200, deadline=None)
@given(msgpack_message())
def test_random_msgpack_numpy_messages(msg):
    body, want = msg
    p = vh5.decode_payload(body)
    assert p.format == "msgpack_numpy"
    assert_same_array(p.data, want)
    assert_zero_copy(p, body)


def test_msgpack_pickled_object_refused():
    body = msgpack.packb(
        {b"nd": True, b"type": "|O", b"kind": b"O", b"shape": [1], b"data": b"\x80\x04N."}, use_bin_type=True
    )
    with pytest.raises(vh5.UnsupportedError):
        vh5.decode_payload(body)


# ----------------------------------------------------------------------------- behaviours


def _f64_message(values, order="little", count=None):
    o = "<" if order == "little" else ">"
    arr = np.asarray(values, dtype=o + "f8")
    m = {
        "bytes": arr.tobytes(),
        "dtype": "float64",
        "shape": list(arr.shape),
        "count": count if count is not None else [1] * arr.size,
        "byte_order": order,
    }
    return cbor2.dumps(m)


def test_big_endian_dtype_and_values():
    body = _f64_message([[1.5, -2.25], [3.0, 1e300]], order="big")
    p = vh5.decode_payload(body)
    assert p.dtype == np.dtype(">f8") and p.byte_order == "big"
    assert p.needs_swap == (NATIVE == "little")
    np.testing.assert_array_equal(p.data, [[1.5, -2.25], [3.0, 1e300]])
    c = p.copy_native()
    assert c.dtype == np.dtype("=f8")
    np.testing.assert_array_equal(c, p.data)
    if NATIVE == "little":
        with pytest.raises(vh5.ByteOrderError):
            vh5.decode_payload(body, require_native=True)


def test_misaligned_data_and_require_aligned():
    body = _f64_message([1.0, 2.0, 3.0])
    d = vh5.decode_payload(body).data_offset
    backing = np.zeros(len(body) + 32, dtype=np.uint8)
    k0 = (-(backing.ctypes.data + d)) % 8
    for shift, aligned in ((0, True), (1, False), (4, False), (8, True)):
        buf = backing[k0 + shift : k0 + shift + len(body)]
        buf[:] = np.frombuffer(body, dtype=np.uint8)
        p = vh5.decode_payload(buf)
        assert p.aligned is aligned and p.data.flags.aligned is aligned
        np.testing.assert_array_equal(p.data, [1.0, 2.0, 3.0])
        assert np.shares_memory(p.data, backing)
        if aligned:
            assert vh5.decode_payload(buf, require_aligned=True).aligned
        else:
            with pytest.raises(vh5.MisalignedError):
                vh5.decode_payload(buf, require_aligned=True)
            c = p.copy_native()
            assert c.flags.aligned
            np.testing.assert_array_equal(c, [1.0, 2.0, 3.0])


def test_count_view_versus_decoded():
    shape = (3, 4)
    vals = np.arange(12, dtype="<f8")
    counts = np.array([0, 1, 2, 3, 0, 5, 6, 7, 8, 0, 10, 11], dtype="<i8")
    base = {
        "bytes": vals.tobytes(),
        "dtype": "float64",
        "shape": [],
        "shape_as_bytes": np.asarray(shape, "<u8").tobytes(),
        "byte_order": "little",
    }
    as_bytes = cbor2.dumps({**base, "count": [], "count_as_bytes": counts.tobytes()})
    as_ints = cbor2.dumps({**base, "count": counts.tolist(), "count_as_bytes": b""})
    p, q = vh5.decode_payload(as_bytes), vh5.decode_payload(as_ints)
    np.testing.assert_array_equal(p.count, counts)
    np.testing.assert_array_equal(q.count, counts)
    if NATIVE == "little":
        assert p.count_is_view and np.shares_memory(p.count, np.frombuffer(as_bytes, np.uint8))
    assert not q.count_is_view and q.count.flags.owndata
    for x in (p, q):
        m = x.masked()
        assert isinstance(m, np.ma.MaskedArray)
        np.testing.assert_array_equal(m.mask, (counts == 0).reshape(shape))
        assert m.sum() == vals.sum() - 0 - 4 - 9


def test_single_count_mask_rule():
    p = vh5.decode_payload(_f64_message([1.0, 2.0], count=[0]))
    assert p.masked().mask.all()
    p = vh5.decode_payload(_f64_message([1.0, 2.0], count=[2]))
    assert not np.ma.getmaskarray(p.masked()).any()
    # a count length that is neither 1 nor one per element fits no Reductionist rule
    with pytest.raises(vh5.MalformedError, match=r"has 2 elements: Reductionist sends 1 .*prod\(shape \[3\]\) = 3"):
        vh5.decode_payload(_f64_message([1.0, 2.0, 3.0], count=[1, 2]))


def test_errors_carry_status_and_message():
    with pytest.raises(vh5.MalformedError) as ei:
        vh5.decode_payload(b"\xa1")  # map of 1 pair, truncated
    e = ei.value
    assert isinstance(e, vh5.Error) and isinstance(e, ValueError)
    assert e.status == 3 and e.status_name == "VH5_ERR_MALFORMED" and e.message
    with pytest.raises(vh5.Error):
        vh5.decode_payload(b"")
    with pytest.raises(TypeError):
        vh5.decode_payload(12345)
    with pytest.raises(ValueError, match="contiguous"):
        vh5.decode_payload(memoryview(bytes(range(20)))[::2])
    # truncating a valid message anywhere never reads outside it: clean errors only
    body = _f64_message([1.0, 2.0, 3.0])
    for cut in range(len(body)):
        with pytest.raises(vh5.Error):
            vh5.decode_payload(body[:cut])


def test_buffer_lifetime_and_no_leak():
    body = _f64_message(np.linspace(0, 1, 1000))
    holder = np.frombuffer(body, dtype=np.uint8).copy()  # an object we can weakref
    ref = weakref.ref(holder)
    p = vh5.decode_payload(holder)
    data, count = p.data, p.count
    del holder, p
    gc.collect()
    junk = [bytes(len(body)) for _ in range(200)]  # reuse freed memory if it were freed
    assert ref() is not None, "the views must keep the buffer alive"
    np.testing.assert_array_equal(data, np.linspace(0, 1, 1000))
    del data, count, junk
    gc.collect()
    assert ref() is None, "the buffer leaked"


def test_bytes_buffer_survives_del():
    body = bytes(_f64_message(np.arange(500.0)))
    data = vh5.decode_payload(body).data
    del body
    gc.collect()
    _ = [bytearray(4096) for _ in range(100)]
    np.testing.assert_array_equal(data, np.arange(500.0))


def test_writable_buffer_gives_writable_view():
    ba = bytearray(_f64_message([1.0, 2.0]))
    p = vh5.decode_payload(ba)
    p.data[0] = 42.0
    assert vh5.decode_payload(bytes(ba)).data[0] == 42.0


# ----------------------------------------------------------------------------- PyActiveStorage shim


def pyactivestorage_original_semantics(body):
    """What PyActiveStorage's decode_result computes (cbor2 + frombuffer, byte_order ignored,
    count a list) - written here from its documented behaviour, for comparison."""
    m = cbor2.loads(body)
    result = np.frombuffer(m["bytes"], dtype=m["dtype"])
    if "shape" in m:
        result = result.reshape(m["shape"])
    return result, m["count"]


class FakeResponse:
    def __init__(self, content):
        self.content = content


@pytest.mark.parametrize("name,vec", [v for v in VECTORS if not v[0].startswith("rs_test")] or [("absent", None)])
def test_pyactivestorage_decode_result(name, vec):
    need_shared()
    body = bytes.fromhex(vec["hex"])
    result, count = decode_result(FakeResponse(body))
    values, ref_count, shape = reference_reductionist(body)
    assert isinstance(result, np.ma.MaskedArray)
    assert isinstance(count, np.ndarray) and count.dtype == np.int64
    np.testing.assert_array_equal(count, ref_count)
    assert result.dtype.isnative
    np.testing.assert_array_equal(result.data.ravel(), values.ravel())
    m = cbor2.loads(body)
    if m.get("shape") or not m.get("shape_as_bytes"):
        orig, orig_count = pyactivestorage_original_semantics(body)
        if "shape" in m:
            assert result.shape == orig.shape
        assert count.tolist() == _flatten(orig_count) if not m.get("count_as_bytes") else True
    if ref_count.size == values.size:
        np.testing.assert_array_equal(np.ma.getmaskarray(result), (ref_count == 0).reshape(values.shape))
    # bytes body directly
    r2, c2 = decode_result(body)
    np.testing.assert_array_equal(r2.data, result.data)


def test_pyactivestorage_masks_zero_counts_and_honours_byte_order():
    vals = np.array([1.0, 2.0, 3.0], dtype=">f8")
    body = cbor2.dumps(
        {"bytes": vals.tobytes(), "dtype": "float64", "shape": [3], "count": [2, 0, 5], "byte_order": "big"}
    )
    result, count = decode_result(FakeResponse(body))
    np.testing.assert_array_equal(result.data, [1.0, 2.0, 3.0])
    assert result.dtype == np.dtype("float64")
    np.testing.assert_array_equal(result.mask, [False, True, False])
    np.testing.assert_array_equal(count, [2, 0, 5])
    # the original gets neither right
    orig, orig_count = pyactivestorage_original_semantics(body)
    assert not np.array_equal(orig, [1.0, 2.0, 3.0]) and isinstance(orig_count, list)


def test_pyactivestorage_server_error_body():
    need_shared()
    body = (PAYLOADS / "server" / "error_missing_object.body").read_bytes()
    with pytest.raises(vh5.ServerError, match="error retrieving object"):
        decode_result(FakeResponse(body))


def test_error_advice_names_the_python_api_not_the_c_function():
    """Messages raised to Python name Payload.copy_native() / require_* (not payload_copy_data)."""
    body = _f64_message([1.0, 2.0, 3.0], order="big" if NATIVE == "little" else "little")
    with pytest.raises(vh5.ByteOrderError) as ei:
        vh5.decode_payload(body, require_native=True)
    msg = str(ei.value)
    assert "payload_copy_data" not in msg and "PAYLOAD_REQUIRE_NATIVE" not in msg
    assert "Payload.copy_native()" in msg and "require_native=True" in msg
    # the advice works: decoding without the flag and copying gives the values natively
    np.testing.assert_array_equal(vh5.decode_payload(body).copy_native(), [1.0, 2.0, 3.0])

    body = _f64_message([1.0, 2.0, 3.0])
    d = vh5.decode_payload(body).data_offset
    backing = np.zeros(len(body) + 16, dtype=np.uint8)
    k = (-(backing.ctypes.data + d)) % 8 + 1  # data 1 byte past an 8-byte boundary
    buf = backing[k : k + len(body)]
    buf[:] = np.frombuffer(body, dtype=np.uint8)
    with pytest.raises(vh5.MisalignedError) as ei:
        vh5.decode_payload(buf, require_aligned=True)
    msg = str(ei.value)
    assert "payload_copy_data" not in msg and "PAYLOAD_REQUIRE_ALIGNED" not in msg
    assert "Payload.copy_native()" in msg and "require_aligned=True" in msg
    assert "byte offset" in msg  # the library's own diagnosis is kept

    # RFC 8746 uint8 typed array (tag 64) around an indefinite-length byte string [1, 2] [3]
    chunked = bytes([0xD8, 0x40, 0x5F, 0x42, 1, 2, 0x41, 3, 0xFF])
    assert cbor2.loads(chunked).value == b"\x01\x02\x03"  # well-formed, per cbor2
    with pytest.raises(vh5.UnsupportedError) as ei:
        vh5.decode_payload(chunked)
    msg = str(ei.value)
    assert "payload_copy_data" not in msg and "indefinite-length" in msg and "cbor2" in msg


@pytest.mark.parametrize("order", ["little", "big"])
def test_reductionist_count_as_bytes_negative_refused(order):
    """A negative count in count_as_bytes: MalformedError naming the index and byte offset in
    both byte orders (it used to be handed out in the zero-copy count view when native)."""
    o = "<" if order == "little" else ">"
    base = {
        "bytes": np.array([1.0, 2.0], o + "f8").tobytes(),
        "dtype": "float64",
        "shape": [2],
        "count": [],
        "byte_order": order,
    }
    ok = cbor2.dumps({**base, "count_as_bytes": np.array([3, 4], o + "i8").tobytes()})
    np.testing.assert_array_equal(vh5.decode_payload(ok).count, [3, 4])
    bad = cbor2.dumps({**base, "count_as_bytes": np.array([3, -4], o + "i8").tobytes()})
    off = bad.index(np.array([3, -4], o + "i8").tobytes()) + 8
    with pytest.raises(vh5.MalformedError, match=f"count element 1 at byte {off} .*negative"):
        vh5.decode_payload(bad)


@pytest.mark.parametrize("order", ["little", "big"])
def test_reductionist_count_and_count_as_bytes_disagreeing_refused(order):
    """`count` and `count_as_bytes` both non-empty and different: MalformedError naming both
    keys and the first differing element, as for shape / shape_as_bytes (count_as_bytes used
    to win silently, unmasking elements whose `count` is 0). Equal ones decode."""
    o = "<" if order == "little" else ">"
    base = {
        "bytes": np.arange(6, dtype=o + "f8").tobytes(),
        "dtype": "float64",
        "shape": [2, 3],
        "shape_as_bytes": b"",
        "byte_order": order,
    }
    cab = np.array([2, 2, 2, 2, 2, 2], o + "i8").tobytes()
    for count in ([2, 2, 2, 2, 2, 2], [[2, 2, 2], [2, 2, 2]]):
        p = vh5.decode_payload(cbor2.dumps({**base, "count": count, "count_as_bytes": cab}))
        np.testing.assert_array_equal(p.count, [2] * 6)
    for count, first in (([1, 0, 1, 1, 1, 1], 0), ([2, 2, 2, 2, 2, 3], 5), ([[2, 2, 2], [2, 0, 2]], 4)):
        body = cbor2.dumps({**base, "count": count, "count_as_bytes": cab})
        want = np.ravel(count)[first]
        with pytest.raises(
            vh5.MalformedError,
            match=rf"count \(at byte \d+\) and count_as_bytes \(at byte \d+\) disagree: element {first} is {want} in count but 2 in count_as_bytes",
        ):
            vh5.decode_payload(body)
    # a typed-array count (RFC 8746 tag 79, int64 little-endian) is compared the same way
    typed = cbor2.CBORTag(79, np.array([2, 2, 2, 2, 7, 2], "<i8").tobytes())
    with pytest.raises(vh5.MalformedError, match="element 4 is 7 in count but 2 in count_as_bytes"):
        vh5.decode_payload(cbor2.dumps({**base, "count": typed, "count_as_bytes": cab}))
    # different lengths were already refused
    with pytest.raises(vh5.MalformedError, match="has 5 elements but count_as_bytes has 6"):
        vh5.decode_payload(cbor2.dumps({**base, "count": [2] * 5, "count_as_bytes": cab}))


# ----------------------------------------------------------------------------- found by the tryout


def test_malformed_message_keeps_large_numbers():
    """A declared shape of 18 digits stays in the message (the Python layer used to rewrite
    every number of 15+ digits as '(an HDF5 id)')."""
    body = cbor2.dumps({"bytes": b"\0" * 8, "dtype": "float64", "shape": [123456789012345678], "byte_order": "little"})
    with pytest.raises(vh5.MalformedError) as exc:
        vh5.decode_payload(body)
    assert "123456789012345678" in str(exc.value), str(exc.value)
    assert "HDF5 id" not in str(exc.value)


def _empty_array_messages(shape):
    """An empty float64 array of ``shape`` as a Reductionist map, an RFC 8746 tag 40 array and
    a msgpack-numpy map."""
    return [
        cbor2.dumps({"bytes": b"", "dtype": "float64", "shape": shape, "byte_order": "little"}),
        cbor2.dumps(cbor2.CBORTag(40, [shape, cbor2.CBORTag(86, b"")])),
        msgpack.packb({b"nd": True, b"type": "<f8", b"kind": b"", b"shape": shape, b"data": b""}),
    ]


@pytest.mark.parametrize("shape", [[0, 2**64 - 1], [2**63, 0], [0, 2**63 - 1], [0, 2**62, 2**62]])
def test_zero_size_payload_with_huge_axis_raises_vh5_error(shape):
    """An empty array may declare any axis the library's 64-bit arithmetic accepts, but numpy
    holds none above 2**63-1 (nor a product of the non-zero axes times the item size above it):
    vh5.UnsupportedError naming the shape and the byte offset, from decode_payload and
    decode_document alike (numpy's bare 'Maximum allowed dimension exceeded' ValueError used
    to escape)."""
    for body in _empty_array_messages(shape):
        with pytest.raises(vh5.UnsupportedError, match=re.escape(f"shape {shape}") + ".*no numpy equivalent") as e:
            vh5.decode_payload(body)
        assert re.search(r"data at byte \d+", str(e.value)), str(e.value)
        # a Reductionist map is a dict whose "bytes" value (at byte 7) is the array
        at = 7 if body[0] == 0xA4 else 0
        with pytest.raises(vh5.UnsupportedError, match=rf"the array at byte {at}: " + re.escape(f"shape {shape}")):
            vh5.decode_document(body)
    nested = cbor2.dumps({"x": [1, cbor2.CBORTag(40, [shape, cbor2.CBORTag(86, b"")])]})
    with pytest.raises(vh5.UnsupportedError, match=r"the array at byte 5: "):
        vh5.decode_document(nested)
    assert vh5.decode_document(cbor2.dumps({"a": [1, 2]}))["a"] == [1, 2]


def test_zero_size_payload_with_large_numpy_axis_decodes():
    """An empty shape numpy can hold (product of the non-zero axes x item size < 2**63) still
    decodes to an empty view, whatever its axes."""
    shape = [0, 2**40, 2**19]
    for body in _empty_array_messages(shape):
        p = vh5.decode_payload(body)
        assert p.data.shape == tuple(shape) and p.data.size == 0 and p.data.dtype == np.dtype("<f8")
        doc = vh5.decode_document(body)
        assert (doc["bytes"] if isinstance(doc, dict) else doc).shape == tuple(shape)


@pytest.mark.parametrize("decode", ["decode_payload", "decode_document"])
def test_payload_decoders_name_hdf5_and_netcdf3_files(tmp_path, decode):
    """An HDF5 file (signature at byte 0 or after a user block) or a netCDF-3 file given to
    the payload decoders: UnsupportedError saying what the file is and what reads it, in
    Python terms (it was a decoder's complaint about byte 0; session-16 tryout)."""
    import h5py

    fn = getattr(vh5, decode)
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f["x"] = np.arange(3)
    ub = tmp_path / "ub.h5"
    with h5py.File(ub, "w", userblock_size=1024, libver=("earliest", "v110")) as f:
        f["x"] = np.arange(3)
    for path, where in (
        (plain, "signature at byte 0"),
        (ub, "signature at byte 1024 after a user block of 1024 bytes"),
    ):
        with pytest.raises(vh5.UnsupportedError) as ei:
            fn(path.read_bytes())
        msg = str(ei.value)
        assert (
            f"the input is an HDF5 file ({where}), not a serialized array payload: open it with vh5.File(path)" in msg
        ), msg
        assert "vh5_file_open" not in msg, msg
    for magic, kind in ((b"CDF\x01", "classic"), (b"CDF\x02", "64-bit offset"), (b"CDF\x05", "CDF-5 (64-bit data)")):
        with pytest.raises(vh5.UnsupportedError) as ei:
            fn(magic + b"\0" * 60)
        msg = str(ei.value)
        assert (
            f"the input is a netCDF-3 file ({kind} format), not a serialized array payload" in msg
            and "netCDF library" in msg
        ), msg
    # a real payload whose data holds the signature at a user-block offset still decodes
    body = bytearray(
        cbor2.dumps({"bytes": bytes(1024), "dtype": "float64", "shape": [128], "count": [], "byte_order": "little"})
    )
    start = bytes(body).index(b"Y\x04\x00") + 3  # the byte string head: 1024 bytes follow
    assert start < 512 and body[0] == 0xA5
    body[512:520] = b"\x89HDF\r\n\x1a\n"
    want = np.frombuffer(bytes(body[start : start + 1024]), "<f8")
    np.testing.assert_array_equal(vh5.decode_payload(bytes(body)).data, want)
