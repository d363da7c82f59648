#!/usr/bin/env python3
"""Write the committed seed corpus of the payload fuzz targets (fuzz/corpus/<target>/).

Edge cases written by hand or with cbor2 / msgpack (independent encoders): empty input,
truncated heads, huge declared lengths, deep nesting, indefinite lengths, tags, msgpack ext
types, JSON error bodies, plus the demo samples of `vh5 payload --make-samples` when a
built CLI is given. Usage: fuzz/make_seeds.py [VH5_CLI]. Deterministic; re-running
rewrites the same files. (The real shared vectors are added at run time by fuzz/seed.sh.)
"""
import os, pathlib, struct, subprocess, sys, tempfile
import cbor2, msgpack

ROOT = pathlib.Path(__file__).resolve().parent
seeds = {}

def add(name, b):
    seeds[name] = bytes(b)

def rmap(data=b"\x01\x00\x00\x00\x02\x00\x00\x00", dtype="int32", shape=(2,), count=(1, 1), order="little", **extra):
    m = {"bytes": data, "dtype": dtype, "shape": list(shape), "count": count if isinstance(count, cbor2.CBORTag) else list(count), "byte_order": order}
    m.update(extra)
    return cbor2.dumps(m)

# --- byte-level edge cases -------------------------------------------------------------
add("empty", b"")
for b in (0xa0, 0xbf, 0xd8, 0xd9, 0xda, 0xdb, 0x80, 0x8f, 0xde, 0xdf, 0x7b, 0x00, 0xff):
    add(f"single-{b:02x}", [b])
# truncated heads: 1/2/4/8-byte lengths cut short
add("cbor-trunc-bytes-len8", b"\xa1\x65bytes\x5b\x00\x00")
add("cbor-trunc-tag2", b"\xd9\x04")
add("cbor-trunc-map-key", b"\xa5\x65byt")
# huge declared lengths / counts
add("cbor-huge-bytes", b"\xa1\x65bytes\x5b\xff\xff\xff\xff\xff\xff\xff\xff")
add("cbor-huge-map", b"\xbb\xff\xff\xff\xff\xff\xff\xff\xff")
add("cbor-huge-count-array", b"\xa1\x65count\x9b\x7f\xff\xff\xff\xff\xff\xff\xff")
add("cbor-huge-shape", rmap(shape=(2**63, 2**63)))
add("cbor-shape-overflow", rmap(data=b"", shape=(2**32, 2**32, 2**32)))
add("msgpack-huge-map32", b"\xdf\xff\xff\xff\xff")
add("msgpack-huge-bin32", b"\x81\xa4data\xc6\xff\xff\xff\xff")
add("msgpack-huge-array32-in-extra", b"\x81\xa1x\xdd\xff\xff\xff\xff")
# deep nesting
add("cbor-count-deep-64", rmap(data=b"\x01\x00\x00\x00", shape=(1,), count=[]).replace(b"\x65count\x80", b"\x65count" + b"\x81" * 64 + b"\x01"))
add("cbor-count-deep-65", rmap(data=b"\x01\x00\x00\x00", shape=(1,), count=[]).replace(b"\x65count\x80", b"\x65count" + b"\x81" * 65 + b"\x01"))
add("cbor-extra-deep-arrays", b"\xa2\x65bytes\x40\x61x" + b"\x9f" * 200 + b"\xff" * 200)
add("cbor-extra-deep-maps", b"\xa2\x65bytes\x40\x61x" + b"\xa1\x00" * 300 + b"\x00")
add("msgpack-extra-deep", b"\x81\xa1x" + b"\x91" * 300 + b"\xc0")
add("json-deep", b"{\"error\": " + b"[" * 200 + b"]" * 200 + b"}")
# indefinite lengths
add("cbor-indef-map", b"\xbf" + rmap()[1:] + b"\xff")
add("cbor-indef-data", b"\xa3\x65bytes\x5f\x42\x01\x00\x42\x00\x00\xff\x65dtype\x65int16\x65shape\x9f\x02\xff")
add("cbor-indef-count", rmap(count=[]).replace(b"\x65count\x80", b"\x65count\x9f\x01\x9f\x02\xff\xff"))
add("cbor-indef-shape-bytes", rmap(shape_as_bytes=b"").replace(b"\x4e" if False else b"\x6eshape_as_bytes\x40", b"\x6eshape_as_bytes\x5f\x44\x02\x00\x00\x00\x44\x00\x00\x00\x00\xff"))
# tags
for t in (64, 65, 69, 72, 75, 76, 79, 80, 82, 83, 86, 87):
    add(f"cbor-typed-{t}", cbor2.dumps(cbor2.CBORTag(t, bytes(range(16)))))
add("cbor-multidim-40", cbor2.dumps(cbor2.CBORTag(40, [[2, 2], cbor2.CBORTag(70, struct.pack("<4I", 1, 2, 3, 4))])))
add("cbor-multidim-1040", cbor2.dumps(cbor2.CBORTag(1040, [[2, 3], bytes(6)])))
add("cbor-multidim-array-elems", cbor2.dumps(cbor2.CBORTag(40, [[2], [1, 2]])))
add("cbor-self-describe-map", b"\xd9\xd9\xf7" + rmap())
add("cbor-self-describe-twice", b"\xd9\xd9\xf7\xd9\xd9\xf7" + rmap())
add("cbor-tag-bytes-in-map", rmap(data=cbor2.CBORTag(82, struct.pack(">2d", 1.5, -2.0)), dtype="float64", order="big"))
add("cbor-count-typed", rmap(count=cbor2.CBORTag(69, struct.pack("<2H", 3, 4))))
add("cbor-bignum-tag", rmap(count=cbor2.CBORTag(2, b"\x01\x00")))
# layouts
add("r012", rmap())
add("r0130-cab", rmap(count=[], count_as_bytes=struct.pack("<2q", 5, 6)))
add("r0131", rmap(shape_as_bytes=struct.pack("<Q", 2), count_as_bytes=struct.pack("<2q", 5, 6)))
add("r-big", rmap(data=struct.pack(">2i", 1, 2), order="big", count_as_bytes=struct.pack(">2q", 1, 2)))
add("r-negative-cab", rmap(count=[], count_as_bytes=struct.pack("<2q", -1, 2)))
add("r-scalar-count", rmap(count=[]).replace(b"\x65count\x80", b"\x65count\x18\x2a"))
add("r-numpy-dtype", rmap(dtype="<i4"))
add("r-utf8-dtype", rmap(dtype="<\u00e9"))
add("r-truncated-end", rmap()[:-1])
add("r-duplicate-key", rmap()[:-1] + b"" if False else b"\xa6" + rmap()[1:] + b"\x65dtype\x65int32")
add("json-error", b'{"error": {"message": "bad request", "caused_by": ["a", "b"]}}')
add("json-not-error", b' {"a": 1}')
# msgpack-numpy
def mnp(ty="<f8", shape=(2,), data=struct.pack("<2d", 1, 2), kind=b"", nd=True, **extra):
    m = {b"nd": nd, b"type": ty, b"kind": kind, b"shape": list(shape), b"data": data}
    m.update(extra)
    return msgpack.packb(m, use_bin_type=True)
add("mp-f8", mnp())
add("mp-be-i4", mnp(">i4", (2, 1), struct.pack(">2i", 7, -7)))
add("mp-scalar", mnp("<f4", (), struct.pack("<f", 1.0), nd=False))
add("mp-pickle", mnp("|O", (1,), b"\x80\x04\x95"))
add("mp-structured", msgpack.packb({b"nd": True, b"type": [["a", "<i4"]], b"kind": b"V", b"shape": [1], b"data": bytes(4)}))
add("mp-ext-extra", mnp(x=msgpack.ExtType(5, b"abc")))
add("mp-fixext-extra", mnp(x=msgpack.ExtType(1, b"abcd")))
add("mp-timestamp-ext", mnp()[:-0] if False else b"\x81\xa1x\xd6\xff" + bytes(4))
add("mp-ext16", b"\x81\xa1x\xc8\x01\x00\x05" + bytes(256))
add("mp-str-keys", msgpack.packb({"nd": True, "type": "|u1", "kind": "", "shape": [3], "data": b"abc"}, use_bin_type=True))
add("mp-utf8-type", mnp(">\u20ac"))

# --- the CLI's demo samples --------------------------------------------------------------
if len(sys.argv) > 1:
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.argv[1], "payload", "--make-samples", d], check=True, stdout=subprocess.DEVNULL)
        for f in sorted(os.listdir(d)):
            add("sample-" + f, open(os.path.join(d, f), "rb").read())

for target in ("payload_decode", "payload_ffi"):
    out = ROOT / "corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    for name, b in seeds.items():
        # payload_ffi reads 2 header bytes (flags, alignment pad) first
        (out / name).write_bytes(b if target == "payload_decode" else b"\x00\x00" + b)
print(f"{len(seeds)} seeds written to fuzz/corpus/payload_decode and payload_ffi")
