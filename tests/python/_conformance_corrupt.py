"""Corruption campaign of the conformance suite: byte flips and truncations of generated files.

For a file built from a storage spec, :func:`regions` splits its bytes into *chunk* regions
(``H5Dget_chunk_info`` of every stored chunk; the raw data of a contiguous dataset,
``H5Dget_offset`` / ``H5Dget_storage_size``) and *metadata* (everything else: superblock,
object headers, B-trees / chunk indexes, heaps, free space). :func:`mutations` draws, from the
spec's seed, two flips in metadata bytes, one in a chunk byte (when there is one) and one
truncation point; :func:`apply` writes the damaged copy.
"""

from __future__ import annotations

import os

import h5py
import numpy as np


def regions(path, name="d"):
    """(file size, [(offset, size, label)] of raw-data regions)."""
    out = []
    with h5py.File(path, "r") as f:
        ds = f[name].id
        lay = ds.get_create_plist().get_layout()
        if lay == h5py.h5d.CHUNKED:
            for i in range(ds.get_num_chunks()):
                info = ds.get_chunk_info(i)
                if info.byte_offset is not None and info.size:
                    out.append((int(info.byte_offset), int(info.size), f"chunk {tuple(info.chunk_offset)}"))
        elif lay == h5py.h5d.CONTIGUOUS:
            off = ds.get_offset()
            if off is not None and ds.get_storage_size():
                out.append((int(off), int(ds.get_storage_size()), "contiguous data"))
    return os.path.getsize(path), out


def size_entries(path, name="d"):
    """[(offset, stored size)] of the 4-byte stored-size fields of the version-1 B-tree keys of
    the unfiltered chunked dataset `name` (layout version 3), found by searching the file for
    each key (size, filter mask, chunk offsets, 0) h5py reports; [] for other datasets."""
    import struct

    with h5py.File(path, "r") as f:
        ds = f[name].id
        dcpl = ds.get_create_plist()
        if dcpl.get_layout() != h5py.h5d.CHUNKED or dcpl.get_nfilters():
            return []
        infos = [ds.get_chunk_info(i) for i in range(ds.get_num_chunks())]
    with open(path, "rb") as fh:
        b = fh.read()
    out = []
    for info in infos:
        if info.byte_offset is None:
            continue
        key = struct.pack(f"<II{len(info.chunk_offset) + 1}Q", info.size, info.filter_mask, *info.chunk_offset, 0)
        at = b.find(key)
        if at >= 0:
            out.append((at, int(info.size)))
    return out


def pipeline_type_fields(path, name="d"):
    """Offsets of the 2-byte type field of the filter pipeline message (type 11) of dataset
    `name` in a version-1 object header (no checksum: a flip there goes unnoticed), found by
    searching the file for the message header and the start of its data (version, filter
    count); [] for other datasets."""
    with h5py.File(path, "r") as f:
        dcpl = f[name].id.get_create_plist()
        if dcpl.get_layout() != h5py.h5d.CHUNKED or not dcpl.get_nfilters():
            return []
        n = dcpl.get_nfilters()
    with open(path, "rb") as fh:
        b = fh.read()
    out, at = [], b.find(b"\x0b\x00")
    while at >= 0:
        if at + 10 <= len(b) and b[at + 5 : at + 8] == b"\0\0\0" and b[at + 8] == 1 and b[at + 9] == n:
            out.append(at)
        at = b.find(b"\x0b\x00", at + 1)
    return out


def loses_pipeline(fields, mut):
    """Whether the flip `mut` changes the type of the pipeline message (`fields`, from
    :func:`pipeline_type_fields` of the undamaged file): libhdf5 then ignores the message and
    reads the filtered chunks as unfiltered ones, shorter than a chunk (libhdf5 < 2.2 reads the
    rest as uninitialised memory, h5py's 2.0 as well)."""
    kind, off, _, _ = mut
    return kind == "metadata flip" and any(at <= off < at + 2 for at in fields)


def shrinks_size_entry(entries, mut):
    """Whether the flip `mut` makes an unfiltered chunk's stored-size entry (`entries`, from
    :func:`size_entries` of the undamaged file) smaller than the chunk (libhdf5 < 2.2 then
    reads bytes past the entry that it never read: uninitialised memory, different from
    process to process; 2.2 refuses such a chunk)."""
    kind, off, x, _ = mut
    if kind != "metadata flip":
        return False
    return any(at <= off < at + 4 and size ^ (x << 8 * (off - at)) < size for at, size in entries)


def mutations(path, seed):
    """[(kind, offset, xor byte or None, label)]: a metadata flip, a chunk flip, a truncation."""
    rng = np.random.default_rng(seed ^ 0x5EED)
    size, regs = regions(path)
    data = np.zeros(size, bool)
    for off, n, _ in regs:
        data[off : off + n] = True
    meta = np.nonzero(~data)[0]
    muts = []
    for _ in range(2 if len(meta) else 0):
        # the 8-byte signature only now and then: the rest of the metadata is the interesting part
        pick = meta[meta >= 8] if (meta >= 8).any() and rng.integers(0, 8) else meta
        off = int(rng.choice(pick))
        muts.append(("metadata flip", off, int(rng.integers(1, 256)), f"metadata byte {off}"))
    if regs:
        off, n, label = regs[int(rng.integers(0, len(regs)))]
        at = off + int(rng.integers(0, n))
        muts.append(
            (
                "chunk flip" if label.startswith("chunk") else "raw data flip",
                at,
                int(rng.integers(1, 256)),
                f"{label} byte {at - off} of {n}",
            )
        )
    cut = int(rng.integers(1, size))
    muts.append(("truncation", cut, None, f"cut at {cut} of {size}"))
    return muts


def apply(src, dst, mut):
    kind, off, x, _ = mut
    with open(src, "rb") as fh:
        b = bytearray(fh.read())
    if x is None:
        b = b[:off]
    else:
        b[off] ^= x
    with open(dst, "wb") as fh:
        fh.write(b)
