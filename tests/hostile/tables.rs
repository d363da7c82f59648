//! Hostile slice tables and arguments: NULL pointers, overflowing counts, out-of-bounds rows
//! (with and without clipping), overlapping destination strides, short buffers, unknown flag
//! bits, dtype mismatches, closed handles, writes to read-only files — through all three
//! transfer entry points.

use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::slices_write::*;
use vh5::ffi::vh5_status::{self, *};

use super::files::{c_close, c_dopen, c_open, c_read, row, x_value, X_SHAPE};
use super::{f64s, Guarded, Report};
use crate::common::{last_error, tables, TRow, TempDir};

fn arr(g: &mut Guarded, dtype: Dtype, itemsize: usize, shape: &[u64], strides: Option<&[i64]>) -> vh5_array {
    vh5_array {
        base: g.ptr() as *mut _,
        base_len: g.len,
        offset: 0,
        dtype: dtype.code(),
        itemsize,
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

pub fn run(rep: &mut Report, tmp: &TempDir) {
    let sample = tmp.path("sample.h5");
    let (_, _, f) = c_open(&sample, 0);
    let (_, _, d) = c_dopen(f, "x");
    const C: &str = "slice table";
    const R: &str = "vh5_read_many_slices";
    let shape = [4u64, 5];
    let good = [row(&[0, 0], &[0, 0], &[2, 5]), row(&[38, 25], &[2, 0], &[2, 5])];

    // NULL pointers.
    {
        let t = tables(&good);
        let st = unsafe { vh5_read_many_slices(d, std::ptr::null(), 2, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.check(C, "dst = NULL", R, VH5_ERR_NULL_ARGUMENT, (st, last_error()), &["`dst`"]);
        let mut g = Guarded::new(160, 0x11);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, None);
        let st = unsafe { vh5_read_many_slices(d, &a, 2, std::ptr::null(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.check(C, "src_start = NULL with nslices 2", R, VH5_ERR_NULL_ARGUMENT, (st, last_error()), &["`src_start`"]);
        rep.ensure(g.untouched(), || "NULL src_start: destination written".into());
        let a2 = vh5_array { base: std::ptr::null_mut(), base_len: 160, ..a };
        let st = unsafe { vh5_read_many_slices(d, &a2, 2, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.check(C, "dst.base = NULL with base_len 160", R, VH5_ERR_NULL_ARGUMENT, (st, last_error()), &["dst.base"]);
    }
    // Counts that overflow.
    {
        let mut g = Guarded::new(160, 0x11);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, None);
        let t = tables(&good);
        let st = unsafe { vh5_read_many_slices(d, &a, usize::MAX, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.check(C, "nslices = SIZE_MAX (nslices x ndim overflows)", R, VH5_ERR_INVALID_ARGUMENT, (st, last_error()), &["nslices", "overflows"]);
        rep.ensure(g.untouched(), || "nslices overflow: destination written".into());
    }
    // Out of bounds, clip off / on.
    {
        let rows = [good[0].clone(), row(&[39, 25], &[2, 0], &[2, 5])];
        let mut g = Guarded::new(160, 0x11);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, None);
        let got = read_raw(d, &a, &rows, 0);
        rep.check(C, "row 1 reaches past the dataset on axis 0 (39 + 2 > 40)", R, VH5_ERR_OUT_OF_BOUNDS, got, &["row 1", "axis 0"]);
        rep.ensure(g.untouched(), || "OOB: destination written (row 0 is valid but validation comes first)".into());
        let got = read_raw(d, &a, &rows, VH5_SLICES_CLIP);
        rep.check(C, "same rows with VH5_SLICES_CLIP (row 1 clipped to 1 x 5)", R, VH5_OK, got, &[]);
        let v = f64s(g.body());
        let mut want: Vec<f64> = (0..2).flat_map(|i| (0..5).map(move |j| x_value(i, j))).collect();
        want.extend((0..5).map(|j| x_value(39, 25 + j)));
        rep.ensure(v[..15] == want[..] && g.body()[120..].iter().all(|&b| b == 0x11) && g.guards_intact(), || format!("clip: wrong data {v:?}"));
    }
    // Overlapping destination strides, short buffer, unknown flags, dtype / itemsize, step 0, ndim.
    {
        let mut g = Guarded::new(160, 0x11);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, Some(&[0, 8]));
        rep.check(C, "dst strides (0, 8): two indices share bytes", R, VH5_ERR_INVALID_ARGUMENT, read_raw(d, &a, &good, 0), &["stride"]);
        let mut g = Guarded::new(159, 0x11);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, None);
        rep.check(C, "dst base_len 159 for a 4 x 5 float64 array (160 bytes)", R, VH5_ERR_BUFFER_TOO_SMALL, read_raw(d, &a, &good, 0), &["159"]);
        rep.ensure(g.untouched(), || "short buffer: written".into());
        let mut g = Guarded::new(160, 0x11);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, Some(&[-40, 8]));
        rep.check(C, "negative stride with offset 0 (reaches before base)", R, VH5_ERR_BUFFER_TOO_SMALL, read_raw(d, &a, &good, 0), &[]);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, None);
        rep.check(C, "flags = 0x80 (unknown bit)", R, VH5_ERR_INVALID_ARGUMENT, read_raw(d, &a, &good, 0x80), &["0x80"]);
        let a = arr(&mut g, Dtype::Int64, 8, &shape, None);
        rep.check(C, "dst dtype int64, dataset float64, no CONVERT", R, VH5_ERR_DTYPE, read_raw(d, &a, &good, 0), &["float64", "int64"]);
        let a = vh5_array { dtype: 99, ..arr(&mut g, Dtype::Float64, 8, &shape, None) };
        rep.check(C, "dst dtype code 99", R, VH5_ERR_DTYPE, read_raw(d, &a, &good, 0), &["99"]);
        let a = arr(&mut g, Dtype::Float64, 4, &[4, 10], None);
        rep.check(C, "dst itemsize 4 for float64", R, VH5_ERR_INVALID_ARGUMENT, read_raw(d, &a, &good, 0), &["itemsize"]);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, None);
        let mut r0 = good.clone();
        r0[1].ss = vec![1, 0];
        rep.check(C, "src_step 0 on row 1 axis 1", R, VH5_ERR_INVALID_ARGUMENT, read_raw(d, &a, &r0, 0), &["row 1", "axis 1"]);
        let a = arr(&mut g, Dtype::Float64, 8, &[20], None);
        let r1 = [TRow { s: vec![0], d: vec![0], c: vec![5], ss: vec![1], ds: vec![1] }];
        rep.check(C, "1-d destination for the 2-d dataset", R, VH5_ERR_INVALID_ARGUMENT, read_raw(d, &a, &r1, 0), &["2 axes"]);
        let a = arr(&mut g, Dtype::Float64, 8, &[1; 33], None);
        rep.check(C, "dst.ndim 33 (> VH5_MAX_RANK)", R, VH5_ERR_UNSUPPORTED, read_raw(d, &a, &[], 0), &["33"]);
        rep.ensure(g.untouched(), || "argument errors: destination written".into());
    }
    // Handles.
    {
        let mut g = Guarded::new(160, 0x11);
        let a = arr(&mut g, Dtype::Float64, 8, &shape, None);
        rep.replace.push((f.to_string(), "<file id>".into()));
        rep.check(C, "dataset id of an open FILE", R, VH5_ERR_INVALID_HANDLE, read_raw(f, &a, &good, 0), &[&f.to_string()]);
        let (_, _, d2) = c_dopen(f, "x");
        c_close(d2);
        rep.replace.push((d2.to_string(), "<closed id>".into()));
        rep.check(C, "closed dataset id", R, VH5_ERR_INVALID_HANDLE, read_raw(d2, &a, &good, 0), &[&d2.to_string()]);
        rep.check(C, "never-opened id 0x7ead_beef", R, VH5_ERR_INVALID_HANDLE, read_raw(0x7ead_beef, &a, &good, 0), &["2125315823"]);
        rep.check(C, "vh5_close of a closed id", "vh5_close", VH5_ERR_INVALID_HANDLE, (vh5_close(d2), last_error()), &[&d2.to_string()]);
        let mut dd = 0i64;
        let st = unsafe { vh5_dataset_open(f, c"no/such/var".as_ptr(), &mut dd) };
        rep.check(C, "dataset path no/such/var", "vh5_dataset_open", VH5_ERR_NOT_FOUND, (st, last_error()), &["no"]);
        rep.ensure(dd == -1, || "dataset_open failure: id not -1".into());
        let mut ff = 0i64;
        let st = unsafe { vh5_file_open(tmp.path("sample.h5").to_str().map(|s| std::ffi::CString::new(s).unwrap()).unwrap().as_ptr(), 12, &mut ff) };
        rep.check(C, "vh5_file_open flags 12 (unknown bits)", "vh5_file_open", VH5_ERR_INVALID_ARGUMENT, (st, last_error()), &["0xc"]);
        let st = unsafe { vh5_dataset_get_info(d, std::ptr::null_mut()) };
        rep.check(C, "vh5_dataset_get_info out = NULL", "vh5_dataset_get_info", VH5_ERR_NULL_ARGUMENT, (st, last_error()), &["`out`"]);
        rep.ensure(g.untouched(), || "handle errors: destination written".into());
    }
    // Writes: read-only file, out-of-bounds rows (nothing written).
    {
        const W: &str = "vh5_write_many_slices";
        let mut src = Guarded::new(160, 0x11);
        let s = arr(&mut src, Dtype::Float64, 8, &shape, None);
        let wrows = [row(&[0, 0], &[5, 5], &[2, 5])];
        let t = tables(&wrows);
        let st = unsafe { vh5_write_many_slices(d, &s, 1, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.replace.push((d.to_string(), "<dataset id>".into()));
        rep.check(C, "write to a dataset of a read-only file", W, VH5_ERR_INVALID_ARGUMENT, (st, last_error()), &["VH5_FILE_READ_WRITE"]);
        let rw = tmp.path("rw.h5");
        std::fs::copy(&sample, &rw).unwrap();
        let (_, _, fw) = c_open(&rw, VH5_FILE_READ_WRITE);
        let (_, _, dw) = c_dopen(fw, "x");
        let bad = [wrows[0].clone(), row(&[0, 0], &[39, 0], &[2, 5])];
        let t = tables(&bad);
        let st = unsafe { vh5_write_many_slices(dw, &s, 2, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.check(C, "write: row 1 reaches past the dataset on axis 0", W, VH5_ERR_OUT_OF_BOUNDS, (st, last_error()), &["row 1", "axis 0"]);
        let mut g = Guarded::new(2 * 5 * 8, 0);
        let (st, m) = c_read(dw, &mut g, Dtype::Float64, &[2, 5], &[row(&[5, 5], &[0, 0], &[2, 5])], 0);
        rep.ensure(st == VH5_OK && f64s(g.body())[0] == x_value(5, 5), || format!("failed write changed the dataset: {st:?} {m}"));
        c_close(dw);
        c_close(fw);
    }
    // In-memory copies.
    {
        const M: &str = "vh5_copy_many_slices";
        let mut src = Guarded::new(160, 0x22);
        let mut dst = Guarded::new(160, 0x11);
        let s = arr(&mut src, Dtype::Float64, 8, &shape, None);
        let dd = arr(&mut dst, Dtype::Float64, 8, &shape, None);
        let rows = [row(&[0, 0], &[0, 0], &[2, 2]), row(&[3, 4], &[3, 3], &[1, 2])];
        let t = tables(&rows);
        let st = unsafe { vh5_copy_many_slices(&s, &dd, 2, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.check(C, "copy: row 1 reaches past the source on axis 1 (4 + 2 > 5)", M, VH5_ERR_OUT_OF_BOUNDS, (st, last_error()), &["row 1", "axis 1"]);
        rep.ensure(dst.untouched(), || "copy OOB: destination written".into());
        let dz = arr(&mut dst, Dtype::Float64, 8, &shape, Some(&[8, 8]));
        let st = unsafe { vh5_copy_many_slices(&s, &dz, 1, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.check(C, "copy: destination strides (8, 8) overlap", M, VH5_ERR_INVALID_ARGUMENT, (st, last_error()), &["dst"]);
        let di = arr(&mut dst, Dtype::Int64, 8, &shape, None);
        let st = unsafe { vh5_copy_many_slices(&s, &di, 1, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        rep.check(C, "copy: float64 source, int64 destination", M, VH5_ERR_DTYPE, (st, last_error()), &["int64"]);
        rep.ensure(dst.untouched() && src.untouched(), || "copy errors: buffers written".into());
    }
    c_close(d);
    c_close(f);
    let _ = X_SHAPE;
}
