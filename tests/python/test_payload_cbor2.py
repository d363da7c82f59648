"""Cross-check `vh5 payload --json` against cbor2 + numpy on every shared vector and server
response (../shared/data/payloads or env VH5_SHARED_DATA), and on payloads generated here.

The CLI binary comes from env VH5_CLI (default target/release/vh5). cbor2 + numpy are the
independent reference: cbor2 decodes the CBOR map, numpy interprets `bytes` with the dtype,
byte order and shape the map states (shape_as_bytes / count_as_bytes preferred when
non-empty, as the Reductionist client contract says).
"""

import json
import math
import os
import pathlib
import subprocess

import cbor2
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("VH5_CLI", str(ROOT / "target" / "release" / "vh5"))
SHARED = pathlib.Path(os.environ.get("VH5_SHARED_DATA", ROOT.parent / "shared" / "data")) / "payloads"

needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared test data not found at {SHARED} (set VH5_SHARED_DATA)"
)


def run_cli(path):
    p = subprocess.run([CLI, "payload", "--json", "--values", "all", str(path)], capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout)


def as_json_value(x):
    """numpy scalar -> the CLI's JSON convention (NaN/inf as strings)."""
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    return int(x)


def flatten(v):
    if isinstance(v, list):
        return [y for x in v for y in flatten(x)]
    return [v]


def reference(body):
    """Decode a Reductionist map with cbor2 + numpy."""
    m = cbor2.loads(body)
    order = "<" if m.get("byte_order", "little") == "little" else ">"
    dt = np.dtype(m["dtype"]).newbyteorder(order)
    data = np.frombuffer(m["bytes"], dtype=dt)
    sab = m.get("shape_as_bytes", b"")
    if sab:
        shape = np.frombuffer(sab, dtype=order + "u8").tolist()
    elif "shape" in m:
        shape = list(m["shape"])
    else:
        shape = [] if data.size == 1 else [data.size]
    cab = m.get("count_as_bytes", b"")
    if cab:
        count = np.frombuffer(cab, dtype=order + "i8").tolist()
    elif isinstance(m.get("count"), int):
        count = [m["count"]]
    else:
        count = flatten(m.get("count", []))
    return m, dt, data.reshape(shape), count


def check_against_reference(out, body):
    m, dt, arr, count = reference(body)
    assert out["ok"] is True, out
    assert out["format"] == "reductionist"
    assert out["dtype"] == dt.name
    assert out["shape"] == list(arr.shape)
    assert out["byte_order"] == ("little" if dt.byteorder in "<=" else "big")
    assert out["values"] == [as_json_value(x) for x in arr.ravel()]
    assert out["count"]["len"] == len(count)
    assert out["count"]["values"] == count
    assert out["count"]["zeros"] == sum(1 for c in count if c == 0)
    if count:
        assert (out["count"]["min"], out["count"]["max"]) == (min(count), max(count))
    # the view points at the very bytes cbor2 returned
    assert body[out["data_offset"] : out["data_offset"] + out["data_len"]] == m["bytes"]


def vectors():
    if not SHARED.is_dir():
        return []
    return sorted(json.loads((SHARED / "reductionist_vectors.json").read_text()).items())


@needs_shared
@pytest.mark.parametrize("name,vec", vectors(), ids=[n for n, _ in vectors()])
def test_vectors(tmp_path, name, vec):
    body = bytes.fromhex(vec["hex"])
    f = tmp_path / f"{name}.cbor"
    f.write_bytes(body)
    rc, out = run_cli(f)
    if name.startswith("rs_test_cbor_response"):
        # cbor2 decodes it, but numpy cannot view 3 bytes as int32 x [3, 2, 1] either
        m = cbor2.loads(body)
        assert len(m["bytes"]) == 3
        with pytest.raises(ValueError):
            np.frombuffer(m["bytes"], dtype="<i4").reshape(3, 2, 1)
        assert rc == 1 and out["ok"] is False
        assert out["status"] == "VH5_ERR_MALFORMED"
        assert "3 bytes" in out["message"] and "24 bytes" in out["message"]
        return
    assert rc == 0, out
    check_against_reference(out, body)


def server_files():
    if not SHARED.is_dir():
        return []
    return sorted(p.name for p in (SHARED / "server").glob("*.cbor"))


@needs_shared
@pytest.mark.parametrize("fname", server_files())
def test_server_responses(fname):
    body = (SHARED / "server" / fname).read_bytes()
    rc, out = run_cli(SHARED / "server" / fname)
    assert rc == 0, out
    check_against_reference(out, body)
    assert out["layout"] == "0.13.1"


@needs_shared
def test_server_error_bodies():
    index = json.loads((SHARED / "server" / "index.json").read_text())
    for e in index["errors"]:
        rc, out = run_cli(SHARED / "server" / e["file"])
        assert rc == 1
        assert out["status"] == "VH5_ERR_SERVER_ERROR"
        assert out["message"].startswith(
            "this is a JSON error body from the server: " + e["body_json"]["error"]["message"]
        )


@pytest.mark.parametrize(
    "dtype", ["<f8", ">f8", "<f4", ">i4", "<u4", "<i8", ">u8", "<f2", "<c16", ">c8", "|b1", "|i1", "|u1"]
)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 1, 2)])
def test_generated_with_cbor2(tmp_path, dtype, shape):
    """Messages written by cbor2 (0.13.1-like and client-like) with numpy data of many types."""
    rng = np.random.default_rng(abs(hash((dtype, shape))) % 2**32)
    arr = np.asarray(rng.standard_normal(shape) * 100).astype(
        dtype
    )  # 0-d array, not a numpy scalar (scalars are always native order)
    order = "big" if dtype[0] == ">" else "little"
    count = rng.integers(0, 70000, size=arr.size).tolist()
    name = np.dtype(dtype).name
    for variant in range(3):
        if variant == 0:  # 0.13.1, count as int array
            m = {
                "bytes": arr.tobytes(),
                "dtype": name,
                "shape": list(shape),
                "shape_as_bytes": b"",
                "count": count,
                "count_as_bytes": b"",
                "byte_order": order,
            }
        elif variant == 1:  # 0.13.1 with both *_as_bytes
            bo = ">" if order == "big" else "<"
            sab = np.array(shape, dtype=bo + "u8").tobytes()
            m = {
                "bytes": arr.tobytes(),
                "dtype": name,
                "shape": [] if sab else list(shape),
                "shape_as_bytes": sab,
                "count": [] if count else count,
                "count_as_bytes": np.array(count, dtype=bo + "i8").tobytes(),
                "byte_order": order,
            }
        else:  # client: nested count from numpy tolist(), numpy type string, no byte_order when little
            m = {
                "bytes": arr.tobytes(),
                "dtype": dtype if dtype[0] != "|" else name,
                "shape": list(shape),
                "count": np.array(count).reshape(shape).tolist() if shape else count,
            }
            if order == "big":
                m["byte_order"] = "big"
        body = cbor2.dumps(m)
        f = tmp_path / f"v{variant}.cbor"
        f.write_bytes(body)
        rc, out = run_cli(f)
        assert rc == 0, out
        assert out["dtype"] == np.dtype(dtype).name
        assert out["shape"] == list(shape)
        want = (
            [as_json_value(x) for x in arr.ravel()]
            if arr.dtype.kind != "c"
            else [[as_json_value(x.real), as_json_value(x.imag)] for x in arr.ravel()]
        )
        assert out["values"] == want
        assert out["count"]["values"] == count
        assert out["aligned"] in (True, False)
