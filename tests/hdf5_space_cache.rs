//! The per-dataset dataspace cache of `vh5_read_many_slices` (src/hdf5/meta.rs): dataspaces
//! are kept across calls only while the dataset's extent cannot change (file opened
//! read-only); they are forgotten on `vh5_close`; ids opened again (or two ids of one
//! dataset) never see another id's extent; a read-write file's dataset that grows between
//! calls is read with its new extent.

mod common;
use std::ffi::CString;

use common::*;
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::vh5_status::*;

fn r(s: &[u64], d: &[u64], c: &[u64]) -> TRow {
    TRow { s: s.to_vec(), d: d.to_vec(), c: c.to_vec(), ss: vec![1; s.len()], ds: vec![1; s.len()] }
}
fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}
fn as_i32(b: &[u8]) -> Vec<i32> {
    b.chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// `a`: int32 (6, 5) = 10*i + j, chunks (2, 2); `b`: int32 (40,) = 1000 + i, contiguous.
fn two_datasets(tmp: &TempDir) -> std::path::PathBuf {
    let p = tmp.path("spaces.h5");
    let a = i32s(&(0..6).flat_map(|i| (0..5).map(move |j| 10 * i + j)).collect::<Vec<_>>());
    let b = i32s(&(0..40).map(|i| 1000 + i).collect::<Vec<_>>());
    let mut sa = DsSpec::new("a", &[6, 5], Dtype::Int32, Some(&a));
    sa.chunk = Some(vec![2, 2]);
    create_file(&p, &[sa, DsSpec::new("b", &[40], Dtype::Int32, Some(&b))]);
    p
}

/// Read rows of `a` (into a (6, 5) int32 array) and check them against 10*i + j.
fn check_a(d: i64, rows: &[TRow]) {
    let mut buf = vec![0u8; 6 * 5 * 4];
    let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[6, 5], None, rows, 0, false);
    assert_eq!(st, VH5_OK, "{m}");
    let got = as_i32(&buf);
    let mut want = vec![0i32; 30];
    for t in rows {
        for i in 0..t.c[0] {
            for j in 0..t.c[1] {
                want[((t.d[0] + i) * 5 + t.d[1] + j) as usize] = (10 * (t.s[0] + i) + t.s[1] + j) as i32;
            }
        }
    }
    assert_eq!(got, want);
}

#[test]
fn cached_spaces_follow_row_counts_and_reopen() {
    let tmp = TempDir::new("spaces");
    let p = two_datasets(&tmp);
    let (f, d) = ffi_open(&p, "a");
    // Calls with different counts reuse (and re-extend) the cached memory dataspace.
    for _ in 0..3 {
        check_a(d, &[r(&[1, 1], &[0, 0], &[2, 3])]);
        check_a(d, &[r(&[0, 0], &[0, 0], &[6, 5])]);
        check_a(d, &[r(&[5, 4], &[2, 2], &[1, 1])]);
        check_a(d, &[r(&[0, 0], &[0, 0], &[1, 1]), r(&[2, 1], &[3, 0], &[3, 4])]);
    }
    // A second id of the same dataset, used in between, has its own cache entry.
    let mut d2 = -1;
    assert_eq!(unsafe { vh5_dataset_open(f, CString::new("a").unwrap().as_ptr(), &mut d2) }, VH5_OK);
    assert_ne!(d, d2);
    check_a(d2, &[r(&[3, 2], &[0, 0], &[2, 3])]);
    check_a(d, &[r(&[1, 0], &[1, 1], &[4, 4])]);
    ffi_close(&[d]);
    check_a(d2, &[r(&[0, 0], &[0, 0], &[6, 5])]);
    // The closed id is refused, not served from a stale cache entry.
    let mut buf = vec![0u8; 120];
    let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[6, 5], None, &[r(&[0, 0], &[0, 0], &[1, 1])], 0, false);
    assert_eq!(st, VH5_ERR_INVALID_HANDLE, "{m}");
    ffi_close(&[d2, f]);
}

#[test]
fn new_ids_never_see_another_datasets_extent() {
    // Open, read and close `a` and `b` alternately many times: every id (new or, should
    // libhdf5 ever hand one out again, reused) reads with its own dataset's extent and type.
    let tmp = TempDir::new("spaces");
    let p = two_datasets(&tmp);
    let mut seen = std::collections::HashSet::new();
    for k in 0..50 {
        let (f, d) = ffi_open(&p, if k % 2 == 0 { "a" } else { "b" });
        seen.insert(d);
        if k % 2 == 0 {
            check_a(d, &[r(&[4, 3], &[0, 0], &[2, 2])]);
            // (6, 5): row 6 is outside.
            let mut buf = vec![0u8; 120];
            let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[6, 5], None, &[r(&[6, 0], &[0, 0], &[1, 1])], 0, false);
            assert_eq!(st, VH5_ERR_OUT_OF_BOUNDS, "{m}");
        } else {
            let mut buf = vec![0u8; 16];
            let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[4], None, &[r(&[36], &[0], &[4])], 0, false);
            assert_eq!(st, VH5_OK, "{m}");
            assert_eq!(as_i32(&buf), vec![1036, 1037, 1038, 1039]);
            // 1-D dataset: a 2-column table is refused (the cached 2-D extent of `a` is not used).
            let mut buf = vec![0u8; 120];
            let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[6, 5], None, &[r(&[0, 0], &[0, 0], &[1, 1])], 0, false);
            assert_eq!(st, VH5_ERR_INVALID_ARGUMENT, "{m}");
        }
        ffi_close(&[d, f]);
    }
    assert_eq!(seen.len(), 50, "libhdf5 handed out an id twice");
}

#[test]
fn read_write_file_reads_the_current_extent() {
    // An extendible dataset in a file vh5 opens read-write: grown with H5Dset_extent on the
    // vh5 id between two calls, the second call sees the new rows (no cached extent).
    let tmp = TempDir::new("spaces");
    let p = tmp.path("grow.h5");
    let cp = CString::new(p.to_str().unwrap()).unwrap();
    {
        let _s = vh5::hdf5::session();
        unsafe {
            let f = H5Fcreate(cp.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
            let dims = [4u64];
            let maxd = [H5S_UNLIMITED];
            let space = H5Screate_simple(1, dims.as_ptr(), maxd.as_ptr());
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            let ch = [2u64];
            H5Pset_chunk(dcpl, 1, ch.as_ptr());
            let fill = -7i32;
            H5Pset_fill_value(dcpl, *H5T_NATIVE_INT, &fill as *const i32 as *const _);
            let d = H5Dcreate2(f, c"x".as_ptr(), *H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            assert!(d >= 0);
            let v = [1i32, 2, 3, 4];
            assert!(H5Dwrite(d, *H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.as_ptr() as *const _) >= 0);
            H5Dclose(d);
            H5Pclose(dcpl);
            H5Sclose(space);
            assert!(H5Fclose(f) >= 0);
        }
    }
    let (mut f, mut d) = (-1, -1);
    assert_eq!(unsafe { vh5_file_open(cp.as_ptr(), VH5_FILE_READ_WRITE, &mut f) }, VH5_OK, "{}", last_error());
    assert_eq!(unsafe { vh5_dataset_open(f, c"x".as_ptr(), &mut d) }, VH5_OK, "{}", last_error());
    let mut buf = vec![0u8; 24];
    let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[6], None, &[r(&[0], &[0], &[4])], 0, false);
    assert_eq!(st, VH5_OK, "{m}");
    let (st, _) = ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[6], None, &[r(&[4], &[4], &[2])], 0, false);
    assert_eq!(st, VH5_ERR_OUT_OF_BOUNDS);
    {
        let _s = vh5::hdf5::session();
        let dims = [6u64];
        assert!(unsafe { H5Dset_extent(d, dims.as_ptr()) } >= 0);
    }
    let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[6], None, &[r(&[4], &[4], &[2])], 0, false);
    assert_eq!(st, VH5_OK, "{m}");
    assert_eq!(as_i32(&buf), vec![1, 2, 3, 4, -7, -7]);
    ffi_close(&[d, f]);
}
