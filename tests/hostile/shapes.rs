//! Shapes and offsets at the limits: datasets with dims near 2^62 (unlimited max dims) and
//! with axes whose element product overflows uint64 (sparse: unallocated chunks read as the
//! fill value), rows whose last element overflows uint64, destination arrays whose
//! shape x strides overflow, table values near UINT64_MAX.

use std::ffi::CString;
use std::path::Path;

use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::vh5_status::{self, *};
use vh5::transfer::options::PlannerMode;

use super::files::{c_close, c_dopen, c_open, read_x, row, X_SHAPE};
use super::{f64s, Guarded, Report};
use crate::common::{last_error, tables, TRow, TempDir};

/// Create `name` (float64) with the given dims / max dims / chunk and fill value, written
/// nowhere (or, with `gzip`, compressed) — every chunk unallocated.
#[allow(clippy::too_many_arguments)]
pub fn make_sparse(path: &Path, name: &str, dims: &[u64], maxdims: &[u64], chunk: &[u64], fill: f64, gzip: bool, mtype_u8: bool) -> Result<(), String> {
    let s = vh5::hdf5::session();
    unsafe {
        let c = CString::new(path.to_str().unwrap()).unwrap();
        let f = if path.exists() { H5Fopen(c.as_ptr(), H5F_ACC_RDWR, H5P_DEFAULT) } else { H5Fcreate(c.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT) };
        assert!(f >= 0);
        let space = H5Screate_simple(dims.len() as i32, dims.as_ptr(), maxdims.as_ptr());
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        let t = if mtype_u8 { *H5T_NATIVE_UCHAR } else { *H5T_NATIVE_DOUBLE };
        let mut r = Ok(());
        if space < 0 || H5Pset_chunk(dcpl, chunk.len() as i32, chunk.as_ptr()) < 0 {
            r = Err(format!("libhdf5 refused dims {dims:?} chunk {chunk:?}: {}", vh5::hdf5::error::take_stack(s.lock())));
        } else {
            if gzip {
                H5Pset_deflate(dcpl, 1);
            }
            let fv_u8 = fill as u8;
            let fv: *const std::ffi::c_void = if mtype_u8 { &fv_u8 as *const u8 as *const _ } else { &fill as *const f64 as *const _ };
            assert!(H5Pset_fill_value(dcpl, t, fv) >= 0);
            let d = H5Dcreate2(f, CString::new(name).unwrap().as_ptr(), t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            if d < 0 {
                r = Err(format!("libhdf5 refused to create {dims:?}: {}", vh5::hdf5::error::take_stack(s.lock())));
            } else {
                H5Dclose(d);
            }
        }
        if space >= 0 {
            H5Sclose(space);
        }
        H5Pclose(dcpl);
        assert!(H5Fclose(f) >= 0);
        r
    }
}

fn arr(g: &mut Guarded, shape: &[u64], strides: Option<&[i64]>, offset: usize) -> vh5_array {
    vh5_array {
        base: g.ptr() as *mut _,
        base_len: g.len,
        offset,
        dtype: Dtype::Float64.code(),
        itemsize: 8,
        ndim: shape.len() as u32,
        shape: shape.as_ptr(),
        strides: strides.map_or(std::ptr::null(), |s| s.as_ptr()),
    }
}

fn read_raw(d: i64, a: &vh5_array, rows: &[TRow], flags: u32) -> (vh5_status, String) {
    let t = tables(rows);
    let st = unsafe { vh5_read_many_slices(d, a, rows.len(), t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), t[3].as_ptr(), t[4].as_ptr(), flags) };
    (st, last_error())
}

const MODES: [(PlannerMode, &str); 3] = [(PlannerMode::Chunks, "chunks"), (PlannerMode::Rows, "rows"), (PlannerMode::Auto, "auto")];

pub fn run(rep: &mut Report, tmp: &TempDir) {
    const C: &str = "shape / offsets";
    const R: &str = "vh5_read_many_slices";
    let big = tmp.path("huge.h5");
    let e62 = 1u64 << 62;
    make_sparse(&big, "long", &[e62], &[u64::MAX], &[1 << 16], -3.5, true, false).unwrap();
    let e33 = 1u64 << 33;
    let made = make_sparse(&big, "wide", &[e33, e33, 4], &[u64::MAX, u64::MAX, 4], &[1024, 1024, 4], 2.25, false, false);
    rep.ensure(made.is_ok(), || format!("wide: {made:?}"));

    for (mode, mname) in MODES {
        let r = [TRow { s: vec![e62 - 3], d: vec![0], c: vec![3], ss: vec![1], ds: vec![1] }, TRow { s: vec![e62 / 3], d: vec![3], c: vec![2], ss: vec![1 << 40], ds: vec![1] }];
        let (st, m, g) = read_x(&big, "long", &r, &[5], Some(mode), 2, 0, Dtype::Float64);
        rep.check(C, format!("1-d dims 2^62 (max unlimited), gzip, unallocated: last 3 elements + a step of 2^40; {mname}"), R, VH5_OK, (st, m), &[]);
        rep.ensure(f64s(g.body()) == vec![-3.5; 5] && g.guards_intact(), || format!("long {mname}: {:?}", f64s(g.body())));
    }
    for (mode, mname) in MODES {
        let r = [TRow { s: vec![e33 - 2, e33 - 2, 0], d: vec![0, 0, 0], c: vec![2, 2, 4], ss: vec![1; 3], ds: vec![1; 3] }];
        let (st, m, g) = read_x(&big, "wide", &r, &[2, 2, 4], Some(mode), 2, 0, Dtype::Float64);
        rep.check(C, format!("dims (2^33, 2^33, 4): 2^68 elements overflow uint64; far corner; {mname}"), R, VH5_OK, (st, m), &[]);
        rep.ensure(f64s(g.body()) == vec![2.25; 16] && g.guards_intact(), || format!("wide {mname}: {:?}", f64s(g.body())));
    }
    {
        let (_, _, f) = c_open(&big, 0);
        let (_, _, d) = c_dopen(f, "wide");
        let mut info: vh5_dataset_info = unsafe { std::mem::zeroed() };
        let st = unsafe { vh5_dataset_get_info(d, &mut info) };
        rep.check(C, "dims (2^33, 2^33, 4): describe", "vh5_dataset_get_info", VH5_OK, (st, last_error()), &[]);
        rep.ensure(info.shape[..3] == [e33, e33, 4] && info.maxshape[0] == u64::MAX && info.chunk[..3] == [1024, 1024, 4], || format!("wide info {:?}", &info.shape[..3]));
        c_close(d);
        c_close(f);
    }

    let sample = tmp.path("sample.h5");
    let (_, _, f) = c_open(&sample, 0);
    let (_, _, d) = c_dopen(f, "x");
    let shape = [2u64, 5];
    // Row overflow: start + (count-1)*step.
    {
        let mut g = Guarded::new(80, 0x11);
        let a = arr(&mut g, &shape, None, 0);
        let r = [row(&[0, 0], &[0, 0], &[1, 5]), TRow { s: vec![5, 0], d: vec![1, 0], c: vec![2, 5], ss: vec![u64::MAX, 1], ds: vec![1, 1] }];
        rep.check(C, "row 1 axis 0: start 5 + (2-1) x step 2^64-1 overflows", R, VH5_ERR_OUT_OF_BOUNDS, read_raw(d, &a, &r, 0), &["row 1", "axis 0"]);
        rep.ensure(g.untouched(), || "step overflow: written".into());
        let (st, m) = read_raw(d, &a, &r, VH5_SLICES_CLIP);
        rep.check(C, "same row with VH5_SLICES_CLIP (clipped to count 1)", R, VH5_OK, (st, m), &[]);
        rep.ensure(f64s(g.body())[5] == super::files::x_value(5, 0), || "clip overflow row: wrong data".into());
        let mut g = Guarded::new(80, 0x11);
        let a = arr(&mut g, &shape, None, 0);
        for (what, r) in [
            ("src_start = 2^64-1", row(&[u64::MAX, 0], &[0, 0], &[1, 1])),
            ("count = 2^64-1", row(&[0, 0], &[0, 0], &[u64::MAX, 1])),
            ("dst_start = 2^64-1", row(&[0, 0], &[0, u64::MAX], &[1, 1])),
            ("dst_step = 2^64-1, count 2", TRow { s: vec![0, 0], d: vec![0, 0], c: vec![1, 2], ss: vec![1, 1], ds: vec![1, u64::MAX] }),
        ] {
            rep.check(C, format!("table value near UINT64_MAX: {what}"), R, VH5_ERR_OUT_OF_BOUNDS, read_raw(d, &a, &[r], 0), &["row 0"]);
        }
        rep.ensure(g.untouched(), || "u64::MAX rows: written".into());
    }
    // Destination arrays whose shape x strides overflow.
    {
        let mut g = Guarded::new(80, 0x11);
        let r = [row(&[0, 0], &[0, 0], &[1, 1])];
        let a = arr(&mut g, &[u64::MAX, 2], None, 0);
        rep.check(C, "dst shape (2^64-1, 2), C strides: shape x itemsize overflows", R, VH5_ERR_INVALID_ARGUMENT, read_raw(d, &a, &r, 0), &["overflows"]);
        let a = arr(&mut g, &[1 << 61, 2], Some(&[i64::MAX / 2, 8]), 0);
        rep.check(C, "dst shape (2^61, 2), strides (2^62-1, 8): extent overflows isize", R, VH5_ERR_BUFFER_TOO_SMALL, read_raw(d, &a, &r, 0), &[]);
        let a = arr(&mut g, &[3, 2], Some(&[i64::MIN, 8]), 0);
        rep.check(C, "dst strides (INT64_MIN, 8)", R, VH5_ERR_BUFFER_TOO_SMALL, read_raw(d, &a, &r, 0), &[]);
        let a = arr(&mut g, &[2, 5], None, usize::MAX - 8);
        rep.check(C, "dst offset SIZE_MAX-8", R, VH5_ERR_BUFFER_TOO_SMALL, read_raw(d, &a, &r, 0), &[]);
        rep.ensure(g.untouched(), || "overflowing dst layouts: written".into());
    }
    c_close(d);
    c_close(f);
    let _ = X_SHAPE;
}
