//! Hostile HDF5 files: not HDF5 at all, truncated copies, corrupted chunks (flipped bytes,
//! decompression bombs, short streams, fletcher32 mismatches, stored sizes past the file).
//! Metadata bit flips run in subprocesses (see `subproc`).

use std::ffi::CString;
use std::path::{Path, PathBuf};

use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::vh5_status::{self, *};
use vh5::transfer::options::{with_overrides, PlannerMode};

use super::{f64s, find, flip, patch, Guarded, Report};
use crate::common::{last_error, shared_data, TRow, TempDir};

fn cs(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Shape of the sample dataset "x" and its chunk shape.
pub const X_SHAPE: [u64; 2] = [40, 30];
pub const X_CHUNK: [u64; 2] = [10, 10];

/// Value of element (i, j) of "x".
pub fn x_value(i: u64, j: u64) -> f64 {
    (i * 1000 + j) as f64 + 0.25
}

/// Write the sample file: "x" float64 40x30, chunks 10x10, shuffle + gzip (+ fletcher32);
/// "b" float64 64x64 in one 32 KiB chunk of incompressible values, gzip; "c" int32[50]
/// contiguous. libhdf5 1.10's default format on any libhdf5 (`fapl_v110_format`): superblock 0,
/// v1 object headers, v1 B-tree chunk index, a local heap (the bit flips look for them).
pub fn make_sample(path: &Path, fletcher: bool) {
    let _s = vh5::hdf5::session();
    unsafe {
        let fapl = crate::common::fapl_v110_format();
        let f = H5Fcreate(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        H5Pclose(fapl);
        assert!(f >= 0);
        let mk = |name: &str, shape: &[u64], chunk: Option<&[u64]>, gzip: bool, mtype: i64, data: *const std::ffi::c_void| {
            let space = H5Screate_simple(shape.len() as i32, shape.as_ptr(), std::ptr::null());
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            if let Some(c) = chunk {
                assert!(H5Pset_chunk(dcpl, c.len() as i32, c.as_ptr()) >= 0);
                if gzip {
                    assert!(H5Pset_shuffle(dcpl) >= 0);
                    assert!(H5Pset_deflate(dcpl, 6) >= 0);
                }
                if fletcher {
                    assert!(H5Pset_fletcher32(dcpl) >= 0);
                }
            }
            let d = H5Dcreate2(f, cs(name).as_ptr(), mtype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            assert!(d >= 0);
            assert!(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
            H5Dclose(d);
            H5Pclose(dcpl);
            H5Sclose(space);
        };
        let x: Vec<f64> = (0..40u64).flat_map(|i| (0..30u64).map(move |j| x_value(i, j))).collect();
        mk("x", &X_SHAPE, Some(&X_CHUNK), true, *H5T_NATIVE_DOUBLE, x.as_ptr() as *const _);
        let b: Vec<f64> =
            crate::common::bytes(64 * 64 * 8, 11).chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap()) % 1e6).map(|v| if v.is_finite() { v } else { 1.5 }).collect();
        mk("b", &[64, 64], Some(&[64, 64]), true, *H5T_NATIVE_DOUBLE, b.as_ptr() as *const _);
        let c: Vec<i32> = (0..50).collect();
        mk("c", &[50], None, false, *H5T_NATIVE_INT, c.as_ptr() as *const _);
        assert!(H5Fclose(f) >= 0);
    }
}

/// File offset and stored size of the chunk of `name` at `origin`.
pub fn chunk_addr(path: &Path, name: &str, origin: &[u64]) -> (u64, u64) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fopen(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT);
        let d = H5Dopen2(f, cs(name).as_ptr(), H5P_DEFAULT);
        let (mut mask, mut addr, mut size) = (0u32, 0u64, 0u64);
        assert!(H5Dget_chunk_info_by_coord(d, origin.as_ptr(), &mut mask, &mut addr, &mut size) >= 0);
        H5Dclose(d);
        H5Fclose(f);
        (addr, size)
    }
}

/// File offset and size of the object header of `name`.
pub fn header_addr(path: &Path, name: &str) -> (u64, u64) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fopen(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT);
        let header = vh5::hdf5::compat::object_header(f, cs(name).as_ptr(), H5P_DEFAULT);
        H5Fclose(f);
        header.expect("object header info")
    }
}

/// Open a file through the C ABI: (status, message, id).
pub fn c_open(path: &Path, flags: u32) -> (vh5_status, String, i64) {
    let mut f = -1;
    let st = unsafe { vh5_file_open(cs(path.to_str().unwrap()).as_ptr(), flags, &mut f) };
    (st, last_error(), f)
}

/// Open a dataset through the C ABI: (status, message, id).
pub fn c_dopen(f: i64, name: &str) -> (vh5_status, String, i64) {
    let mut d = -1;
    let st = unsafe { vh5_dataset_open(f, cs(name).as_ptr(), &mut d) };
    (st, last_error(), d)
}

pub fn c_close(id: i64) {
    if id >= 0 {
        assert_eq!(vh5_close(id), VH5_OK, "{}", last_error());
    }
}

/// `vh5_read_many_slices` into the usable bytes of a guarded buffer (C order).
pub fn c_read(d: i64, g: &mut Guarded, dtype: Dtype, shape: &[u64], rows: &[TRow], flags: u32) -> (vh5_status, String) {
    let t = crate::common::tables(rows);
    let itemsize = dtype.itemsize().unwrap();
    let a = vh5_array {
        base: g.ptr() as *mut _,
        base_len: g.len,
        offset: 0,
        dtype: dtype.code(),
        itemsize,
        ndim: shape.len() as u32,
        shape: shape.as_ptr(),
        strides: std::ptr::null(),
    };
    let st = unsafe { vh5_read_many_slices(d, &a, rows.len(), t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), t[3].as_ptr(), t[4].as_ptr(), flags) };
    (st, last_error())
}

pub fn row(s: &[u64], d: &[u64], c: &[u64]) -> TRow {
    TRow { s: s.to_vec(), d: d.to_vec(), c: c.to_vec(), ss: vec![1; s.len()], ds: vec![1; s.len()] }
}

#[allow(clippy::too_many_arguments)]
/// Open `path`/`name`, read `rows` into a fresh guarded (rows x 5 x 5 float64) buffer in
/// `mode`, close. Returns the status, message and buffer. Open failures are returned as is.
pub fn read_x(path: &Path, name: &str, rows: &[TRow], shape: &[u64], mode: Option<PlannerMode>, threads: usize, flags: u32, dtype: Dtype) -> (vh5_status, String, Guarded) {
    let n: u64 = shape.iter().product();
    let mut g = Guarded::new(n as usize * dtype.itemsize().unwrap(), 0x5A);
    let (st, m, f) = c_open(path, 0);
    if st != VH5_OK {
        return (st, m, g);
    }
    let (st, m, d) = c_dopen(f, name);
    if st != VH5_OK {
        c_close(f);
        return (st, m, g);
    }
    let (st, m) = with_overrides(mode, Some(threads), || c_read(d, &mut g, dtype, shape, rows, flags));
    c_close(d);
    c_close(f);
    (st, m, g)
}

/// Copy `src` to `dst` truncated to `len` bytes; with `patch_eof`, the superblock's
/// end-of-file address is set to `len` (version 0: offset 40; version 2/3: offset 28 and the
/// superblock checksum recomputed) so libhdf5's "truncated file" check at open passes and the
/// damage is met later (dataset open, read). HDF5 File Format Specification, II.A.
pub fn truncated_copy(src: &Path, dst: &Path, len: u64, patch_eof: bool) {
    let mut b = std::fs::read(src).unwrap();
    b.truncate(len as usize);
    if patch_eof {
        match b[8] {
            0 => b[40..48].copy_from_slice(&len.to_le_bytes()),
            2 | 3 => {
                assert_eq!((b[9], b[10]), (8, 8), "8-byte offsets and lengths expected");
                b[28..36].copy_from_slice(&len.to_le_bytes());
                let sum = lookup3(&b[..44], 0);
                b[44..48].copy_from_slice(&sum.to_le_bytes());
            }
            v => panic!("superblock version {v}"),
        }
    }
    std::fs::write(dst, b).unwrap();
}

/// Bob Jenkins' lookup3 `hashlittle`, the checksum of HDF5 metadata (`H5_checksum_lookup3`).
pub fn lookup3(key: &[u8], initval: u32) -> u32 {
    let mut a = 0xdead_beef_u32.wrapping_add(key.len() as u32).wrapping_add(initval);
    let (mut b, mut c) = (a, a);
    let w = |k: &[u8], i: usize| -> u32 {
        k.get(i..i + 4).map_or_else(|| k[i..].iter().rev().fold(0u32, |acc, &x| (acc << 8) | x as u32), |s| u32::from_le_bytes(s.try_into().unwrap()))
    };
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(w(k, 0));
        b = b.wrapping_add(w(k, 4));
        c = c.wrapping_add(w(k, 8));
        // mix
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(4);
        b = b.wrapping_add(a);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    let part = |lo: usize| if k.len() > lo { w(&k[lo..k.len().min(lo + 4)], 0) } else { 0 };
    a = a.wrapping_add(part(0));
    b = b.wrapping_add(part(4));
    c = c.wrapping_add(part(8));
    // final
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

const MODES: [(Option<PlannerMode>, &str); 3] = [(Some(PlannerMode::Chunks), "chunks"), (Some(PlannerMode::Rows), "rows"), (Some(PlannerMode::Auto), "auto")];

pub fn run(rep: &mut Report, tmp: &TempDir) {
    let p = |n: &str| -> PathBuf { tmp.path(n) };
    let sample = p("sample.h5");
    make_sample(&sample, false);
    let flen = std::fs::metadata(&sample).unwrap().len();

    // --- not HDF5 at all ---
    std::fs::write(p("empty.h5"), b"").unwrap();
    rep.check(
        "file",
        "empty file (0 bytes)",
        "vh5_file_open",
        VH5_ERR_IO,
        {
            let (s, m, _) = c_open(&p("empty.h5"), 0);
            (s, m)
        },
        &["not an HDF5 file"],
    );
    std::fs::write(p("text.h5"), b"CDF\x01 this is a netCDF-3 classic header, not HDF5\n").unwrap();
    rep.check(
        "file",
        "netCDF-3 / text bytes",
        "vh5_file_open",
        VH5_ERR_IO,
        {
            let (s, m, _) = c_open(&p("text.h5"), 0);
            (s, m)
        },
        &["not an HDF5 file"],
    );
    std::fs::create_dir_all(p("adir.h5")).unwrap();
    rep.check(
        "file",
        "a directory",
        "vh5_file_open",
        VH5_ERR_IO,
        {
            let (s, m, _) = c_open(&p("adir.h5"), 0);
            (s, m)
        },
        &["directory"],
    );
    rep.check(
        "file",
        "missing path",
        "vh5_file_open",
        VH5_ERR_IO,
        {
            let (s, m, _) = c_open(&p("missing.h5"), 0);
            (s, m)
        },
        &["missing.h5"],
    );
    let mut sig_only = b"\x89HDF\r\n\x1a\n".to_vec();
    sig_only.extend_from_slice(&[0u8; 8]);
    std::fs::write(p("sig.h5"), &sig_only).unwrap();
    rep.check(
        "file",
        "HDF5 signature + 8 zero bytes",
        "vh5_file_open",
        VH5_ERR_HDF5,
        {
            let (s, m, _) = c_open(&p("sig.h5"), 0);
            (s, m)
        },
        &["could not open"],
    );

    // --- truncated copies of the self-made file ---
    let (xh, xh_len) = header_addr(&sample, "x");
    let mut chunks: Vec<(u64, u64, [u64; 2])> = Vec::new();
    for i in 0..4 {
        for j in 0..3 {
            let (a, s) = chunk_addr(&sample, "x", &[i * 10, j * 10]);
            chunks.push((a, s, [i, j]));
        }
    }
    chunks.sort();
    let cut_superblock = 40u64;
    rep.check(
        "truncated",
        "self-made file cut at byte 40 (inside the superblock)",
        "vh5_file_open",
        VH5_ERR_HDF5,
        {
            truncated_copy(&sample, &p("t1.h5"), cut_superblock, false);
            let (s, m, _) = c_open(&p("t1.h5"), 0);
            (s, m)
        },
        &["could not open"],
    );
    rep.check(
        "truncated",
        "self-made file cut at half its length",
        "vh5_file_open",
        VH5_ERR_HDF5,
        {
            truncated_copy(&sample, &p("t2.h5"), flen / 2, false);
            let (s, m, _) = c_open(&p("t2.h5"), 0);
            (s, m)
        },
        &["truncated file"],
    );
    // Cut inside the object header of "x" (end-of-file address patched: open succeeds).
    let got = {
        truncated_copy(&sample, &p("t3.h5"), xh + xh_len / 2, true);
        let (s, m, f) = c_open(&p("t3.h5"), 0);
        rep.ensure(s == VH5_OK, || format!("t3 open: {m}"));
        let (s, m, d) = c_dopen(f, "x");
        c_close(d);
        c_close(f);
        (s, m)
    };
    rep.check("truncated", "cut inside the object header of `x`, EOF address patched", "vh5_dataset_open", VH5_ERR_HDF5, got, &["`x`"]);
    // Cut inside the chunk stored last (EOF address patched): reading it fails.
    let (last_addr, last_size, last_coord) = *chunks.last().unwrap();
    let last_origin = [last_coord[0] * 10, last_coord[1] * 10];
    let cut = last_addr + last_size / 2;
    let after_meta = std::fs::read(&sample).unwrap()[cut as usize..].to_vec();
    rep.ensure(xh < cut, || "the header of x lies after the last chunk".into());
    let _ = after_meta;
    for (mode, mname) in MODES {
        truncated_copy(&sample, &p("t4.h5"), cut, true);
        let r = [row(&last_origin, &[0, 0], &[5, 5])];
        let (st, m, g) = read_x(&p("t4.h5"), "x", &r, &[5, 5], mode, 1, 0, Dtype::Float64);
        let coord = format!("chunk [{}, {}]", last_coord[0], last_coord[1]);
        // x is shuffle+gzip: every planner fetches its chunks raw (vh5 decodes them).
        let _ = mname;
        let names: Vec<&str> = vec![coord.as_str(), "addr overflow"];
        rep.check("truncated", format!("cut inside the last stored chunk, EOF patched; VH5_PLANNER={mname}"), "vh5_read_many_slices", VH5_ERR_HDF5, (st, m), &names);
        rep.ensure(g.guards_intact(), || format!("t4 {mname}: guard bytes overwritten"));
    }
    // Good chunks of the same truncated file still read.
    {
        let (first_addr, _, fc) = chunks[0];
        rep.ensure(first_addr < cut, || "first chunk after the cut".into());
        let o = [fc[0] * 10, fc[1] * 10];
        let (st, m, g) = read_x(&p("t4.h5"), "x", &[row(&o, &[0, 0], &[2, 2])], &[2, 2], Some(PlannerMode::Chunks), 1, 0, Dtype::Float64);
        rep.ensure(st == VH5_OK && f64s(g.body()) == vec![x_value(o[0], o[1]), x_value(o[0], o[1] + 1), x_value(o[0] + 1, o[1]), x_value(o[0] + 1, o[1] + 1)], || {
            format!("t4 intact chunk: {st:?} {m}")
        });
    }

    // --- corrupted chunk bytes ---
    let (a12, s12) = chunk_addr(&sample, "x", &[10, 20]);
    let bad = p("flipped.h5");
    std::fs::copy(&sample, &bad).unwrap();
    patch(&bad, a12 + s12 / 2, &[0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33]);
    let r = [row(&[12, 21], &[0, 0], &[5, 5])];
    for (mode, mname) in MODES {
        for threads in [1, 2] {
            let (st, m, g) = read_x(&bad, "x", &r, &[5, 5], mode, threads, 0, Dtype::Float64);
            // Every planner: vh5 decodes (never retried through libhdf5).
            let names: &[&str] = &["chunk [1, 2]", "dataset offset [10, 20]", "corrupted"];
            if threads == 1 {
                rep.check("corrupt chunk", format!("8 bytes overwritten inside a gzip chunk; VH5_PLANNER={mname}"), "vh5_read_many_slices", VH5_ERR_HDF5, (st, m.clone()), names);
            } else {
                rep.ensure(st == VH5_ERR_HDF5, || format!("flipped {mname} 2 threads: {st:?} {m}"));
            }
            rep.ensure(g.untouched(), || format!("flipped {mname}: destination written for a corrupt chunk"));
        }
    }
    // Type conversion float64 -> float32: vh5 decodes, libhdf5 converts (H5Tconvert).
    {
        let (st, m, g) = read_x(&bad, "x", &r, &[5, 5], Some(PlannerMode::Chunks), 1, VH5_SLICES_CONVERT, Dtype::Float32);
        rep.check(
            "corrupt chunk",
            "same chunk, VH5_SLICES_CONVERT to float32 (vh5 decodes, libhdf5 converts); chunks",
            "vh5_read_many_slices",
            VH5_ERR_HDF5,
            (st, m),
            &["chunk [1, 2]", "dataset offset [10, 20]", "corrupted"],
        );
        rep.ensure(g.guards_intact(), || "flipped convert: guards".into());
    }
    // A good chunk of the same file reads fine.
    {
        let (st, m, g) = read_x(&bad, "x", &[row(&[0, 0], &[0, 0], &[5, 5])], &[5, 5], Some(PlannerMode::Chunks), 1, 0, Dtype::Float64);
        rep.ensure(st == VH5_OK && f64s(g.body())[6] == x_value(1, 1), || format!("flipped: intact chunk {st:?} {m}"));
    }

    // --- decompression bomb / short stream in chunk "b" (32 KiB) ---
    let (ab, sb) = chunk_addr(&sample, "b", &[0, 0]);
    let zlib = |data: &[u8]| {
        use std::io::Write;
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let b_rows = [row(&[3, 4], &[0, 0], &[5, 5])];
    for (tag, plain, fname) in [("inflates to 16 MiB (512x the chunk)", vec![0u8; 16 << 20], "bomb.h5"), ("inflates to 100 bytes (chunk: 32 KiB)", vec![7u8; 100], "short.h5")] {
        let z = zlib(&plain);
        rep.ensure((z.len() as u64) <= sb, || format!("{tag}: stream of {} bytes does not fit the stored {sb}", z.len()));
        let f = p(fname);
        std::fs::copy(&sample, &f).unwrap();
        // b is shuffled then deflated: the stored bytes are the zlib stream (mask 0).
        let mut stored = z.clone();
        stored.resize(sb as usize, 0);
        patch(&f, ab, &stored);
        for (mode, mname) in MODES {
            let (st, m, g) = read_x(&f, "b", &b_rows, &[5, 5], mode, 1, 0, Dtype::Float64);
            // Every planner: vh5 decodes (libhdf5 1.10 would keep the first 32 KiB of the
            // bomb, or pad the short stream with uninitialised bytes): bounded by the chunk
            // size, and the chunk is reported corrupt.
            rep.check("corrupt chunk", format!("valid zlib stream that {tag}; VH5_PLANNER={mname}"), "vh5_read_many_slices", VH5_ERR_HDF5, (st, m), &["chunk [0, 0]", "corrupted"]);
            rep.ensure(g.untouched(), || format!("{tag} {mname}: destination written"));
        }
        // Many rows in auto mode: the planner reads the chunk whole, vh5 decodes it.
        let many: Vec<TRow> = (0..8).map(|k| row(&[k * 8, 0], &[k, 0], &[1, 5])).collect();
        let (st, m, g) = read_x(&f, "b", &many, &[8, 5], Some(PlannerMode::Auto), 1, 0, Dtype::Float64);
        rep.check(
            "corrupt chunk",
            format!("valid zlib stream that {tag}; 8 rows in the chunk, VH5_PLANNER=auto"),
            "vh5_read_many_slices",
            VH5_ERR_HDF5,
            (st, m),
            &["chunk [0, 0]", "corrupted"],
        );
        rep.ensure(g.untouched(), || format!("{tag} auto many: destination written"));
    }

    // --- fletcher32 mismatch ---
    {
        let f = p("fletcher.h5");
        make_sample(&f, true);
        let (a, s) = chunk_addr(&f, "x", &[10, 20]);
        flip(&f, a + s - 2, 0x01); // inside the stored checksum
        for (mode, mname) in MODES {
            let (st, m, g) = read_x(&f, "x", &r, &[5, 5], mode, 1, 0, Dtype::Float64);
            let _ = mname;
            let names: &[&str] = &["chunk [1, 2]", "fletcher32", "corrupted"];
            rep.check("corrupt chunk", format!("fletcher32 checksum byte flipped; VH5_PLANNER={mname}"), "vh5_read_many_slices", VH5_ERR_HDF5, (st, m), names);
            rep.ensure(g.untouched(), || format!("fletcher {mname}: destination written"));
        }
    }

    // --- stored chunk size in the chunk index larger than the file ---
    {
        let f = p("bigsize.h5");
        std::fs::copy(&sample, &f).unwrap();
        let bytes = std::fs::read(&f).unwrap();
        // v1 B-tree nodes of chunk indexes: "TREE", node type 1; key 0 = (chunk size u32,
        // filter mask u32, offsets) right after the 24-byte node header.
        let mut at = 0;
        let mut patched = 0;
        while let Some(t) = find(&bytes, b"TREE", at) {
            if bytes[t + 4] == 1 && bytes[t + 5] == 0 {
                let key_size = u32::from_le_bytes(bytes[t + 24..t + 28].try_into().unwrap()) as u64;
                if key_size == sb {
                    patch(&f, t as u64 + 24, &0x7fff_0000u32.to_le_bytes());
                    patched += 1;
                }
            }
            at = t + 4;
        }
        rep.ensure(patched == 1, || format!("bigsize: patched {patched} B-tree keys"));
        for (mode, mname) in MODES {
            let (st, m, g) = read_x(&f, "b", &b_rows, &[5, 5], mode, 1, 0, Dtype::Float64);
            let _ = mname;
            let names: &[&str] = &["chunk [0, 0]", "exceeds the file"];
            rep.check(
                "corrupt chunk",
                format!("chunk index claims 2147418112 stored bytes (file: {flen}); VH5_PLANNER={mname}"),
                "vh5_read_many_slices",
                VH5_ERR_HDF5,
                (st, m),
                names,
            );
            rep.ensure(g.untouched(), || format!("bigsize {mname}: destination written"));
        }
    }

    real_file_truncations(rep, tmp);
}

/// Truncated copies of a real netCDF-4 file: extra assertions (not table rows, so the table
/// is the same with and without the shared data).
fn real_file_truncations(rep: &mut Report, tmp: &TempDir) {
    let Some(data) = shared_data() else {
        eprintln!("hostile_inputs: skipping the real-file truncations: no shared data (set VH5_SHARED_DATA)");
        return;
    };
    let real = data.join("real/test1.nc");
    let len = std::fs::metadata(&real).unwrap().len();
    let head = std::fs::read(&real).unwrap();
    let sb_version = head[8];
    if sb_version >= 2 {
        // Our lookup3 reproduces the stored superblock checksum (so patched copies are valid).
        rep.ensure(lookup3(&head[..44], 0) == u32::from_le_bytes(head[44..48].try_into().unwrap()), || "lookup3 does not match the superblock checksum".into());
    }
    let (mut at_open, mut at_dopen, mut at_read) = (0, 0, 0);
    let (st, m, f) = c_open(&real, 0);
    rep.ensure(st == VH5_OK, || format!("real file: {m}"));
    c_close(f);
    for cut in [16, 100, 1000, 4096, len / 3, len / 2, len - 1000, len - 1] {
        let t = tmp.path("real-trunc.nc");
        truncated_copy(&real, &t, cut, false);
        let (st, m, f) = c_open(&t, 0);
        c_close(f);
        rep.ensure(st == VH5_ERR_HDF5 || st == VH5_ERR_IO, || format!("real file cut at {cut}: {st:?} {m}"));
        rep.ensure(m.contains("truncated file") || m.contains("not an HDF5") || m.contains("could not open"), || format!("real file cut at {cut}: message {m}"));
        if cut > 100 {
            // Past libhdf5's end-of-file check: the damage shows at dataset open or read.
            truncated_copy(&real, &t, cut, true);
            let (st, m, f) = c_open(&t, 0);
            if st == VH5_OK {
                let (st2, m2, d) = c_dopen(f, "tas");
                if st2 == VH5_OK {
                    let mut g = Guarded::new(12 * 8, 0);
                    let r = [TRow { s: vec![0, 0, 0], d: vec![0, 0, 0], c: vec![12, 1, 1], ss: vec![1; 3], ds: vec![1; 3] }];
                    let mut info: vh5_dataset_info = unsafe { std::mem::zeroed() };
                    let sti = unsafe { vh5_dataset_get_info(d, &mut info) };
                    let dt = if sti == VH5_OK && info.dtype == Dtype::Float32.code() { Dtype::Float32 } else { Dtype::Float64 };
                    let (st3, m3) = c_read(d, &mut g, dt, &[12, 1, 1], &r, VH5_SLICES_CLIP);
                    rep.ensure((st3 == VH5_OK || st3 == VH5_ERR_HDF5) && g.guards_intact(), || format!("real cut {cut} read: {st3:?} {m3}"));
                    if st3 == VH5_ERR_HDF5 {
                        at_read += 1;
                        rep.ensure(m3.contains("row 0") || m3.contains("chunk ["), || format!("real cut {cut} read: culprit not named: {m3}"));
                    }
                    c_close(d);
                } else {
                    at_dopen += 1;
                    rep.ensure(st2 == VH5_ERR_HDF5 && m2.contains("tas"), || format!("real cut {cut} dataset open: {st2:?} {m2}"));
                }
                c_close(f);
            } else {
                at_open += 1;
                rep.ensure(st == VH5_ERR_HDF5 && m.contains("could not open"), || format!("real cut {cut} patched open: {st:?} {m}"));
            }
        }
    }
    // vh5 closes every id it opened, on every error path.
    let open_ids = unsafe { H5Fget_obj_count(H5F_OBJ_ALL as i64, H5F_OBJ_ALL) };
    rep.ensure(open_ids == 0, || format!("{open_ids} libhdf5 ids still open after the real-file truncations"));
    eprintln!("hostile_inputs: real-file truncations of {} checked (superblock version {sb_version}; with the EOF address patched, failures at open {at_open}, dataset open {at_dopen}, read {at_read})", real.display());
}
