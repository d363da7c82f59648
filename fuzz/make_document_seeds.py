#!/usr/bin/env python3
"""Write the committed seed corpus of the payload_document fuzz target
(fuzz/corpus/payload_document/): byte 0 picks the format (0 auto, 1 CBOR, 2 msgpack), the
rest is a document written with msgpack + msgpack-numpy or cbor2 (independent encoders) or by
hand: xarray-like to_dict("array") documents, nested lists / maps of every scalar, typed
arrays and tag 40/1040 arrays inside maps, Reductionist maps inside lists, indefinite-length
containers and strings, nesting to depth 64 / 65, pickled and structured msgpack-numpy
arrays, ext types, huge declared lengths. Deterministic; re-running rewrites the same files.
"""
import pathlib
import struct

import cbor2
import msgpack
import msgpack_numpy
import numpy as np

OUT = pathlib.Path(__file__).resolve().parent / "corpus" / "payload_document"
seeds = {}


def add(name, fmt, b):
    seeds[name] = bytes([fmt]) + bytes(b)


def mp(o):
    return msgpack.packb(o, default=msgpack_numpy.encode)


n = 5
xr = {
    "coords": {"time": {"dims": ["time"], "attrs": {"units": "s"}, "data": np.arange(n, dtype="<i8")}},
    "attrs": {"title": "demo"},
    "dims": {"time": n},
    "data_vars": {
        "a": {"dims": ["time"], "attrs": {}, "data": np.linspace(0, 1, n)},
        "b": {"dims": ["time"], "attrs": {"scale": 0.5}, "data": np.arange(n, dtype=">f8")},
    },
}
add("mp-xarray", 0, mp(xr))
add("mp-xarray-forced", 2, mp(xr))
add("mp-scalars", 2, mp([None, True, False, 0, -1, 127, -33, 2**64 - 1, -(2**63), 1.5, "é", b"\x00", [], {}]))
add("mp-float32", 2, msgpack.packb(1.5, use_single_float=True))
add("mp-numpy-scalars", 0, mp({"f": np.float32(2.5), "b": np.bool_(True), "c": np.complex128(1j), "z": 1 + 2j}))
add("mp-0d-empty", 0, mp({"z": np.array(3.0), "e": np.zeros((0, 2), ">i4"), "f": np.asfortranarray(np.ones((2, 3)))}))
add("mp-pickle", 0, mp({"o": np.array([None], dtype=object)}))
add("mp-structured", 0, mp({"s": np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])}))
add("mp-ext", 2, msgpack.packb([msgpack.ExtType(5, b"abc"), msgpack.Timestamp(1, 2)]))
add("mp-nd-only", 0, mp({b"nd": None, b"x": 1}))
add("mp-bad-array", 0, b"\x81\xa1a" + mp(np.arange(2.0))[:-1] + b"\x00")
add("mp-deep-64", 2, b"\x91" * 64 + b"\x01")
add("mp-deep-65", 2, b"\x91" * 65 + b"\x01")
add("mp-huge-array", 2, b"\xdd\xff\xff\xff\xff")
add("mp-huge-bin", 2, b"\xc6\xff\xff\xff\xff\x00")


def typed(a):
    dt = a.dtype
    le = dt.byteorder == "<" or (dt.byteorder == "=" and np.little_endian)
    ll = {1: 0, 2: 1, 4: 2, 8: 3}[dt.itemsize] - (dt.kind == "f")
    return cbor2.CBORTag(64 + 16 * (dt.kind == "f") + 8 * (dt.kind == "i") + 4 * (le and dt.itemsize > 1) + ll, a.tobytes())


add("cbor-typed-in-map", 0, cbor2.dumps({"a": typed(np.arange(3, dtype="<f8")), "b": [typed(np.arange(2, dtype=">i4")), "x"]}))
add("cbor-multidim", 1, cbor2.dumps([cbor2.CBORTag(40, [[2, 2], typed(np.arange(4, dtype="<u2"))]), cbor2.CBORTag(1040, [[2, 1], b"\x01\x02"])]))
red = {"bytes": struct.pack("<2i", 1, 2), "dtype": "int32", "shape": [2], "count": [1, 1], "byte_order": "little"}
add("cbor-reductionist-in-list", 1, cbor2.dumps([red, {"bytes": b"x", "other": 1}]))
add("cbor-reductionist-root", 0, cbor2.dumps(red))
add("cbor-tags-simple", 1, cbor2.dumps([cbor2.CBORTag(4000, "t"), cbor2.CBORSimpleValue(99), cbor2.undefined, -(2**64), 1e300]))
add("cbor-half", 1, b"\x83\xf9\x3c\x00\xf9\x7c\x00\xf9\x00\x01")
add("cbor-indefinite", 1, b"\xbf\x61a\x9f\x01\x5f\x41\x01\x40\xff\xff\x7f\x61x\x61y\xff\xf6\xff")
add("cbor-chunked-array-data", 1, b"\xa2\x65bytes\x5f\x42\x01\x02\x42\x03\x04\xff\x65dtype\x65int32")
add("cbor-self-describe", 0, b"\xd9\xd9\xf7" + cbor2.dumps(red))
add("cbor-deep-64", 1, b"\x81" * 64 + b"\x01")
add("cbor-deep-65", 1, b"\x9f" * 65 + b"\x01" + b"\xff" * 65)
add("cbor-huge-map", 1, b"\xbb\xff\xff\xff\xff\xff\xff\xff\xff")
add("cbor-stray-break", 1, b"\x82\x01\xff")
add("cbor-bad-utf8", 1, b"\x62\xff\xfe")
add("cbor-reserved-tag76", 1, b"\x81\xd8\x4c\x41\x00")
add("json-error", 0, b'{"error": {"message": "boom"}}')
add("empty", 0, b"")

OUT.mkdir(parents=True, exist_ok=True)
for name, b in seeds.items():
    (OUT / name).write_bytes(b)
print(f"{len(seeds)} seeds written to {OUT}")
