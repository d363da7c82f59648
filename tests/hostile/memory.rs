//! Chunks larger than memory limits allow: a chunk at HDF5's maximum size (just under
//! 4 GiB), chunks above `VH5_MAX_CHUNK_BYTES`, and allocations that really fail (a child
//! process under a low RLIMIT_AS) — `VH5_ERR_NO_MEMORY`, never an abort.

use std::ffi::CString;

use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status::*;
use vh5::transfer::options::{with_max_chunk_bytes, with_overrides, PlannerMode};

use super::files::{c_close, c_dopen, c_open, read_x, row};
use super::shapes::make_sparse;
use super::subproc::run_child;
use super::{f64s, Report};
use crate::common::TempDir;

pub fn run(rep: &mut Report, tmp: &TempDir) {
    const C: &str = "chunk size / memory";
    const R: &str = "vh5_read_many_slices";
    // A chunk at HDF5's limit: 65535 x 65535 uint8 = 4,294,836,225 bytes (< 4 GiB), sparse.
    let maxc = tmp.path("maxchunk.h5");
    make_sparse(&maxc, "m", &[131_070, 131_070], &[131_070, 131_070], &[65_535, 65_535], 9.0, false, true).unwrap();
    for (mode, mname) in [(PlannerMode::Chunks, "chunks"), (PlannerMode::Rows, "rows"), (PlannerMode::Auto, "auto")] {
        let r = [row(&[131_067, 65_534], &[0, 0], &[3, 3])];
        let (st, m, g) = read_x(&maxc, "m", &r, &[3, 3], Some(mode), 2, 0, Dtype::UInt8);
        rep.check(C, format!("uint8 chunk 65535 x 65535 (4,294,836,225 bytes > VH5_MAX_CHUNK_BYTES 1 GiB), unallocated; {mname}"), R, VH5_OK, (st, m), &[]);
        rep.ensure(g.body() == [9u8; 9] && g.guards_intact(), || format!("max chunk {mname}: {:?}", g.body()));
    }
    // A chunk above a lowered limit: read piece by piece, same data.
    {
        let sample = tmp.path("sample.h5");
        let r = [row(&[3, 4], &[0, 0], &[5, 5]), row(&[40, 50], &[5, 0], &[5, 5])];
        let (st0, m0, g0) = read_x(&sample, "b", &r, &[10, 5], Some(PlannerMode::Rows), 1, 0, Dtype::Float64);
        rep.ensure(st0 == VH5_OK, || format!("b rows: {m0}"));
        let (st, m, g) = with_max_chunk_bytes(4096, || read_x(&sample, "b", &r, &[10, 5], Some(PlannerMode::Chunks), 2, 0, Dtype::Float64));
        rep.check(C, "gzip chunk of 32 KiB with VH5_MAX_CHUNK_BYTES=4096; chunks", R, VH5_OK, (st, m), &[]);
        rep.ensure(g.body() == g0.body(), || "limit: data differs from the rows strategy".into());
        // Rust API: no chunk read whole under the limit, both read whole above it.
        let (_, _, f) = c_open(&sample, 0);
        let (_, _, d) = c_dopen(f, "b");
        let mut buf = vec![0u8; 10 * 5 * 8];
        let stats = |limit: u64, buf: &mut Vec<u8>| {
            with_max_chunk_bytes(limit, || {
                with_overrides(Some(PlannerMode::Chunks), Some(1), || {
                    let mut dst = vh5::transfer::DstArray {
                        buf: &mut buf[..],
                        layout: vh5::transfer::ArrayLayout { shape: vec![10, 5], strides: vec![40, 8], offset: 0, base_len: 400, itemsize: 8 },
                        dtype: Dtype::Float64,
                    };
                    let t = crate::common::tables(&r);
                    let table = vh5::transfer::SliceTable::new(2, 2, &t[0], &t[1], &t[2], None, None).unwrap();
                    vh5::transfer::read_many_slices(d, &mut dst, &table, 0).unwrap()
                })
            })
        };
        let low = stats(4096, &mut buf);
        rep.ensure(low.chunks_read == 0 && low.hdf5_reads == 2 && buf == g0.body(), || format!("limit 4096: {low:?}"));
        let high = stats(1 << 20, &mut buf);
        rep.ensure(high.chunks_read == 1 && high.raw_chunks == 1 && buf == g0.body(), || format!("limit 1 MiB: {high:?}"));
        c_close(d);
        c_close(f);
    }

    // Allocations that fail: a child process whose address space is capped at its size + N MiB.
    let nomem = tmp.path("nomem.h5");
    // "r": float64 8192 x 8192 in ONE unallocated chunk (512 MiB; fill value 1.5).
    make_sparse(&nomem, "r", &[8192, 8192], &[8192, 8192], &[8192, 8192], 1.5, false, false).unwrap();
    // "z": float64 4096 x 8192 in one gzip chunk (256 MiB of zeros, ~256 KiB stored).
    write_zeros_gzip(&nomem, "z", &[4096, 8192]);
    let nm = "VH5_ERR_NO_MEMORY";
    for (case, input, expected, names) in [
        (
            "nomem:r:chunks:128",
            "unallocated 512 MiB chunk read whole (chunks), RLIMIT_AS = size + 128 MiB",
            nm,
            vec!["chunk [0, 0] (dataset offset [0, 0])", "cannot allocate 536870912 bytes"],
        ),
        ("nomem:z:chunks:128", "gzip 256 MiB chunk decoded by vh5 (chunks), RLIMIT_AS = size + 128 MiB", nm, vec!["chunk [0, 0]", "cannot allocate 268435460 bytes"]),
        ("nomem:r:rows:128", "unallocated 512 MiB chunk, rows (libhdf5 fills the selection only)", "VH5_OK", vec!["values [1.5, 1.5, 1.5, 1.5]"]),
        ("nomem:z:rows:128", "gzip 256 MiB chunk, rows (vh5 decodes gzip pipelines in every planner), same limit", nm, vec!["chunk [0, 0]", "cannot allocate 268435460 bytes"]),
    ] {
        let (st, msg) = run_child(case, &nomem, &[]);
        if st != expected {
            rep.failures.push(format!("[nomem] {case}: expected {expected}, got {st}: {msg}"));
        }
        for n in names {
            if !msg.contains(n) {
                rep.failures.push(format!("[nomem] {case}: message does not name {n:?}: {msg}"));
            }
        }
        rep.record_raw("allocation failure (child process)", input, R, expected, &st, &msg);
    }
    // The environment knob: VH5_MAX_CHUNK_BYTES=1048576 in the child: the 512 MiB chunk is
    // read piece by piece through libhdf5 under the same limit.
    let (st, msg) = run_child("nomem:r:chunks:128", &nomem, &[("VH5_MAX_CHUNK_BYTES", "1048576")]);
    if st != "VH5_OK" || !msg.contains("1.5") {
        rep.failures.push(format!("[nomem] env VH5_MAX_CHUNK_BYTES: {st}: {msg}"));
    }
    rep.record_raw("allocation failure (child process)", "same 512 MiB chunk (chunks) with env VH5_MAX_CHUNK_BYTES=1048576", R, "VH5_OK", &st, &msg);
    let _ = f64s;
}

fn write_zeros_gzip(path: &std::path::Path, name: &str, dims: &[u64]) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fopen(CString::new(path.to_str().unwrap()).unwrap().as_ptr(), H5F_ACC_RDWR, H5P_DEFAULT);
        assert!(f >= 0);
        let space = H5Screate_simple(2, dims.as_ptr(), std::ptr::null());
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        assert!(H5Pset_chunk(dcpl, 2, dims.as_ptr()) >= 0);
        assert!(H5Pset_deflate(dcpl, 1) >= 0);
        let d = H5Dcreate2(f, CString::new(name).unwrap().as_ptr(), *H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        assert!(d >= 0);
        let zeros = vec![0u8; (dims[0] * dims[1] * 8) as usize];
        assert!(H5Dwrite(d, *H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.as_ptr() as *const _) >= 0);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(space);
        assert!(H5Fclose(f) >= 0);
    }
}
